"""A project known from its first session (issue #29): the daemon takes it on.

With only the plugin installed nothing indexes a project before its first
session: Claude Code's projects folder names it only once a transcript records
it, and no watcher may run. So the first hook of a session (any hook: each one
carries ``cwd``) has the daemon look at the session's project, once per project
and daemon, on a thread of its own (:class:`FirstSessions`); no hook waits for it
except the file hook, at most :data:`PROVISIONAL_WAIT_S`, for the rule files of
the project just noted to be read.

For a project the store does not hold:

1. it is registered (:mod:`precedents.ingest.registry`: `status`, `reindex` and
   the watcher take it on from then on);
2. its rule files are read straight from disk, with no model, and served by the
   file hook and SessionStart (:mod:`precedents.recall.provisional`) until the
   store holds them;
3. when no watcher runs, one background process at low priority indexes that
   project alone (:mod:`precedents.ingest.first_session`); a running watcher
   learns of the project from the registry instead, and indexes it.

A registered project the store holds is brought up to date once per daemon (the
same background pass, cheap when nothing changed) when no watcher runs. A
project the store holds that was never registered (a configured ``repos`` entry,
one indexed by `reindex`) is left to whoever indexed it. The home folder, ``/``
and the folders above home are never taken on (``registry.refused_root``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING

from precedents.config import Settings, ensure_private_dir
from precedents.ingest.background import BACKGROUND_NICE
from precedents.ingest.registry import refused_root, register, registered, watcher_running
from precedents.ingest.sources import project_root
from precedents.secrets.names import shown_path

if TYPE_CHECKING:
    from precedents.recall.core import Recall

log = logging.getLogger("precedents.daemon")

# The file hook of a project noted this moment waits this long for its rule files to
# be read (a few files: milliseconds); past it, it answers from what is served.
PROVISIONAL_WAIT_S = 0.2
# Projects one daemon looks at; past it, a new one is not taken on (no unbounded set).
MAX_PROJECTS = 1000
# After the background pass, the provisional rules serve until the snapshot holds
# them (the next export), at most this long.
HANDOVER_S = 60.0
POLL_S = 0.25
INDEX_LOG = "first-index.log"
# The background index a stopping daemon leaves is stopped; it goes on next time.
CHILD_STOP_S = 5.0


class FirstSessions:
    """The projects this daemon's hooks came from, and the background index of each."""

    def __init__(self, settings: Settings, stop: threading.Event) -> None:
        self.settings = settings
        self._stop = stop
        self._noted: dict[str, threading.Event] = {}
        self._todo: queue.Queue[str] = queue.Queue()
        self._lock = threading.Lock()
        self._recall: Recall | None = None
        self._off = False  # no engine to serve provisional rules from: nothing is taken on
        self.children: dict[str, subprocess.Popen[bytes]] = {}

    def note(self, cwd: str) -> threading.Event:
        """A hook came from ``cwd``: its project is looked at once (in the background);
        the event is set when it has been."""
        root = str(project_root(cwd))
        with self._lock:
            done = self._noted.get(root)
            if done is None:
                done = threading.Event()
                if self._off or len(self._noted) >= MAX_PROJECTS:
                    done.set()
                    return done
                self._noted[root] = done
                self._todo.put(root)
        return done

    def attach(self, recall: Recall) -> None:
        """The model is loaded: look at the projects noted so far, and from now on."""
        from precedents.recall.core import Recall

        if not isinstance(recall, Recall):  # a test's stand-in: nothing to serve from
            with self._lock:
                self._off = True
                for noted in self._noted.values():
                    noted.set()
            return
        self._recall = recall
        threading.Thread(target=self._work, name="first-session", daemon=True).start()

    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                root = self._todo.get(timeout=POLL_S)
            except queue.Empty:
                continue
            try:
                self._take_on(root)
            except Exception:  # one project's trouble must not stop the others'
                log.exception("taking on a first session's project failed")
            finally:
                self._noted[root].set()

    def _take_on(self, root: str) -> None:
        recall = self._recall
        assert recall is not None
        shown = shown_path(root)
        why = refused_root(root, state=self.settings.home)
        if why is not None:
            log.info("first session: %s is %s: not indexed", shown, why)
            return
        if not os.path.isdir(root):
            return
        from precedents.ingest.first_session import has_sources

        if not has_sources(self.settings, root):
            log.info("first session: %s has nothing to index", shown)
            return
        home = self.settings.home
        indexed = any(m["project"] == root for m in recall.snapshot.meta)
        if indexed and root not in registered(home):
            return  # indexed by `reindex` or a watcher from the config: theirs to keep
        if not indexed:
            if register(home, root):
                log.info("first session: registered %s", shown)
            self._serve_rules(recall, root)
        if watcher_running(self.settings.run_dir):
            log.info("first session: the running watcher indexes %s", shown)
            return
        self._index(recall, root)

    def _serve_rules(self, recall: Recall, root: str) -> None:
        """Read the project's rule files and serve them until the store holds them."""
        from precedents.recall.provisional import read_rules

        started = time.perf_counter()
        rows = read_rules(root, self.settings.max_file_bytes)
        if rows:
            recall.provisional.put(root, rows)
            recall.rescope()
        fields = {
            "project": shown_path(root),
            "rules": len(rows),
            "ms": round((time.perf_counter() - started) * 1000, 1),
        }
        log.info("first session: rules served from files %s", json.dumps(fields))

    def _index(self, recall: Recall, root: str) -> None:
        """Start the project's background index (one at a time per project)."""
        from precedents.ingest.first_session import MODULE

        running = self.children.get(root)
        if running is not None and running.poll() is None:
            return
        ensure_private_dir(self.settings.log_dir)
        with open(self.settings.log_dir / INDEX_LOG, "ab") as err:
            child = subprocess.Popen(
                [sys.executable, "-m", MODULE, root],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        # Set from here, as the first thing after its start: the threads the child
        # creates (the model's) inherit it.
        with contextlib.suppress(OSError, AttributeError):  # AttributeError: Windows
            os.setpriority(os.PRIO_PROCESS, child.pid, BACKGROUND_NICE)
        self.children[root] = child
        log.info(
            "first session: indexing %s in the background %s",
            shown_path(root),
            json.dumps({"project": shown_path(root), "pid": child.pid}),
        )
        threading.Thread(
            target=self._reap, args=(recall, root, child), name="first-index", daemon=True
        ).start()

    def _reap(self, recall: Recall, root: str, child: subprocess.Popen[bytes]) -> None:
        """Wait for the background index; then hand the rules over to the store."""
        started = time.monotonic()
        code = child.wait()
        took = round(time.monotonic() - started, 2)
        fields = {"project": shown_path(root), "exit": code, "s": took}
        log.info("first session: background index done %s", json.dumps(fields))
        if code != 0:
            return  # the provisional rules keep serving; the next daemon tries again
        deadline = time.monotonic() + HANDOVER_S
        wanted = recall.provisional.paths(root)
        while not self._stop.is_set() and time.monotonic() < deadline:
            held = {m["path"] for m in recall.snapshot.meta if m["project"] == root}
            if wanted <= held:
                break
            time.sleep(POLL_S)
        if recall.provisional.drop(root):
            recall.rescope()

    def close(self) -> None:
        """Stop the background indexes still running (the daemon is exiting)."""
        for child in list(self.children.values()):
            if child.poll() is None:
                child.terminate()
                try:
                    child.wait(CHILD_STOP_S)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
