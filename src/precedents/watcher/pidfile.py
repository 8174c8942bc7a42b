"""One watcher per state directory: an OS lock plus a ``watcher.pid`` file in ``run/``.

The lock (``flock``; ``msvcrt.locking`` on Windows) is what proves a watcher
is alive: the OS drops it when the process dies in any way, so a ``watcher.pid``
found while we hold the lock is stale and is replaced. A pid alone could not
prove that (pids are reused after a crash or a reboot). The pid file is what
people and service managers read.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import IO

from precedents.config import ensure_private_dir, private_umask
from precedents.errors import UsageError

log = logging.getLogger("precedents.watcher")

PID_NAME = "watcher.pid"
LOCK_NAME = "watcher.lock"


class WatcherRunning(UsageError):
    """Another watcher already holds this state directory."""


def read_pid(run_dir: Path) -> int | None:
    """The pid written by the watcher that holds (or held) ``run_dir``, if any."""
    try:
        return int((run_dir / PID_NAME).read_text().strip())
    except (OSError, ValueError):
        return None


class PidFile:
    """Claim ``run_dir`` for this process: lock, then write ``watcher.pid`` (0600)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.path = run_dir / PID_NAME
        self._fh: IO[str] | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fh is not None

    def acquire(self) -> None:
        """Take the lock and write our pid; raises :class:`WatcherRunning` if it is taken."""
        private_umask()
        ensure_private_dir(self.run_dir)
        fh = (self.run_dir / LOCK_NAME).open("a+")
        if not _lock(fh):
            fh.close()
            pid = read_pid(self.run_dir)
            raise WatcherRunning(
                f"a watcher is already running for {self.run_dir.parent}"
                + (f" (pid {pid})" if pid else "")
            )
        self._fh = fh
        stale = read_pid(self.run_dir)
        if stale is not None and stale != os.getpid():
            log.info("replacing stale %s (pid %d is not running a watcher)", PID_NAME, stale)
        tmp = self.path.with_name(PID_NAME + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(f"{os.getpid()}\n")
        os.replace(tmp, self.path)  # readers never see a half-written pid

    def release(self) -> None:
        """Remove the pid file (if it is still ours) and drop the lock."""
        if self._fh is None:
            return
        if read_pid(self.run_dir) == os.getpid():
            self.path.unlink(missing_ok=True)
        self._fh.close()  # closing drops the lock on every platform
        self._fh = None


def _lock(fh: IO[str]) -> bool:
    try:
        if os.name == "nt":
            import msvcrt

            fh.seek(0)
            msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined,unused-ignore]
        else:
            import fcntl

            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True
