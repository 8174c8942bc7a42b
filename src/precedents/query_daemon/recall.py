"""One question in, the hook's context out: embed, rank, select, format.

:class:`Recall` is the code path the daemon serves and that
``precedents query --auto`` runs in-process (:func:`auto_context`), so the two
can never disagree. It holds the model, a reader view of the store, an
in-memory copy of the vectors (refreshed when the chunk table's version
changes) and the ADR marks.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from precedents.config import Settings
from precedents.embedding import Embedder, Vectors, load_embedder
from precedents.errors import StoreError
from precedents.query_daemon.format import LineParts, fit_lines, format_context, line_parts
from precedents.query_daemon.marks import AdrMarks
from precedents.query_daemon.protocol import EVENT_SESSION
from precedents.query_daemon.selection import Selection, select
from precedents.query_daemon.vectors import EMPTY, VectorSnapshot
from precedents.sources import project_keys, project_root
from precedents.store import DocumentHit, DocumentRecord, Store

log = logging.getLogger("precedents.daemon")

MIN_PROMPT_CHARS = 8
SESSION_CAP_BYTES = 2048
SESSION_MAX_ADRS = 40
SESSION_HEADER = (
    "Live ADRs of this repository (current decisions only; read the file before relying on one)"
)


@dataclass
class Answer:
    """What one question produced, with the facts the log records (never the text)."""

    context: str | None
    selection: Selection | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    skipped: str = ""  # why nothing was searched ("short", "no-index")

    def log_fields(self) -> dict[str, Any]:
        """Ids, bytes, scores and timings: what the log may hold about an answer."""
        sel = self.selection
        return {
            "ids": [h.record.adr_id or h.record.path for h in sel.chosen] if sel else [],
            "bytes": len(self.context.encode("utf-8")) if self.context else 0,
            "reason": self.skipped or (sel.reason if sel else ""),
            "top": round(sel.top, 4) if sel else None,
            "gap": round(sel.gap, 4) if sel else None,
            "ms": {k: round(v, 1) for k, v in self.timings_ms.items()},
        }


class _Batcher:
    """Serialize embedding calls, encoding whatever queued up meanwhile as one batch.

    The model is not safe to call from many threads at once, and on a small
    CPU one batch of ten short texts costs far less than ten calls in a row.
    """

    def __init__(self, encode: Callable[[Sequence[str]], Vectors]) -> None:
        self._encode = encode
        self._queue: queue.Queue[tuple[str, Future[Any]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="embed", daemon=True)
        self._thread.start()

    def encode(self, text: str) -> Any:
        """The vector of ``text`` (blocks until its batch is done)."""
        fut: Future[Any] = Future()
        self._queue.put((text, fut))
        return fut.result()

    def close(self) -> None:
        """Stop the worker thread."""
        self._queue.put(None)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            batch = [item]
            while True:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._queue.put(None)
                    break
                batch.append(nxt)
            try:
                vectors = self._encode([t for t, _ in batch])
            except Exception as exc:  # handed to every waiting caller
                for _, fut in batch:
                    fut.set_exception(exc)
                continue
            for (_, fut), vec in zip(batch, vectors, strict=True):
                fut.set_result(vec)


def _daemon_threads(embedder: Embedder) -> None:
    """One torch thread for CPU queries in the daemon.

    Measured on the 2-core dev box with other work running (docs/daemon.md):
    a one-query encode took 26/32 ms (p50/p95) on one thread against 42/820 ms
    on two, because spinning OpenMP workers fight whatever else uses the CPU
    (the agent's own builds and tests). A hook's p95 matters more than its p50.
    ``PRECEDENTS_TORCH_THREADS`` overrides.
    """
    if getattr(embedder, "device", "cpu") != "cpu":
        return
    try:
        import torch
    except ImportError:
        return
    try:
        threads = int(os.environ.get("PRECEDENTS_TORCH_THREADS", "1"))
    except ValueError:
        threads = 1
    torch.set_num_threads(max(threads, 1))


def _table_version(store: Store) -> Any:
    # The store exposes no version yet; the chunk table's is what changes when
    # anything searchable changes. With reader=True it reflects other processes.
    version = getattr(store, "version", None)
    if callable(version):
        return version()
    return store._chunks.version


class Recall:
    """The model, the store and the vectors in memory: answers questions."""

    def __init__(
        self,
        settings: Settings,
        embedder: Embedder | None = None,
        *,
        batch: bool = False,
    ) -> None:
        self.settings = settings
        self.embedder = embedder or load_embedder(settings.model, settings.device)
        self.thresholds = settings.thresholds_for(self.embedder.model_id)
        self.marks = AdrMarks(settings.cache_dir / "adr")
        self._store: Store | None = None
        self._snapshot: VectorSnapshot = EMPTY
        self._refresh_lock = threading.Lock()
        self._encode_lock = threading.Lock()
        self._batcher: _Batcher | None = None
        if batch:
            _daemon_threads(self.embedder)
            self._batcher = _Batcher(self.embedder.encode_queries)
            # The first calls of a fresh model are several times slower (allocator,
            # kernel selection): pay for them now, not on the user's first message.
            for _ in range(3):
                self.embedder.encode_queries(["warm up the model before the first question"])
        self.refresh()

    # -- the store ---------------------------------------------------------------

    def _open_store(self) -> Store | None:
        if self._store is None:
            try:
                self._store = Store(
                    self.settings.index_dir,
                    self.embedder.model_id,
                    self.embedder.dimension,
                    reader=True,
                    create=False,
                )
            except StoreError as exc:
                log.debug("no usable index yet: %s", exc)
                return None
        return self._store

    def refresh(self) -> bool:
        """Reload the vectors if the store changed since the last load; True when it did."""
        with self._refresh_lock:
            store = self._open_store()
            if store is None:
                return False
            try:
                version = _table_version(store)
                if version == self._snapshot.version:
                    return False
                started = time.perf_counter()
                projects = sorted({proj for (_, proj) in store.counts()})
                meta, matrix = store.all_vectors(projects) if projects else ([], None)
            except (OSError, ValueError, RuntimeError, StoreError) as exc:
                # A compaction may have removed the version we held: look again next time.
                log.warning("reloading the index failed (%s); retrying", exc)
                try:
                    store.refresh()
                except Exception:  # the next refresh tries again from scratch
                    self._store = None
                return False
            if matrix is None:
                matrix = np.zeros((0, self.embedder.dimension), dtype=np.float32)
            self._snapshot = VectorSnapshot(version=version, meta=meta, matrix=matrix)
            self.marks.invalidate()
            log.info(
                "index version %s loaded: %d chunks in %.0f ms",
                version,
                len(meta),
                (time.perf_counter() - started) * 1000,
            )
            return True

    @property
    def snapshot(self) -> VectorSnapshot:
        """The vectors currently in memory."""
        return self._snapshot

    # -- questions ---------------------------------------------------------------

    def embed(self, text: str) -> Any:
        """The query vector of ``text`` (serialized; batched in the daemon)."""
        if self._batcher is not None:
            return self._batcher.encode(text)
        with self._encode_lock:
            return self.embedder.encode_queries([text])[0]

    def rank(
        self, text: str, project: str, kinds: Sequence[str] | None = None
    ) -> list[DocumentHit]:
        """Documents of ``project``'s root (and shared rules) ranked for ``text``."""
        root = project_root(project)
        return self._snapshot.rank(self.embed(text), project_keys(root), kinds)

    def context(self, text: str, cwd: str) -> Answer:
        """What the hook injects for a prompt ``text`` typed in ``cwd``."""
        started = time.perf_counter()
        if len(text.strip()) < MIN_PROMPT_CHARS:
            return Answer(None, skipped="short")
        snapshot = self._snapshot
        if not snapshot.rows:
            return Answer(None, skipped="no-index")
        root = project_root(cwd)
        vector = self.embed(text)
        embedded = time.perf_counter()
        hits = snapshot.rank(vector, project_keys(root))
        ranked = time.perf_counter()
        selection = select(hits, self.thresholds, root)
        text_out = format_context(selection, self.marks.mark_for)
        done = time.perf_counter()
        return Answer(
            text_out,
            selection,
            {
                "embed": (embedded - started) * 1000,
                "search": (ranked - embedded) * 1000,
                "format": (done - ranked) * 1000,
                "total": (done - started) * 1000,
            },
        )

    def session_context(self, cwd: str) -> str | None:
        """The SessionStart text: the repository's live ADRs, ids and titles only, capped."""
        root = project_root(cwd)
        seen: dict[str, dict[str, Any]] = {}
        for m in self._snapshot.meta:
            if m["kind"] == "adr" and m["project"] == root:
                seen.setdefault(m["path"], m)
        live = []
        for _path, m in sorted(seen.items(), key=lambda kv: (kv[1]["adr_id"] or "", kv[0])):
            record = _record(m)
            if self.marks.mark_for(record) == "":
                live.append(record)
        if not live:
            return None
        parts = [line_parts(r) for r in live[:SESSION_MAX_ADRS]]
        # Titles only: the SessionStart list drops the "adr  " kind prefix and the path.
        parts = [LineParts(p.head.removeprefix("adr  "), p.joiner, p.middle, "") for p in parts]
        return fit_lines(parts, SESSION_CAP_BYTES, EVENT_SESSION, header=SESSION_HEADER)

    def close(self) -> None:
        """Stop the embedding worker."""
        if self._batcher is not None:
            self._batcher.close()


def _record(m: dict[str, Any]) -> DocumentRecord:
    return DocumentRecord(
        kind=m["kind"],
        project=m["project"],
        path=m["path"],
        name=m["name"] or "",
        description=m["description"] or "",
        date=m["date"] or "",
        adr_id=m["adr_id"] or "",
    )


def auto_context(
    settings: Settings,
    text: str,
    project: str | Path | None = None,
    embedder: Embedder | None = None,
) -> str | None:
    """Exactly what the hook would inject for ``text`` in ``project``, computed in-process.

    The same :class:`Recall` path the daemon serves; for ``precedents query --auto``.
    """
    recall = Recall(settings, embedder)
    try:
        return recall.context(text, str(project or Path.cwd())).context
    finally:
        recall.close()
