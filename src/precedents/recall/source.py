"""Where :class:`~precedents.recall.core.Recall` gets its vectors: one protocol, two sources.

Short-lived callers (eval, `query` without a daemon, `query --auto`, MCP) read
the store in their own process: :class:`StoreVectors`. The daemon runs for
hours and must not keep LanceDB resident, so it reads what a child process
exported: :class:`~precedents.recall.exported.ExportedVectors`. Recall embeds,
ranks, selects and formats the same way over either and never asks which one
it holds, so the two paths cannot order a question differently.

A source is opened in two steps (:data:`Opener`): chosen from the settings
before the model loads — the daemon's first export reads the store meanwhile —
then given the model, whose identity the store's vectors must match.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from precedents.config import Settings
from precedents.errors import StoreError
from precedents.recall.vectors import VectorSnapshot

if TYPE_CHECKING:
    from precedents.store import Store

log = logging.getLogger("precedents.daemon")


class Model(NamedTuple):
    """The model questions are embedded with: the store must hold its vectors."""

    id: str
    dimension: int


class VectorSource(Protocol):
    """What :class:`~precedents.recall.core.Recall` needs of its vectors.

    Recall serializes :meth:`refresh` calls; :meth:`summary` may come from another
    thread at any time (the daemon's `status`) and must not wait for a refresh.
    """

    @property
    def problem(self) -> StoreError | None:
        """Why no usable index could be read at the last try (None when one was)."""

    def refresh(self, *, now: bool = False) -> VectorSnapshot | None:
        """The store's vectors when they changed since the last snapshot this returned
        (the first call: whenever there are any), else None. ``now``: read the store at
        once, in this process — the daemon wrote to it itself (`remember`)."""

    def summary(self) -> dict[str, Any] | None:
        """What the store holds (`precedents status`); None while there is no usable index."""

    def close(self) -> None:
        """Stop whatever runs in the background."""


# A source's constructor waiting for the model (see the module's docstring).
Opener = Callable[[Model], VectorSource]


def open_reader(index_dir: Path, model: Model) -> Store:
    """A reader view of the store at ``index_dir`` holding ``model``'s vectors; a
    :class:`StoreError` when there is none usable (no index yet, another model)."""
    from precedents.store import Store  # deferred: the daemon imports LanceDB only to write

    return Store(index_dir, model.id, model.dimension, reader=True, create=False)


class StoreVectors:
    """The store read in this process, LanceDB and all: for callers that exit soon."""

    def __init__(self, index_dir: Path, model: Model) -> None:
        self._index_dir = index_dir
        self._model = model
        self._store: Store | None = None
        self._version: Any = None  # of the last snapshot returned
        self.problem: StoreError | None = None
        # refresh() may replace the store while summary() (another thread) reads it.
        self._lock = threading.Lock()

    @classmethod
    def opener(cls, settings: Settings) -> Callable[[Model], StoreVectors]:
        """The source of ``settings``'s store, once the model is known."""
        return lambda model: cls(settings.index_dir, model)

    def _open(self) -> Store | None:
        """The reader view (the caller holds the lock); None while there is no usable index."""
        if self._store is None:
            try:
                self._store = open_reader(self._index_dir, self._model)
            except StoreError as exc:
                log.debug("no usable index yet: %s", exc)
                self.problem = exc
                return None
        self.problem = None
        return self._store

    def refresh(self, *, now: bool = False) -> VectorSnapshot | None:
        """The store's vectors when its chunk table's version changed (``now`` changes
        nothing: this source always reads the store in this process)."""
        with self._lock:
            store = self._open()
            if store is None:
                return None
            try:
                # The chunk table's version changes whenever anything searchable
                # changes; with reader=True it reflects other processes' commits.
                version = store.version()
                if version == self._version:
                    return None
                started = time.perf_counter()
                snapshot = VectorSnapshot.load(store)
            except (OSError, ValueError, RuntimeError, StoreError) as exc:
                # A compaction may have removed the version we held: look again next time.
                log.warning("reloading the index failed (%s); retrying", exc)
                try:
                    store.refresh()
                except Exception:  # the next refresh tries again from scratch
                    self._store = None
                return None
            self._version = version
        log.info(
            "index version %s loaded: %d chunks in %.0f ms",
            version,
            snapshot.rows,
            (time.perf_counter() - started) * 1000,
        )
        return snapshot

    def summary(self) -> dict[str, Any] | None:
        """What the store holds now, read from it."""
        from precedents.store.summary import summarize

        with self._lock:
            store = self._open()
        return summarize(store) if store is not None else None

    def close(self) -> None:
        """Nothing runs in the background; the reader view goes with this object."""
