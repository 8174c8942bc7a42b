"""The watcher's store side: what it does to the store, in its own process or in a child.

The watcher (:mod:`precedents.watcher.core`) decides *what* to index: it watches
folders, debounces events and cuts a pull into groups. This module *does* it:
index or drop a group of paths, store a burst's heads, reconcile folders, read
new commits. :class:`InlineSide` does it in the watcher's own process, with the
store and model it was given (tests, `Watcher(store=..., embedder=...)`);
:class:`precedents.watcher.child.ChildSide` does the same in a child process
(started by the watcher), so that the long-lived watcher holds
neither the model nor LanceDB's write path (issue #28: a 5,000-note pull grew the
watcher from 470 to 980 MiB, and it kept that memory for the rest of the day).

Every job gets the sources as they are now (the watcher re-discovers them) and
answers an :class:`Outcome`: the counts the watcher keeps (:class:`WatchStats`).
Problems are logged here, once per file and reason, by whichever process met them.
"""

from __future__ import annotations

import logging
import os
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from precedents import runlock
from precedents.adr_graph import build_graph
from precedents.config import Settings
from precedents.errors import PrecedentsError
from precedents.ingest.indexer import Indexer, IndexReport, lazy_store
from precedents.ingest.removal import produced_by
from precedents.ingest.sources import SourceDir, SourceFile, history_repos, walk
from precedents.models.embedding import Embedder
from precedents.secrets.mask import mask_secrets
from precedents.secrets.names import shown_path
from precedents.store import FileRecord, LazyStore, Store
from precedents.watcher.batches import heads_first
from precedents.watcher.batches import listing as _listing
from precedents.watcher.embcache import background_model, in_background
from precedents.watcher.watches import route, within

log = logging.getLogger("precedents.watcher")


class Interrupted(Exception):
    """A job was cut off because the watcher is stopping (raised by its stop callback)."""


@dataclass
class Outcome:
    """What one job did: the watcher adds it to its :class:`WatchStats`."""

    batches: int = 0
    headed: int = 0
    files_indexed: int = 0
    files_removed: int = 0
    chunks_embedded: int = 0
    failures: int = 0
    reconciles: int = 0
    all_failed: bool = False  # every file of an applied group failed (each logged)

    def count(self, report: IndexReport) -> None:
        """Add an indexing pass's counts."""
        self.files_indexed += report.files_indexed
        self.files_removed += report.files_deleted
        self.chunks_embedded += report.chunks_embedded


class Side(Protocol):
    """The store side's jobs (:class:`InlineSide`, or its child process)."""

    def reconcile(self, sources: Sequence[SourceDir], walked: Sequence[SourceDir]) -> Outcome: ...

    def heads(self, sources: Sequence[SourceDir], paths: list[str], arriving: bool) -> Outcome: ...

    def apply(self, sources: Sequence[SourceDir], paths: list[str]) -> Outcome: ...

    def read_commits(self, sources: Sequence[SourceDir], only: Sequence[str] | None) -> Outcome: ...

    def drop_under(self, root: str) -> Outcome: ...

    def files_under(self, sources: Sequence[SourceDir], folder: str) -> list[str]: ...

    def preload(self) -> None: ...

    def idle(self) -> None: ...

    def close(self, timeout_s: float) -> None: ...


def open_side(
    settings: Settings,
    stop: Callable[[], None],
    store: Store | None = None,
    embedder: Embedder | None = None,
) -> InlineSide:
    """The store side over ``store`` and ``embedder``, or over the configured store (opened
    here, under the writer lock: opening may create or rebuild it) and model (loaded
    when first needed, at background priority)."""
    writer = runlock.WriterLock(settings.run_dir)
    if store is None:
        # A new store needs the model now: it loads at background priority too.
        inner = lazy_store(settings)
        lazy = LazyStore(inner.index_dir, inner.model_id, in_background(inner.model))
        with writer.held():
            store = lazy.open()
        load: Callable[[], Embedder] = lazy.model
    else:
        if embedder is None:
            raise ValueError("a store was given without its embedder")
        given = embedder
        load = lambda: given  # noqa: E731
    indexer = Indexer(settings, store, lambda: background_model(load), writer)
    return InlineSide(settings, store, indexer, stop)


class InlineSide:
    """The store side in this process: an :class:`Indexer` over a store and its model."""

    def __init__(
        self, settings: Settings, store: Store, indexer: Indexer, stop: Callable[[], None]
    ) -> None:
        """``stop`` is called between batches; it raises :class:`Interrupted` to stop."""
        self.settings = settings
        self.store = store
        self.indexer = indexer
        self._stop = stop
        self._reported: dict[str, str] = {}
        self._git_problems: set[tuple[str, str]] = set()

    def _check(self, *_: int) -> None:
        self._stop()

    # -- jobs --------------------------------------------------------------------

    def reconcile(self, sources: Sequence[SourceDir], walked: Sequence[SourceDir]) -> Outcome:
        """Index what changed in ``walked`` while nobody watched; drop deleted files' rows."""
        del sources  # the walk is of ``walked`` alone
        report = self.indexer.sync(walk(walked), progress=self._check)
        out = Outcome(reconciles=1)
        out.count(report)
        log.info(
            "reconciled %d folder(s): %d file(s) seen, %d indexed, %d removed, "
            "%d chunk(s) embedded in %.2f s",
            len(walked),
            report.files_seen,
            report.files_indexed,
            report.files_deleted,
            report.chunks_embedded,
            report.seconds,
        )
        self._log_problems(report)
        return out

    def heads(self, sources: Sequence[SourceDir], paths: list[str], arriving: bool) -> Outcome:
        """Store the heads of a burst's new or changed documents (ingest/heads.py)."""

        def routed(path: str) -> SourceFile | None:
            return route(sources, path)

        return Outcome(headed=heads_first(self.indexer, routed, paths, self._stop, arriving))

    def apply(self, sources: Sequence[SourceDir], paths: list[str]) -> Outcome:
        """Apply one group of paths; a failing group is retried file by file."""
        out = Outcome()
        try:
            self._apply(sources, paths, out)
        except Interrupted:
            raise
        except Exception as exc:
            if len(paths) == 1:
                self._failed(paths[0], exc, out)
                out.all_failed = True
                return out
            # One bad file must not cost the others their update: isolate it.
            log.warning("a batch of %d files failed; retrying them one by one", len(paths))
            failed = 0
            for path in paths:
                try:
                    self._apply(sources, [path], out)
                except Interrupted:
                    raise
                except Exception as one:
                    self._failed(path, one, out)
                    failed += 1
            out.all_failed = failed == len(paths)
        return out

    def read_commits(self, sources: Sequence[SourceDir], only: Sequence[str] | None) -> Outcome:
        """New commits of every git project, or of ``only`` (``known..HEAD``: one git call
        when none)."""
        repos = history_repos(sources)
        if only is not None:
            repos = [r for r in repos if r in only]
        out = Outcome()
        if not repos:
            return out
        report = self.indexer.sync_commits(repos)
        out.count(report)
        if report.commits_indexed or report.files_deleted:
            log.info(
                "commits: %d new record(s), %d removed",
                report.commits_indexed,
                report.files_deleted,
            )
        # A repository's problems stand until fixed: each is logged once, not every rescan.
        for problem in report.problems:
            if (problem.path, problem.reason) not in self._git_problems:
                self._git_problems.add((problem.path, problem.reason))
                log.warning("%s: %s", problem.path, problem.reason)
        return out

    def drop_under(self, root: str) -> Outcome:
        """Drop the rows of every file under ``root`` (a source folder that vanished)."""
        with self.indexer.writing():
            gone = [p for p, f in self.store.files().items() if _file(f) and within(p, root)]
            removed = self.indexer.remove_paths(gone) if gone else 0
        if gone:
            log.info("removed %d file(s) of vanished folder %s", removed, shown_path(root))
        return Outcome(files_removed=removed)

    def files_under(self, sources: Sequence[SourceDir], folder: str) -> list[str]:
        """Every file under ``folder``: stored ones (to drop) and present ones (to index)."""
        found = {p for p, f in self.store.files().items() if _file(f) and within(p, folder)}
        if any(within(folder, str(s.root)) and s.linked_out() for s in sources):
            return sorted(found)  # `docs/adr -> /`: never listed (its old rows go, issue #28)
        for top, dirnames, filenames in os.walk(folder):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            found.update(os.path.join(top, f) for f in filenames)
        return sorted(found)

    def preload(self) -> None:
        """Load the model now (in the background: the first saved note must not wait)."""
        try:
            _ = self.indexer.embedder
        except Exception as exc:  # the first file to index reports it again, in context
            log.warning("loading the model failed: %s", exc)

    def idle(self) -> None:
        """Nothing to give back in-process (the child side exits when idle)."""

    def close(self, timeout_s: float) -> None:
        """Nothing to stop in-process (the watcher joins its own threads)."""

    # -- applying a group --------------------------------------------------------

    def _apply(self, sources: Sequence[SourceDir], paths: Sequence[str], out: Outcome) -> None:
        """Index the paths that exist and belong to a source; drop the rows of the rest."""
        with self.indexer.writing():  # one writer at a time, and a fresh view of the store
            self._apply_held(sources, paths, out)

    def _apply_held(self, sources: Sequence[SourceDir], paths: Sequence[str], out: Outcome) -> None:
        started = time.perf_counter()
        known = self.store.files()
        to_index: list[SourceFile] = []
        to_remove: list[str] = []
        for path in paths:
            src = route(sources, path)
            if src is not None and os.path.isfile(path):
                to_index.append(src)
            elif path in known and _gone(sources, path, known[path]):
                to_remove.append(path)
        report = IndexReport()
        if to_index:
            self.indexer.index_files(to_index, report, self._check, known)
        # Index first, remove second: a moved note is never missing for a reader.
        removed = self.indexer.remove_paths(to_remove) if to_remove else 0
        report.files_deleted += removed
        self._refresh_adr_graphs(known, to_remove)
        self.store.maybe_compact()
        out.batches += 1
        out.count(report)
        if report.files_indexed or report.files_deleted:
            log.info(
                "indexed %d file(s) (%d unchanged, %d chunk(s) embedded) and removed %d "
                "in %.2f s%s%s",
                report.files_indexed,
                report.files_unchanged,
                report.chunks_embedded,
                report.files_deleted,
                time.perf_counter() - started,
                _listing("; checked", [str(s.path) for s in to_index]),
                _listing("; removed", to_remove),
            )
        self._log_problems(report, paths)

    def _refresh_adr_graphs(self, known: dict[str, Any], removed: Sequence[str]) -> None:
        """Rebuild the cached graph of folders that lost an ADR (indexing one rebuilds it)."""
        folders = {Path(p).parent for p in removed if getattr(known.get(p), "kind", "") == "adr"}
        for folder in folders:
            if folder.is_dir():
                try:
                    build_graph(folder, self.settings.cache_dir / "adr", mask_secrets)
                except Exception as exc:  # the daemon rebuilds it on demand anyway
                    log.warning("ADR graph of %s: %s", folder, type(exc).__name__)

    def _failed(self, what: str, exc: BaseException, out: Outcome) -> None:
        out.failures += 1
        failed(what, exc)

    def _log_problems(self, report: IndexReport, checked: Iterable[str] = ()) -> None:
        """Warn once per file and reason: a log over max_file_bytes that keeps growing
        would otherwise warn every few seconds for the rest of its session."""
        for path in checked:
            self._reported.pop(path, None)
        for problem in report.problems:
            if self._reported.get(problem.path) == problem.reason:
                log.debug("%s: %s (again)", problem.path, problem.reason)
                continue
            self._reported[problem.path] = problem.reason
            log.warning("%s: %s", problem.path, problem.reason)


def failed(what: str, exc: BaseException) -> None:
    """Log a failed job or file: only our own errors' messages (another library's could
    quote the text it choked on); the frames (code, not data) go to DEBUG."""
    reason = str(exc) if isinstance(exc, PrecedentsError) else type(exc).__name__
    log.error("indexing %s failed: %s", shown_path(what), reason)
    log.debug("".join(traceback.format_tb(exc.__traceback__)))


def _gone(sources: Sequence[SourceDir], path: str, record: FileRecord) -> bool:
    """Whether the record of a path no source takes now goes: its file is gone, or one
    of the watcher's sources produced it (issue #29: a rule under a watched notes
    folder, a hidden team note, are other readers' records, not this one's)."""
    kept = [s for s in sources if not s.refused]
    refused = [s for s in sources if s.refused]
    return not os.path.lexists(path) or produced_by(record, path, kept, refused)


def _file(record: FileRecord) -> bool:
    """Whether a stored row is a file's (a commit record, ROOT@SHA, is not: a folder
    event never drops it, ingest/commit_index.py does)."""
    return record.kind != "commit"
