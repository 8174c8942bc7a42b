"""`precedents watch`: watchdog observers on every source folder, feeding the indexer.

Flow: the observer thread only classifies events and records paths in a
:class:`Debouncer`; ONE worker thread takes the paths that have gone quiet and
hands them to the store side in batches, so LanceDB writes are never
concurrent. The store side (:mod:`precedents.watcher.side`: the indexer, the
store, the model) runs in a child process started on demand
(:mod:`precedents.watcher.child`), or in this process when the watcher was given
its store and model. The worker looks at each path's *current state* (exists and belongs
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
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from types import TracebackType

from watchdog.events import FileSystemEvent

from precedents import runlock
from precedents.config import Settings
from precedents.errors import PrecedentsError, UsageError
from precedents.files import NOT_UTF8_NAME, escaped, undecodable
from precedents.ingest.registry import in_registry, registry_watch
from precedents.ingest.sources import (
    SourceDir,
    Sources,
    configured_sources,
    history_repos,
)
from precedents.models.embedding import Embedder
from precedents.secrets.names import shown_path
from precedents.store import Store
from precedents.watcher.batches import apply_in_groups
from precedents.watcher.batches import listing as _listing
from precedents.watcher.child import ChildSide, IndexingChildError
from precedents.watcher.debounce import Debouncer
from precedents.watcher.side import Interrupted, Outcome, Side, failed, open_side
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
# A group whose indexing child died is due again this many times (watcher/child.py).
_CHILD_RETRIES = 2
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
    # The indexing child ends after this long idle (child.py); None: the settings'
    # `watch_idle_s`.
    child_idle_s: float | None = None


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


_Interrupted = Interrupted  # raised from the indexer's progress callback on stop()


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
        inline: bool | None = None,
    ) -> None:
        """Watch ``sources``, or the ``folders`` named (like ``reindex --notes ...``), or
        every configured and discovered source when neither is given.

        ``store``/``embedder`` default to the configured ones, opened on :meth:`start`.
        ``inline``: index in this process (default: only when a store was given);
        otherwise a child process does (:mod:`precedents.watcher.child`).
        """
        self.settings = settings
        self.timing = timing or WatchTiming()
        self._folders = folders or Sources()
        self._given = list(sources) if sources is not None else None
        self._fixed = self._given is not None or self._folders.given
        self._discovering = not self._fixed and settings.discover_claude
        self._store = store
        self._embedder = embedder
        self._inline = store is not None if inline is None else inline
        self._sources: tuple[SourceDir, ...] = ()
        self._side: Side | None = None
        self._watches = Watches(self._on_event)
        self._debouncer = Debouncer(self.timing.max_wait_s)
        self._pid = runlock.Claim(settings.run_dir, ROLE)
        self._stopping = threading.Event()
        self._ready = threading.Event()
        self._worker: threading.Thread | None = None
        self._loader: threading.Thread | None = None
        self._failures_in_row = 0
        self._bad_names: set[str] = set()  # events' names that are not UTF-8, said once
        self._retries: dict[str, int] = {}  # paths due again after their child died
        self._git_dirs: dict[str, str] = {}  # watched git folders -> their repository
        self.stats = WatchStats()

    # -- lifecycle ---------------------------------------------------------------

    @property
    def sources(self) -> tuple[SourceDir, ...]:
        """The source folders being watched now."""
        return self._sources

    @property
    def side(self) -> Side | None:
        """The store side (None before :meth:`start`)."""
        return self._side

    def start(self) -> None:
        """Claim the pid file, open the store (or ready the child that will), start the
        observer and the worker.

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
            if self._inline:
                self._side = open_side(self.settings, self._check_stop, self._store, self._embedder)
            else:
                idle = self.timing.child_idle_s
                idle_s = self.settings.watch_idle_s if idle is None else idle
                self._side = ChildSide(self.settings, self._stopping, idle_s)
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
        if not self._stopping.is_set() and self._side is not None:
            self._side.preload()

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
        if self._side is not None:
            # A child stops between two batches (SIGTERM); in-process, the worker does.
            self._side.close(timeout_s)
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
        """New commits of every git project, or of ``only``."""
        assert self._side is not None
        if not history_repos(self._sources):
            return
        self._count(self._side.read_commits(self._sources, only))

    def _drop_under(self, root: str) -> None:
        assert self._side is not None
        self._count(self._side.drop_under(root))

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
                if isinstance(self._side, ChildSide):
                    self._side.warm()  # its start overlaps the quiet period
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
            wait = max(0.0, next_rescan - time.monotonic())
            if isinstance(self._side, ChildSide):
                wait = min(wait, self._side.until_idle() + 0.05)
            due = self._debouncer.take_due(wait)
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
            if self._side is not None:
                self._side.idle()  # a child idle for long enough ends (watcher/child.py)

    def _guarded(self, job: Callable[[], None]) -> None:
        """Run one job; a failure is logged and backs off, it never ends the thread."""
        try:
            job()
            self._failures_in_row = 0
        except _Interrupted:
            raise
        except Exception as exc:
            if not isinstance(exc, _AllFailed):
                self.stats.failures += 1
                failed("a watcher job", exc)
            self._failures_in_row += 1
            # One bad file fails once; a broken store fails every batch. From the second
            # failure in a row, wait longer each time (2, 4 ... 60 s) instead of spinning.
            if self._failures_in_row >= 2:
                self._stopping.wait(min(_MAX_BACKOFF_S, 0.5 * 2**self._failures_in_row))

    def _reconcile(self, sources: Sequence[SourceDir]) -> None:
        assert self._side is not None
        self._count(self._side.reconcile(self._sources, sources))

    def _process(self, due: list[Hashable]) -> None:
        side = self._side
        assert side is not None

        def head(paths: list[str], arriving: bool) -> None:
            try:
                self._count(side.heads(self._sources, paths, arriving))
            except IndexingChildError as exc:  # the groups that follow index them anyway
                self.stats.failures += 1
                failed(f"the heads of {len(paths)} file(s)", exc)

        # A pull of thousands of files: its heads first, then applied a group at a time,
        # taking what became due meanwhile (watcher/batches.py).
        def more(arriving: bool) -> list[str]:
            # Waiting only while paths are pending: a pull still being checked out.
            wait = HEADS_WAIT_S if arriving and self._debouncer.pending() else 0.0
            return self._paths_of(self._debouncer.take_due(wait))

        paths = self._paths_of(due)
        if apply_in_groups(paths, head, self._apply_group, more, self._debouncer.pending):
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
            assert self._side is not None
            paths.update(self._side.files_under(self._sources, folder))
        return sorted(paths)

    def _apply_group(self, paths: list[str]) -> bool:
        """Apply one group of paths; True when every one of them failed (each logged)."""
        assert self._side is not None
        try:
            outcome = self._side.apply(self._sources, paths)
        except IndexingChildError as exc:
            # The child died with the group (out of memory, killed): the group is due
            # again for a fresh child, twice at most (a file that kills every child
            # must not keep the watcher starting them).
            self.stats.failures += 1
            failed(f"a group of {len(paths)} file(s)", exc)
            self._retry(paths)
            return True
        self._count(outcome)
        for path in paths:
            self._retries.pop(path, None)
        return outcome.all_failed

    def _retry(self, paths: Sequence[str]) -> None:
        given_up = []
        for path in paths:
            tries = self._retries.get(path, 0)
            if tries >= _CHILD_RETRIES:
                given_up.append(path)
                self._retries.pop(path, None)
                continue
            self._retries[path] = tries + 1
            self._debouncer.add(("file", path), self.timing.quiet_s)
        if given_up:
            log.error(
                "gave up %d file(s) after %d failed tries (the next change or start retries)%s",
                len(given_up),
                _CHILD_RETRIES + 1,
                _listing("", given_up),
            )

    def _count(self, outcome: Outcome) -> None:
        stats = self.stats
        stats.batches += outcome.batches
        stats.headed += outcome.headed
        stats.files_indexed += outcome.files_indexed
        stats.files_removed += outcome.files_removed
        stats.chunks_embedded += outcome.chunks_embedded
        stats.failures += outcome.failures
        stats.reconciles += outcome.reconciles
