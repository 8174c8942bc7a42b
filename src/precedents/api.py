"""The library calls behind the CLI commands: one function per command.

Each takes resolved :class:`Settings` and returns data; the CLI only parses
options, calls one of these and prints.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precedents.config import Settings
from precedents.embedding import (
    Embedder,
    canonical_model_id,
    load_embedder,
    pick_device,
    setup_model,
)
from precedents.errors import ModelMismatch, StoreError
from precedents.indexer import Indexer, IndexReport, Progress
from precedents.query_daemon.marks import AdrMarks
from precedents.sources import Problem, configured_sources, project_keys, project_root, walk
from precedents.store import DocumentHit, Store

log = logging.getLogger("precedents.api")


def open_store(
    settings: Settings, embedder: Embedder, *, reader: bool = False, rebuild: bool = False
) -> Store:
    """Open the store for ``embedder``'s vectors; ``rebuild`` drops it first.

    A store built with another model is rebuilt from scratch (never mixed).
    """
    if rebuild:
        Store.drop(settings.index_dir)
    try:
        return Store(settings.index_dir, embedder.model_id, embedder.dimension, reader=reader)
    except ModelMismatch as exc:
        log.warning("%s: rebuilding", exc)
        Store.drop(settings.index_dir)
        return Store(settings.index_dir, embedder.model_id, embedder.dimension, reader=reader)


class LazyStore:
    """Open the store without loading the model when its model/dimension are recorded."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._embedder: Embedder | None = None
        self.rebuilt = ""

    @property
    def loaded(self) -> Embedder | None:
        """The model if it was needed (and so loaded), else None."""
        return self._embedder

    def embedder(self) -> Embedder:
        """The model, loaded once."""
        if self._embedder is None:
            self._embedder = load_embedder(self.settings.model, self.settings.device)
        return self._embedder

    def open(self, rebuild: bool = False) -> Store:
        """The store, opened with the recorded dimension when the model matches.

        A damaged store is dropped and rebuilt (it is derived data); ``rebuilt``
        then says why.
        """
        self.rebuilt = ""
        try:
            stored = None if rebuild else Store.stored_model(self.settings.index_dir)
        except StoreError as exc:
            self.rebuilt, stored, rebuild = str(exc), None, True
        if stored and stored[0] == canonical_model_id(self.settings.model) and stored[1] > 0:
            try:
                store = Store(self.settings.index_dir, stored[0], stored[1])
                store.check()
                return store
            except StoreError as exc:
                self.rebuilt = str(exc)
                rebuild = True
        try:
            store = open_store(self.settings, self.embedder(), rebuild=rebuild)
            store.check()
            return store
        except StoreError as exc:
            self.rebuilt = str(exc)
            return open_store(self.settings, self.embedder(), rebuild=True)


def reindex(
    settings: Settings,
    *,
    full: bool = False,
    notes: Sequence[Path] = (),
    rules: Sequence[Path] = (),
    adrs: Sequence[Path] = (),
    conversations: Sequence[Path] = (),
    project: str | None = None,
    progress: Progress | None = None,
) -> IndexReport:
    """Bring the store in line with the sources; ``full`` re-embeds everything."""
    sources = configured_sources(
        settings,
        notes=notes,
        rules=rules,
        adrs=adrs,
        conversations=conversations,
        project=project,
    )
    lazy = LazyStore(settings)
    store = lazy.open(rebuild=full)
    indexer = Indexer(settings, store, lazy.embedder)
    report = indexer.sync(walk(sources), progress)
    if lazy.rebuilt:
        log.warning("%s: rebuilt", lazy.rebuilt)
        report.problems.insert(0, Problem(str(settings.index_dir), "index was damaged: rebuilt"))
    if lazy.loaded is not None:  # recorded with the store, shown by `status`
        store.stamp(model_load_seconds=f"{lazy.loaded.load_seconds:.2f}", device=lazy.loaded.device)
    return report


@dataclass(frozen=True)
class QueryResult:
    """Ranked documents for one query."""

    project: str
    results: list[DocumentHit]
    seconds: float
    marks: dict[str, str]  # ADR path -> its mark from the ADR graph ('' when live)

    def to_json(self) -> dict[str, Any]:
        """The ``precedents query --json`` shape (ADRs also carry their ``mark``)."""
        out = []
        for hit in self.results:
            row = hit.to_json()
            if hit.record.kind == "adr":
                row["mark"] = self.marks.get(hit.record.path, "")
            out.append(row)
        return {"project": self.project, "results": out}


def query(
    settings: Settings,
    text: str,
    *,
    project: str | None = None,
    k: int = 5,
    kinds: Sequence[str] | None = None,
    embedder: Embedder | None = None,
    all_projects: bool = False,
) -> QueryResult:
    """Documents of a project (and shared rules), or of every project, ranked for ``text``."""
    started = time.perf_counter()
    root = "*all*" if all_projects else project_root(project or Path.cwd())
    lazy = LazyStore(settings)
    model = embedder or lazy.embedder()
    store = Store(settings.index_dir, model.model_id, model.dimension, create=False)
    vector = model.encode_queries([text])[0]
    hits = store.search(vector, None if all_projects else project_keys(root), k=k, kinds=kinds)
    adr_marks = AdrMarks(settings.cache_dir / "adr")
    marks = {h.record.path: adr_marks.mark_for(h.record) for h in hits if h.record.kind == "adr"}
    return QueryResult(root, hits, time.perf_counter() - started, marks)


def auto_context(settings: Settings, text: str, *, project: str | None = None) -> str | None:
    """Exactly what the hook would inject for ``text`` (the daemon's code, in-process)."""
    from precedents.query_daemon.recall import auto_context as recall_auto_context

    return recall_auto_context(settings, text, project)


def status(settings: Settings) -> dict[str, Any]:
    """What is indexed, by kind and project, with the model, device and store size."""
    stored = Store.stored_model(settings.index_dir)
    info: dict[str, Any] = {
        "state_dir": str(settings.home),
        "index_dir": str(settings.index_dir),
        "model": settings.model,
        "device": pick_device(settings.device),
        "indexed_model": stored[0] if stored else None,
        "dimension": stored[1] if stored else None,
        "sources": [
            {"kind": s.kind, "root": str(s.root), "project": s.project}
            for s in configured_sources(settings)
        ],
        "kinds": {},
        "projects": {},
        "documents": 0,
        "chunks": 0,
        "store_bytes": 0,
        "last_indexed": None,
    }
    if stored is None:
        return info
    store = Store(settings.index_dir, stored[0], stored[1], create=False)
    for (kind, proj), c in sorted(store.counts().items()):
        for key, bucket in (("kinds", kind), ("projects", proj)):
            entry = info[key].setdefault(bucket, {"documents": 0, "chunks": 0})
            entry["documents"] += c["documents"]
            entry["chunks"] += c["chunks"]
        info["documents"] += c["documents"]
        info["chunks"] += c["chunks"]
    info["store_bytes"] = store.size_bytes()
    meta = store.meta()
    info["model_load_seconds"] = (
        float(meta["model_load_seconds"]) if "model_load_seconds" in meta else None
    )
    last = meta.get("last_indexed")
    info["last_indexed"] = (
        time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(float(last))) if last else None
    )
    return info


def setup(settings: Settings, model: str | None = None) -> dict[str, Any]:
    """Download (if needed) and load ``model``: the only call that may use the network."""
    name = model or settings.model
    where = setup_model(name)
    embedder = load_embedder(name, settings.device)
    return {
        "model": embedder.model_id,
        "path": where,
        "dimension": embedder.dimension,
        "device": embedder.device,
        "load_seconds": round(embedder.load_seconds, 2),
    }


def evaluate(
    settings: Settings,
    shared: Path,
    *,
    tune: bool = False,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Score retrieval and selection on the shared eval sets at the model's thresholds;
    with ``tune``, also search the threshold grid and report the best setting."""
    from dataclasses import asdict

    from precedents import evaluation

    run = evaluation.prepare(settings, shared, progress)
    current = settings.thresholds_for(canonical_model_id(settings.model))
    out: dict[str, Any] = {
        "model": settings.model,
        "thresholds": asdict(current),
        "scores": evaluation.score(run, current),
    }
    if tune:
        best, scores = evaluation.tune(run)
        out["tuned"] = {"thresholds": asdict(best), "scores": scores}
    return out
