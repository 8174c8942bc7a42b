"""The daemon keeps the organisation's index current: background pulls (issue #30).

When ``org_uri`` is set, the daemon pulls on start, every ``org_pull_s`` seconds,
and at a SessionStart when the last pull is older than that (a laptop that slept
through its timer). A pull is a child process (``python -m precedents.org.pull``)
at a low CPU priority, in a process group of its own: the daemon never imports
Lance, pyarrow or obstore for it, and no hook ever waits on the network: a hook
only reads the status file's time to decide whether to wake the puller thread.
One pull at a time; one still running after :data:`HUNG_S` is killed with its
group (the snapshot export it started too) and the status says so.

The child replaces ``<org_dir>/snapshot.npz`` atomically once a new version is
exported; the daemon's refresh thread reads the new file from there
(:mod:`precedents.recall`), without a restart.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Final

from precedents.config import Settings, ensure_private_dir
from precedents.ingest.background import BACKGROUND_NICE
from precedents.org.status import BUSY_EXIT, PULL_LOG, read_status, record_failure
from precedents.secrets.mask import mask_secrets

log = logging.getLogger("precedents.daemon")

MODULE: Final = "precedents.org.pull"
HUNG_S: Final = 600.0  # a pull still running after this is stuck: killed
POLL_S: Final = 0.5
STOP_S: Final = 5.0  # a pull the stopping daemon leaves gets this long after SIGTERM


class OrgPulls:
    """The daemon's puller thread and its one child at a time."""

    def __init__(self, settings: Settings, stop: threading.Event, hung_s: float = HUNG_S) -> None:
        self.settings = settings
        self.hung_s = hung_s
        self._stop = stop
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self.child: subprocess.Popen[bytes] | None = None
        self.pulls = 0  # children started (the tests and the bench read it)

    @property
    def configured(self) -> bool:
        """Whether an org index is configured at all."""
        return bool(self.settings.org_uri)

    def start(self) -> None:
        """Pull now and every ``org_pull_s``, on a thread of its own (no-op when unset)."""
        if self.configured:
            threading.Thread(target=self._loop, name="org-pull", daemon=True).start()

    def session_started(self) -> None:
        """SessionStart: wake the puller when the last pull is older than ``org_pull_s``.
        Reads one small file; never waits for the pull."""
        if not self.configured or self.running:
            return
        status = read_status(self.settings.org_dir)
        if status is None or status.due(self.settings.org_pull_s):
            self._wake.set()

    @property
    def running(self) -> bool:
        """Whether a pull child runs now."""
        child = self.child
        return child is not None and child.poll() is None

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            try:
                self.pull_once()
            except Exception:  # the puller must outlive one bad pull
                log.exception("org pull failed to start")
            self._wake.wait(self.settings.org_pull_s)

    def pull_once(self) -> int | None:
        """Run one pull child to its end (or kill it when hung); its exit status."""
        with self._lock:
            if self._stop.is_set():
                return None
            child = self._spawn()
        started = time.monotonic()
        while child.poll() is None:
            if self._stop.wait(POLL_S):
                return None  # close() ends it
            if time.monotonic() - started > self.hung_s:
                _end(child, 0.0)
                line = f"org pull: no answer after {self.hung_s:.0f}s: stopped"
                record_failure(self.settings.org_dir, mask_secrets(self.settings.org_uri), line)
                log.warning("%s", line)
                return child.returncode
        self._logged(child.returncode, time.monotonic() - started)
        return child.returncode

    def _spawn(self) -> subprocess.Popen[bytes]:
        settings = self.settings
        ensure_private_dir(settings.log_dir)
        env = {**os.environ, "PRECEDENTS_HOME": str(settings.home)}
        env["PRECEDENTS_MODEL"] = settings.model
        group = (
            {"start_new_session": True}
            if os.name != "nt"
            else {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}
        )
        with open(settings.log_dir / PULL_LOG, "ab") as err:
            child = subprocess.Popen(
                [sys.executable, "-m", MODULE, settings.org_uri],
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=err,
                env=env,
                **group,
            )
        # Set from here, first thing after its start: the threads it starts inherit it.
        with contextlib.suppress(OSError, AttributeError):  # AttributeError: Windows
            os.setpriority(os.PRIO_PROCESS, child.pid, BACKGROUND_NICE)
        self.child = child
        self.pulls += 1
        return child

    def _logged(self, code: int, seconds: float) -> None:
        status = read_status(self.settings.org_dir)
        fields: dict[str, object] = {"exit": code, "s": round(seconds, 2)}
        if status is not None:
            fields |= {
                "version": status.version,
                "records": status.records,
                "bytes_copied": status.bytes_copied,
            }
        if code == 0:
            log.info("org pull %s", json.dumps(fields))
        elif code == BUSY_EXIT:
            log.info("org pull: another pull runs %s", json.dumps(fields))
        else:
            error = status.last_error if status is not None else ""
            log.warning("org pull failed %s: %s", json.dumps(fields), error)

    def close(self) -> None:
        """The daemon is exiting: stop a pull still running (it goes on next time)."""
        with self._lock:
            child = self.child
            if child is not None and child.poll() is None:
                _end(child, STOP_S)


def _end(child: subprocess.Popen[bytes], grace_s: float) -> None:
    """Stop ``child`` and its process group (the export it started): SIGTERM, then after
    ``grace_s`` SIGKILL."""
    killpg = getattr(os, "killpg", None)
    for sig, wait_s in ((signal.SIGTERM, grace_s), (getattr(signal, "SIGKILL", None), 10.0)):
        if sig is None or (sig == signal.SIGTERM and grace_s <= 0):
            continue
        with contextlib.suppress(OSError):
            if killpg is not None:
                killpg(child.pid, sig)
            else:
                child.kill()
        try:
            child.wait(wait_s)
            return
        except subprocess.TimeoutExpired:
            continue
