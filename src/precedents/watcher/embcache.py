"""A bounded cache of passage vectors by chunk text, for re-indexing a growing log.

A conversation log is re-read whole when it changes (see docs/watcher.md): its
file row and chunk rows are rewritten exactly as ``reindex`` would write them.
Without this cache every append would re-embed every chunk of the session;
with it only chunks whose text is new are embedded. The cached vector is the
one the same model gave for the same text, so the rows are the same as a
whole re-read's.

It is also where the watcher's embedding becomes background work (issue #28:
5,000 team notes in one pull keep it embedding for minutes): the model loads,
and every batch is embedded, at a lower CPU priority, and the memory a batch
freed goes back to the system before the next (:mod:`precedents.ingest.background`).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from precedents.ingest.background import lower_priority, release_memory
from precedents.models.embedding import Embedder, Vectors

DEFAULT_ENTRIES = 4096  # 6 MB of 384-d vectors, 16 MB at 1024-d


def in_background(load: Callable[[], Embedder]) -> Callable[[], Embedder]:
    """``load``, run in a thread of its own at background priority when called: the
    model a new store needs at once (its dimension) must not be loaded by the caller's
    thread, which keeps its priority, nor leave its compute threads at normal priority."""

    def run() -> Embedder:
        out: list[Embedder | BaseException] = []

        def target() -> None:
            lower_priority()
            try:
                out.append(load())
            except BaseException as exc:  # handed to the caller, raised there
                out.append(exc)

        thread = threading.Thread(target=target, name="model-load")
        thread.start()
        thread.join()
        if isinstance(out[0], BaseException):
            raise out[0]
        return out[0]

    return run


def background_model(load: Callable[[], Embedder]) -> CachedEmbedder:
    """The watcher's model, loaded at background priority: ONNX Runtime creates its
    compute threads while it loads, and they inherit the loading thread's."""
    lower_priority()
    return CachedEmbedder(load())


class CachedEmbedder:
    """Wraps a loaded model; ``encode_passages`` embeds only texts it has not seen lately."""

    def __init__(self, inner: Embedder, max_entries: int = DEFAULT_ENTRIES) -> None:
        """``inner`` does the real work; the newest ``max_entries`` vectors are kept."""
        self.inner = inner
        self.model_id = inner.model_id
        self.dimension = inner.dimension
        self.device = inner.device
        self.load_seconds = inner.load_seconds
        self.max_entries = max_entries
        self._cache: OrderedDict[bytes, Vectors] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def encode_queries(self, texts: Sequence[str]) -> Vectors:
        """Queries are not cached (the watcher never embeds any)."""
        return self.inner.encode_queries(texts)

    def encode_passages(self, texts: Sequence[str]) -> Vectors:
        """Vectors for ``texts``, from the cache where possible, in order.

        The calling thread (the watcher's worker, which computes alongside the
        model's threads) runs at background priority from its first batch on, and
        what the previous batch freed (its texts, tokens, Arrow buffers) is handed
        back to the system first."""
        lower_priority()
        release_memory()
        keys = [hashlib.blake2b(t.encode("utf-8"), digest_size=16).digest() for t in texts]
        missing: dict[bytes, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in self._cache and key not in missing:
                missing[key] = text
        fresh: dict[bytes, Vectors] = {}
        if missing:
            vectors = self.inner.encode_passages(list(missing.values()))
            fresh = {k: vectors[i] for i, k in enumerate(missing)}
        self.misses += len(missing)
        self.hits += len(keys) - len(missing)
        rows: list[Vectors] = []
        for key in keys:
            vec = fresh.get(key)
            if vec is None:
                vec = self._cache[key]
                self._cache.move_to_end(key)
            rows.append(vec)
        for key, vec in fresh.items():
            self._cache[key] = vec
        while len(self._cache) > self.max_entries:
            self._cache.popitem(last=False)
        if not rows:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack(rows).astype(np.float32, copy=False)
