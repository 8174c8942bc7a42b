"""One watcher per state directory: an OS lock plus a ``watcher.pid`` file in ``run/``.

The lock (:class:`precedents.runlock.FileLock`) proves a watcher is alive; a
``watcher.pid`` found while we hold the lock is stale and is replaced.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from precedents import runlock
from precedents.config import ensure_private_dir, private_umask
from precedents.errors import UsageError

log = logging.getLogger("precedents.watcher")

PID_NAME = "watcher.pid"
LOCK_NAME = "watcher.lock"


class WatcherRunning(UsageError):
    """Another watcher already holds this state directory."""


def read_pid(run_dir: Path) -> int | None:
    """The pid written by the watcher that holds (or held) ``run_dir``, if any."""
    return runlock.read_pid(run_dir / PID_NAME)


class PidFile:
    """Claim ``run_dir`` for this process: lock, then write ``watcher.pid`` (0600)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.path = run_dir / PID_NAME
        self._lock = runlock.FileLock(run_dir / LOCK_NAME)

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._lock.held

    def acquire(self) -> None:
        """Take the lock and write our pid; raises :class:`WatcherRunning` if it is taken."""
        private_umask()
        ensure_private_dir(self.run_dir)
        if not self._lock.acquire():
            pid = read_pid(self.run_dir)
            raise WatcherRunning(
                f"a watcher is already running for {self.run_dir.parent}"
                + (f" (pid {pid})" if pid else "")
            )
        stale = read_pid(self.run_dir)
        if stale is not None and stale != os.getpid():
            log.info("replacing stale %s (pid %d is not running a watcher)", PID_NAME, stale)
        runlock.write_private(self.path, f"{os.getpid()}\n")

    def release(self) -> None:
        """Remove the pid file (if it is still ours) and drop the lock."""
        if not self._lock.held:
            return
        if read_pid(self.run_dir) == os.getpid():
            self.path.unlink(missing_ok=True)
        self._lock.release()
