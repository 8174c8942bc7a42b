"""`precedents watch`: watchdog observers on every source folder, feeding the indexer.

Flow: the observer thread only classifies events and records paths in a
:class:`Debouncer`; ONE worker thread takes the paths that have gone quiet and
hands them to the :class:`Indexer` in batches, so LanceDB writes are never
concurrent. The worker looks at each path's *current state* (exists and belongs
to a source -> index it; otherwise -> drop its rows), never at the event kinds,
so any sequence of events an editor produces (vim's ``4913`` probe, ``~``
backups, ``.swp``, atomic renames) ends in one index of the final file, and
temp files are never indexed because they match no source.

On start the worker first reconciles (``Indexer.sync`` over every source):
what changed while no watcher ran is indexed and deleted files' rows go.
Sources are re-discovered when a folder appears in Claude Code's folders and
every ``rescan_s``, so a new project folder is picked up and a deleted one
neither crashes the observer nor keeps its rows.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
import traceback
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from watchdog.events import FileSystemEvent

from precedents import runlock
from precedents.adr_graph import build_graph
from precedents.config import Settings
from precedents.errors import PrecedentsError, UsageError
from precedents.files import NOT_UTF8_NAME, escaped, undecodable
from precedents.ingest.indexer import Indexer, IndexReport, lazy_store
from precedents.ingest.registry import in_registry, registry_watch
from precedents.ingest.removal import produced_by
from precedents.ingest.sources import (
    SourceDir,
    SourceFile,
    Sources,
    configured_sources,
    history_repos,
    walk,
)
from precedents.models.embedding import Embedder
from precedents.secrets.mask import mask_secrets
from precedents.secrets.names import shown_path
from precedents.store import FileRecord, LazyStore, Store
from precedents.watcher.batches import apply_in_groups, heads_first
from precedents.watcher.batches import listing as _listing
from precedents.watcher.debounce import Debouncer
from precedents.watcher.embcache import background_model, in_background
from precedents.watcher.watches import (
    Watches,
    awaits,
    git_dirs,
    may_hold_sources,
    moved_ref,
    route,
    wanted_watches,
    within,
)

log = logging.getLogger("precedents.watcher")

ROLE = "watcher"  # its claim: run/watcher.lock and run/watcher.pid
_REDISCOVER: tuple[str, str] = ("rediscover", "")
_MAX_BACKOFF_S = 60.0
# How long the worker waits for the rest of a pull still arriving before its full pass
# (watcher/batches.py apply_in_groups).
HEADS_WAIT_S = 1.0


class WatcherRunning(UsageError):
    """Another watcher already holds this state directory."""


@dataclass(frozen=True)
class WatchTiming:
    """How long paths wait before they are indexed (seconds)."""

    quiet_s: float = 0.3  # notes, rules, ADRs: a save is a burst of events within ms
    conversation_quiet_s: float = 2.0  # logs grow a line at a time while a session runs
    max_wait_s: float = 10.0  # a file that never goes quiet is still indexed this often
    rescan_s: float = 60.0  # re-discover sources and re-establish lost watches


@dataclass
class WatchStats:
    """Counters of what the watcher did since it started."""

    batches: int = 0
    headed: int = 0  # documents stored by their heads first (ingest/heads.py)
    files_indexed: int = 0
    files_removed: int = 0
    chunks_embedded: int = 0
    failures: int = 0
    reconciles: int = 0


class _Interrupted(Exception):
    """Raised from the indexer's progress callback when stop() was asked for."""


class _AllFailed(Exception):
    """Every file of a batch failed (each already logged): time to back off."""


class Watcher:
    """Keeps the store in line with the source folders until :meth:`stop`."""

    def __init__(
        self,
        settings: Settings,
        *,
        folders: Sources | None = None,
        sources: Sequence[SourceDir] | None = None,
        store: Store | None = None,
        embedder: Embedder | None = None,
        timing: WatchTiming | None = None,
    ) -> None:
        """Watch ``sources``, or the ``folders`` named (like ``reindex --notes ...``), or
        every configured and discovered source when neither is given.

        ``store``/``embedder`` default to the configured ones, opened on :meth:`start`.
        """
        self.settings = settings
        self.timing = timing or WatchTiming()
        self._folders = folders or Sources()
        self._given = list(sources) if sources is not None else None
        self._fixed = self._given is not None or self._folders.given
        self._discovering = not self._fixed and settings.discover_claude
        self._store = store
        self._embedder = embedder
        self._sources: tuple[SourceDir, ...] = ()
        self._indexer: Indexer | None = None
        self._watches = Watches(self._on_event)
        self._debouncer = Debouncer(self.timing.max_wait_s)
        self._pid = runlock.Claim(settings.run_dir, ROLE)
        self._writer = runlock.WriterLock(settings.run_dir)
        self._stopping = threading.Event()
        self._ready = threading.Event()
        self._worker: threading.Thread | None = None
        self._loader: threading.Thread | None = None
        self._failures_in_row = 0
        self._reported: dict[str, str] = {}
        self._bad_names: set[str] = set()  # events' names that are not UTF-8, said once
        self._git_problems: set[tuple[str, str]] = set()
        self._git_dirs: dict[str, str] = {}  # watched git folders -> their repository
        self.stats = WatchStats()

    # -- lifecycle ---------------------------------------------------------------

    @property
    def sources(self) -> tuple[SourceDir, ...]:
        """The source folders being watched now."""
        return self._sources

    def start(self) -> None:
        """Claim the pid file, open the store, start the observer and the worker.

        Returns at once; the worker's first job is the reconcile pass
        (:meth:`wait_ready` waits for it). Raises :class:`WatcherRunning` when
        another watcher holds this state directory, :class:`UsageError` for a
        missing folder.
        """
        if self._worker is not None:
            raise RuntimeError("this watcher was already started")
        self._sources = tuple(self._discover())  # a missing folder fails before the lock
        if not self._pid.acquire():
            pid = self._pid.holder()
            raise WatcherRunning(
                f"a watcher is already running for {self.settings.home}"
                + (f" (pid {pid})" if pid else "")
            )
        try:
            if self._store is None:
                # A new store needs the model now: it loads at background priority too.
                inner = lazy_store(self.settings)
                lazy = LazyStore(inner.index_dir, inner.model_id, in_background(inner.model))
                with self._writer.held():  # opening may create or rebuild the store
                    self._store = lazy.open()
                load: Callable[[], Embedder] = lazy.model
            else:
                given = self._embedder
                if given is None:
                    raise ValueError("a store was given without its embedder")
                load = lambda: given  # noqa: E731
            # The model loads in the background right after start (see _preload).
            self._indexer = Indexer(
                self.settings, self._store, lambda: background_model(load), self._writer
            )
            self._watches.start()
            self._sync_watches()
            # daemon=True: a program that forgets stop() must still be able to exit;
            # each store write is one atomic commit, so being cut off loses nothing.
            self._worker = threading.Thread(
                target=self._run, name="precedents-watcher", daemon=True
            )
            self._worker.start()
            # Load the model now, in the background: the first saved note must not
            # wait for torch and the weights (~30 s on a busy 2-core box).
            self._loader = threading.Thread(target=self._preload, name="model-load", daemon=True)
            self._loader.start()
        except BaseException:
            self._watches.stop()
            self._pid.release()
            raise
        log.info(
            "watching %d source folder(s) (pid %d, state %s)",
            len(self._sources),
            os.getpid(),
            self.settings.home,
        )

    def _preload(self) -> None:
        if self._stopping.is_set():
            return
        try:
            if self._indexer is not None:
                _ = self._indexer.embedder
        except Exception as exc:  # the first file to index reports it again, in context
            log.warning("loading the model failed: %s", exc)

    def wait_ready(self, timeout_s: float | None = None) -> bool:
        """Wait for the start-up reconcile pass; False on timeout."""
        return self._ready.wait(timeout_s)

    def stop(self, timeout_s: float = 60.0) -> None:
        """Stop watching, let the worker finish its current file, remove the pid file.

        Changes still waiting for their quiet period are left to the next
        start's reconcile pass.
        """
        self._stopping.set()
        self._debouncer.close()
        if self._watches.alive:
            self._watches.stop()
        if self._worker is not None:
            self._worker.join(timeout_s)
            if self._worker.is_alive():
                log.warning("the indexing thread did not finish within %.0f s", timeout_s)
        if self._loader is not None:
            # A model still loading must finish before the process exits: the
            # interpreter tearing down under onnxruntime's native start-up aborts
            # the process ("terminate called without an active exception", exit -6).
            self._loader.join(timeout_s)
        self._pid.release()
        if self._worker is not None:
            log.info("watcher stopped")

    def __enter__(self) -> Watcher:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- sources and watches -----------------------------------------------------

    def _discover(self) -> list[SourceDir]:
        if self._given is not None:
            return list(self._given)
        if self._fixed and self._sources:
            # Fixed folders: checked once (a missing one is the user's mistake).
            # Otherwise every rescan looks again: a project's rule files and ADR
            # folders appear anywhere in it (docs/rules.md).
            return list(self._sources)
        return configured_sources(self.settings, self._folders)

    def _sync_watches(self) -> set[str]:
        claude = self.settings.claude_dir if self._discovering else None
        repos = history_repos(self._sources)
        self._git_dirs = git_dirs(repos)
        wanted = wanted_watches(self._sources, claude, repos)
        if not self._fixed:  # a project a first session registers (ingest/registry.py)
            wanted.add(registry_watch(self.settings.home))
        return self._watches.sync(wanted)

    def _refresh_sources(self) -> None:
        old = self._sources
        try:
            self._sources = tuple(self._discover())
        except (PrecedentsError, OSError) as exc:
            log.warning("source discovery failed: %s", exc)
            return
        added_roots = self._sync_watches()
        fresh = [s for s in self._sources if s not in old or str(s.root) in added_roots]
        for src in old:
            if src not in self._sources and not src.root.is_dir():
                self._drop_under(str(src.root))
        if fresh:
            log.info(
                "new or re-appeared source folder(s): %s",
                ", ".join(shown_path(s.root) for s in fresh),
            )
            self._reconcile(fresh)
        self._read_commits()

    def _read_commits(self, only: Sequence[str] | None = None) -> None:
        """New commits of every git project, or of ``only`` (``known..HEAD``: one git call
        when none)."""
        assert self._indexer is not None
        repos = history_repos(self._sources)
        if only is not None:
            repos = [r for r in repos if r in only]
        if not repos:
            return
        report = self._indexer.sync_commits(repos)
        self._count(report)
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

    def _drop_under(self, root: str) -> None:
        assert self._indexer is not None and self._store is not None
        with self._indexer.writing():
            gone = [p for p, f in self._store.files().items() if _file(f) and within(p, root)]
            removed = self._indexer.remove_paths(gone) if gone else 0
        if gone:
            self.stats.files_removed += removed
            log.info("removed %d file(s) of vanished folder %s", removed, shown_path(root))

    # -- events (observer thread) ------------------------------------------------

    def _on_event(self, event: FileSystemEvent) -> None:
        try:
            paths = [os.fsdecode(event.src_path)]
            if event.event_type == "moved":
                paths.append(os.fsdecode(event.dest_path))
            for path in paths:
                repo = self._moved_branch(path)
                if repo:
                    # A commit, a checkout, a pull: read its new commits once git is done.
                    self._debouncer.add(("commits", repo), self.timing.quiet_s)
                if repo is not None:
                    continue  # git's own files are no source
                if event.is_directory:
                    self._on_dir_event(path, event.event_type)
                    continue
                if not self._fixed and in_registry(self.settings.home, path):
                    self._debouncer.add(_REDISCOVER, self.timing.quiet_s)
                    continue
                if undecodable(path) and path not in self._bad_names and len(self._bad_names) < 999:
                    self._bad_names.add(path)
                    log.warning("%s: %s", escaped(path), NOT_UTF8_NAME)
                src = route(self._sources, path)
                if src is None:
                    continue  # temp files, backups, hidden files, other suffixes
                quiet = (
                    self.timing.conversation_quiet_s
                    if src.kind == "conversation"
                    else self.timing.quiet_s
                )
                self._debouncer.add(("file", path), quiet)
        except Exception:  # an exception here would kill watchdog's dispatch thread
            log.exception("could not handle a file-system event")

    def _moved_branch(self, path: str) -> str | None:
        """The repository whose branch ``path`` (an event in a git folder) moved, if any."""
        for git_dir, repo in self._git_dirs.items():
            if within(path, git_dir):
                return repo if moved_ref(path, git_dir) else ""
        return None

    def _on_dir_event(self, path: str, event_type: str) -> None:
        roots = {str(s.root) for s in self._sources}
        if event_type in ("deleted", "moved") and path in roots:
            # Its watch is gone, or follows the folder to wherever it was moved.
            self._watches.mark_dead(path)
        if path in roots or any(s.recursive and within(path, str(s.root)) for s in self._sources):
            # A folder of notes moved in, out, or deleted: look at every file under it.
            self._debouncer.add(("dir", path), self.timing.quiet_s)
        if (
            path in roots
            or (self._discovering and may_hold_sources(self.settings.claude_dir, path))
            or (event_type != "deleted" and awaits(self._sources, path))
        ):
            self._debouncer.add(_REDISCOVER, self.timing.quiet_s)

    # -- the worker --------------------------------------------------------------

    def _check_stop(self, *_: int) -> None:
        if self._stopping.is_set():
            raise _Interrupted

    def _run(self) -> None:
        try:
            self._guarded(lambda: self._reconcile(self._sources))
        except _Interrupted:
            return
        finally:
            self._ready.set()
        next_rescan = time.monotonic() + self.timing.rescan_s
        while not self._stopping.is_set():
            due = self._debouncer.take_due(max(0.0, next_rescan - time.monotonic()))
            if self._stopping.is_set():
                break
            try:
                if due:
                    self._guarded(functools.partial(self._process, due))
                if time.monotonic() >= next_rescan:
                    self._guarded(self._refresh_sources)
                    next_rescan = time.monotonic() + self.timing.rescan_s
            except _Interrupted:
                break

    def _guarded(self, job: Callable[[], None]) -> None:
        """Run one job; a failure is logged and backs off, it never ends the thread."""
        try:
            job()
            self._failures_in_row = 0
        except _Interrupted:
            raise
        except Exception as exc:
            if not isinstance(exc, _AllFailed):
                self._failed("a watcher job", exc)
            self._failures_in_row += 1
            # One bad file fails once; a broken store fails every batch. From the second
            # failure in a row, wait longer each time (2, 4 ... 60 s) instead of spinning.
            if self._failures_in_row >= 2:
                self._stopping.wait(min(_MAX_BACKOFF_S, 0.5 * 2**self._failures_in_row))

    def _failed(self, what: str, exc: BaseException) -> None:
        self.stats.failures += 1
        # Only our own errors' messages are logged: another library's message could
        # quote the text it choked on. The frames (code, not data) go to DEBUG.
        reason = str(exc) if isinstance(exc, PrecedentsError) else type(exc).__name__
        log.error("indexing %s failed: %s", shown_path(what), reason)
        log.debug("".join(traceback.format_tb(exc.__traceback__)))

    def _reconcile(self, sources: Sequence[SourceDir]) -> None:
        assert self._indexer is not None
        report = self._indexer.sync(walk(sources), progress=self._check_stop)
        self.stats.reconciles += 1
        self._count(report)
        log.info(
            "reconciled %d folder(s): %d file(s) seen, %d indexed, %d removed, "
            "%d chunk(s) embedded in %.2f s",
            len(sources),
            report.files_seen,
            report.files_indexed,
            report.files_deleted,
            report.chunks_embedded,
            report.seconds,
        )
        self._log_problems(report)

    def _process(self, due: list[Hashable]) -> None:
        assert self._indexer is not None
        indexer = self._indexer

        def head(paths: list[str], arriving: bool) -> None:
            stop = self._check_stop
            self.stats.headed += heads_first(indexer, self._route, paths, stop, arriving)

        # A pull of thousands of files: its heads first, then applied a group at a time,
        # taking what became due meanwhile (watcher/batches.py).
        def more(arriving: bool) -> list[str]:
            # Waiting only while paths are pending: a pull still being checked out.
            wait = HEADS_WAIT_S if arriving and self._debouncer.pending() else 0.0
            return self._paths_of(self._debouncer.take_due(wait))

        if apply_in_groups(self._paths_of(due), head, self._apply_group, more):
            raise _AllFailed

    def _paths_of(self, due: Sequence[Hashable]) -> list[str]:
        """The files the due keys name."""
        paths: set[str] = set()
        dirs: list[str] = []
        repos = [key[1] for key in due if isinstance(key, tuple) and key[0] == "commits"]
        if repos:
            self._read_commits(repos)
        for key in due:
            if key == _REDISCOVER:
                self._refresh_sources()
            elif isinstance(key, tuple) and key[0] == "dir":
                dirs.append(key[1])
            elif isinstance(key, tuple) and key[0] == "file":
                paths.add(key[1])
        for folder in dirs:
            paths |= self._files_under(folder)
        return sorted(paths)

    def _apply_group(self, paths: list[str]) -> bool:
        """Apply one group of paths; True when every one of them failed (each logged)."""
        try:
            self._apply(paths)
        except _Interrupted:
            raise
        except Exception as exc:
            if len(paths) == 1:
                self._failed(paths[0], exc)
                return True
            # One bad file must not cost the others their update: isolate it.
            log.warning("a batch of %d files failed; retrying them one by one", len(paths))
            failed = 0
            for path in paths:
                try:
                    self._apply([path])
                except _Interrupted:
                    raise
                except Exception as one:
                    self._failed(path, one)
                    failed += 1
            return failed == len(paths)
        return False

    def _route(self, path: str) -> SourceFile | None:
        return route(self._sources, path)

    def _files_under(self, folder: str) -> set[str]:
        assert self._store is not None
        found = {p for p, f in self._store.files().items() if _file(f) and within(p, folder)}
        if any(within(folder, str(s.root)) and s.linked_out() for s in self._sources):
            return found  # `docs/adr -> /`: never listed (its old rows go, issue #28)
        for top, dirnames, filenames in os.walk(folder):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            found.update(os.path.join(top, f) for f in filenames)
        return found

    def _apply(self, paths: Sequence[str]) -> None:
        """Index the paths that exist and belong to a source; drop the rows of the rest."""
        assert self._indexer is not None
        with self._indexer.writing():  # one writer at a time, and a fresh view of the store
            self._apply_held(paths)

    def _apply_held(self, paths: Sequence[str]) -> None:
        assert self._indexer is not None and self._store is not None
        started = time.perf_counter()
        known = self._store.files()
        to_index: list[SourceFile] = []
        to_remove: list[str] = []
        for path in paths:
            src = route(self._sources, path)
            if src is not None and os.path.isfile(path):
                to_index.append(src)
            elif path in known and self._gone(path, known[path]):
                to_remove.append(path)
        report = IndexReport()
        if to_index:
            self._indexer.index_files(to_index, report, self._check_stop, known)
        # Index first, remove second: a moved note is never missing for a reader.
        removed = self._indexer.remove_paths(to_remove) if to_remove else 0
        report.files_deleted += removed
        self._refresh_adr_graphs(known, to_remove)
        self._store.maybe_compact()
        self.stats.batches += 1
        self._count(report)
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

    def _gone(self, path: str, record: FileRecord) -> bool:
        """Whether the record of a path no source takes now goes: its file is gone, or one
        of this watcher's sources produced it (issue #29: a rule under a watched notes
        folder, a hidden team note, are other readers' records, not this one's)."""
        kept = [s for s in self._sources if not s.refused]
        refused = [s for s in self._sources if s.refused]
        return not os.path.lexists(path) or produced_by(record, path, kept, refused)

    def _refresh_adr_graphs(self, known: dict[str, Any], removed: Sequence[str]) -> None:
        """Rebuild the cached graph of folders that lost an ADR (indexing one rebuilds it)."""
        folders = {Path(p).parent for p in removed if getattr(known.get(p), "kind", "") == "adr"}
        if not folders:
            return
        for folder in folders:
            if folder.is_dir():
                try:
                    build_graph(folder, self.settings.cache_dir / "adr", mask_secrets)
                except Exception as exc:  # the daemon rebuilds it on demand anyway
                    log.warning("ADR graph of %s: %s", folder, type(exc).__name__)

    def _count(self, report: IndexReport) -> None:
        self.stats.files_indexed += report.files_indexed
        self.stats.files_removed += report.files_deleted
        self.stats.chunks_embedded += report.chunks_embedded

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


def _file(record: FileRecord) -> bool:
    """Whether a stored row is a file's (a commit record, ROOT@SHA, is not: a folder
    event never drops it, ingest/commit_index.py does)."""
    return record.kind != "commit"
