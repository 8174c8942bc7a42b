"""Single-instance locks and pid files for the long-lived processes (daemon, watcher).

The lock (``flock``; ``msvcrt.locking`` on Windows) is what proves a process
is alive: the OS drops it however the process dies, so a pid file found while
we hold the lock is stale. A pid alone could not prove that (pids are reused
after a crash or a reboot). Pid files are for people and service managers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO


class FileLock:
    """An exclusive, non-blocking lock on a file, released by the OS when we die."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: IO[str] | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fh is not None

    def acquire(self) -> bool:
        """Take the lock; False when another process holds it."""
        fh = self.path.open("a+")
        try:
            if os.name == "nt":
                import msvcrt

                fh.seek(0)
                msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined,unused-ignore]
            else:
                import fcntl

                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            return False
        self._fh = fh
        return True

    def release(self) -> None:
        """Drop the lock (closing the file drops it on every platform)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def read_pid(path: Path) -> int | None:
    """The pid written in ``path``, if it holds one."""
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as 0600, atomically: readers never see half a file."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)
