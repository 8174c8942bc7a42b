"""The library calls behind the CLI commands: one function per command.

Each takes resolved :class:`Settings` and returns data; the CLI only parses
options, calls one of these and prints.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from precedents import protocol, runlock
from precedents.config import Settings
from precedents.errors import PrecedentsError, disk_full, is_disk_full
from precedents.ingest.progress import read_progress
from precedents.ingest.sources import Problem, Sources, configured_sources, project_root, walk
from precedents.secrets.names import shown_path
from precedents.secrets.withheld import read_withheld

if TYPE_CHECKING:
    from precedents.ingest.indexer import IndexReport
    from precedents.ingest.progress import Progress
    from precedents.models.embedding import Embedder
    from precedents.store import Store

# The model, LanceDB, pyarrow and numpy are imported inside the calls that need
# them: `status` (from the saved summary, store/health.py) and `query` with a
# daemon running answer without any of them (issue #21: 0.24 s each, loaded).

log = logging.getLogger("precedents.api")

# A warm daemon answers in tens of milliseconds; past this, rank in-process.
DAEMON_QUERY_S = 5.0


def reindex(
    settings: Settings,
    *,
    full: bool = False,
    sources: Sources | None = None,
    progress: Progress | None = None,
    on_wait: Callable[[int | None], None] | None = None,
) -> IndexReport:
    """Bring the store in line with the sources (or only the folders in ``sources``).

    ``full`` re-embeds everything into a new store built beside the current
    one, switched in only when complete: an interrupted rebuild leaves the old
    index serving. Another writer (a `reindex`, the watcher) is waited for;
    ``on_wait`` is told once, with its pid.
    """
    from precedents.ingest.indexer import Indexer, lazy_store
    from precedents.store import beside, switch_in

    found = configured_sources(settings, sources)
    writer = runlock.WriterLock(settings.run_dir, on_wait)
    with writer.held():
        target = beside(settings.index_dir, "rebuild") if full else settings.index_dir
        lazy = lazy_store(settings, target)
        store = lazy.open(rebuild=full)
        report = Indexer(settings, store, lazy.model, writer).sync(walk(found), progress)
        if lazy.rebuilt:
            log.warning("%s: rebuilt", lazy.rebuilt)
            report.problems.insert(0, Problem(str(target), "index was damaged: rebuilt"))
        if lazy.loaded is not None:  # recorded with the store, shown by `status`
            store.stamp(
                model_load_seconds=f"{lazy.loaded.load_seconds:.2f}", device=lazy.loaded.device
            )
        _save_summary(settings, store)  # the next `status` answers without reading it
        if full:
            switch_in(settings.index_dir, target)
    return report


def _save_summary(settings: Settings, store: Store) -> None:
    """Record what the store holds now, under the writer lock (nothing moves meanwhile).

    Stamped with the store's own folder: a rebuild's files keep their names,
    sizes and mtimes when the folder is switched in. A failure costs `status`
    one read of the store, nothing else.
    """
    from precedents.store.health import save, tree_stamp
    from precedents.store.summary import summarize

    found = tree_stamp(store.path)
    if found is None:
        return
    try:
        summary = summarize(store)
    except (PrecedentsError, OSError) as exc:
        log.info("the store's summary was not saved: %s", exc)
        return
    save(settings.index_dir, settings.cache_dir, found[0], summary)


def query(
    settings: Settings,
    text: str,
    *,
    project: str | None = None,
    k: int = 5,
    all_projects: bool = False,
    embedder: Embedder | None = None,
) -> dict[str, Any]:
    """Documents of a project (and shared rules), or of every project, ranked for ``text``:
    ``{"project", "results": [...], "via"}`` (``precedents query --json``).

    Asked of the running daemon when there is one (its model is warm: a
    question costs milliseconds, not a model load), else ranked in-process;
    either way by :class:`Recall`, the code the hook's daemon runs, so
    `query` and the hook order the same question the same way.
    """
    _check_query(text)
    target = None if all_projects else project_root(project or Path.cwd())
    if embedder is None:
        answer = _ask_daemon(settings, text, target, k)
        if answer is not None:
            return answer
    # Before the model loads (seconds): a store that cannot be read is one line and
    # exit 1, not "no records found" (issue #21). Free while the folder is unchanged.
    from precedents.store.health import verify

    verify(settings.index_dir, settings.cache_dir)
    from precedents.recall import Recall

    recall = Recall(settings, embedder)
    try:
        if recall.store_problem is not None:
            raise recall.store_problem
        return {**recall.query(text, target, k), "via": "in-process"}
    finally:
        recall.close()


def _check_query(text: str) -> None:
    """Refuse a question with nothing to embed: a blank text still has a vector, and
    every record is "nearest" to it (the MCP `recall` tool refuses it the same way)."""
    from precedents.errors import UsageError

    if not protocol.clip_prompt(text).strip():
        raise UsageError("query is empty")


def _ask_daemon(
    settings: Settings, text: str, project: str | None, k: int
) -> dict[str, Any] | None:
    """The daemon's answer to a query, or None when none runs or it is not ready yet."""
    request = {"op": "query", "text": text, "project": project, "k": k}
    try:
        answer = protocol.ask(request, DAEMON_QUERY_S, str(settings.run_dir))
    except protocol.Unavailable:
        return None
    if not answer.get("ok") or not isinstance(answer.get("results"), list):
        return None  # starting, or an older daemon that does not know `query`
    return {"project": answer.get("project"), "results": answer["results"], "via": "daemon"}


def auto_context(settings: Settings, text: str, *, project: str | None = None) -> str | None:
    """Exactly what the hook would inject for ``text`` (the daemon's code, in-process)."""
    from precedents.recall import auto_context as recall_auto_context

    _check_query(text)
    return recall_auto_context(settings, text, project)


def status(settings: Settings) -> dict[str, Any]:
    """What is indexed, by kind and project, with the model, device and store size."""
    info: dict[str, Any] = {
        "state_dir": str(settings.home),
        "index_dir": str(settings.index_dir),
        "model": settings.model,
        # Not probed here: finding out would import torch (about a second) for
        # a command that should answer at once. The device the model last ran
        # on is recorded with the store (below); else the setting.
        "device": settings.device,
        "indexed_model": None,
        "dimension": None,
        "sources": [
            {"kind": s.kind, "root": shown_path(s.root), "project": s.project}
            for s in configured_sources(settings)
        ],
        # Files left out for a secret in their path (masked), as the last pass found them.
        "withheld_paths": read_withheld(settings.cache_dir),
        "kinds": {},
        "projects": {},
        "documents": 0,
        "chunks": 0,
        "store_bytes": 0,
        "last_indexed": None,
        "indexing": read_progress(settings.run_dir),
    }
    # From the summary saved when the store was last read whole (by the daemon's
    # export, a `reindex` or an earlier `status`) while the folder is unchanged;
    # else read with `lance` now. A store that cannot be read is a StoreError:
    # one line naming the fix, exit 1 (issue #21). No daemon, no model, no LanceDB.
    from precedents.store.health import summary as store_summary

    found, via = store_summary(settings.index_dir, settings.cache_dir)
    if found is None:
        return info
    return {**info, **found, "via": via}


def setup(settings: Settings, model: str | None = None) -> dict[str, Any]:
    """Download (if needed) and load ``model``: the only call that may use the network."""
    name = model or settings.model
    from precedents.models.embedding import load_embedder, setup_model

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
    sets: Sequence[Path],
    *,
    tune: bool = False,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Score retrieval and selection on eval ``sets`` (docs/eval.md) at the model's
    thresholds; with ``tune``, also search the threshold grid and report the best."""
    from precedents.evaluation import core as evaluation
    from precedents.models.embedding import canonical_model_id

    run = evaluation.prepare(settings, sets, progress)
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


def why(settings: Settings, project: str | None = None, n: int = 5) -> list[dict[str, Any]]:
    """The last ``n`` hook answers of ``project`` (default: this folder's), from the daemon's
    log: decision, scores and the records shown; never the message text."""
    from precedents.query_daemon.history import recent_answers

    return recent_answers(settings.log_dir, project_root(project or Path.cwd()), n)


def mute(settings: Settings, path: Path, *, undo: bool = False) -> dict[str, Any]:
    """Never inject the record at ``path`` again (``undo``: inject it again); a path
    that names no file is a :class:`UsageError` (recall/mute.py says what is taken)."""
    from precedents.recall.mute import MuteList

    muted = MuteList(settings.home)
    muted.check(path, undo=undo)  # a path that names no file is refused, not listed
    target, changed = muted.unmute(path) if undo else muted.mute(path)
    return {"path": target, "muted": not undo, "changed": changed}


def remember(
    settings: Settings, text: str, *, title: str | None = None, project: str | None = None
) -> dict[str, Any]:
    """Save ``text`` as a memory note of ``project`` (default: this folder's) and make it
    searchable: by the running watcher, or indexed here and now when none runs."""
    from precedents.ingest.remember import memory_folder, write_note

    root = project_root(project or Path.cwd())
    folder = memory_folder(settings.claude_dir, root)
    path = write_note(folder, text, title)
    try:
        return _index_remembered(settings, path, folder, root)
    except (OSError, PrecedentsError) as exc:
        if not is_disk_full(exc):
            raise
        then = f"{path} is saved but not searchable yet; free some space, then `precedents reindex`"
        raise disk_full(exc, settings.home, then) from None


def _index_remembered(settings: Settings, path: Path, folder: Path, root: str) -> dict[str, Any]:
    from precedents.ingest.sources import resolve_claude_project
    from precedents.watcher import ROLE as WATCHER

    watcher = runlock.Claim(settings.run_dir, WATCHER)
    if not watcher.acquire():  # a watcher holds it: the save is its job
        return {"path": str(path), "project": root, "indexed_by": "watcher"}
    watcher.release()
    key = resolve_claude_project(folder.parent)
    request = {"op": "index", "path": str(path), "project": key}
    try:  # the daemon's model is warm: searchable at once
        if protocol.ask(request, DAEMON_QUERY_S, str(settings.run_dir)).get("ok"):
            return {"path": str(path), "project": root, "indexed_by": "daemon"}
    except protocol.Unavailable:
        pass
    from precedents.ingest.indexer import index_note, lazy_store

    lazy = lazy_store(settings)
    index_note(settings, lazy.model(), path, key)
    return {"path": str(path), "project": root, "indexed_by": "remember"}
