"""Single-instance locks and pid files for the long-lived processes (daemon, watcher).

The lock (``flock``; ``msvcrt.locking`` on Windows) is what proves a process
is alive: the OS drops it however the process dies, so a pid file found while
we hold the lock is stale. A pid alone could not prove that (pids are reused
after a crash or a reboot). Pid files are for people and service managers.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from precedents.config import ensure_private_dir

log = logging.getLogger("precedents.runlock")


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


def read_pid(run_dir: Path, role: str) -> int | None:
    """The pid written by the process of ``role`` that holds (or held) ``run_dir``."""
    try:
        return int((run_dir / f"{role}.pid").read_text().strip())
    except (OSError, ValueError):
        return None


class Claim:
    """``run_dir`` claimed for one process of a ``role`` (daemon, watcher, writer).

    The lock ``<role>.lock`` proves the claim; ``<role>.pid`` says who holds it.
    A pid file found while we hold the lock is stale and is replaced.
    """

    def __init__(self, run_dir: Path, role: str) -> None:
        self.run_dir = run_dir
        self.role = role
        self.pid_path = run_dir / f"{role}.pid"
        self._lock = FileLock(run_dir / f"{role}.lock")

    @property
    def held(self) -> bool:
        """Whether this object holds the claim."""
        return self._lock.held

    def holder(self) -> int | None:
        """The pid of the process that holds (or last held) the claim, if recorded."""
        return read_pid(self.run_dir, self.role)

    def acquire(self) -> bool:
        """Take the lock and write our pid (0600); False when another process holds it."""
        ensure_private_dir(self.run_dir)
        if not self._lock.acquire():
            return False
        stale = self.holder()
        if stale is not None and stale != os.getpid():
            log.info("replacing stale %s.pid (pid %d no longer holds it)", self.role, stale)
        write_private(self.pid_path, f"{os.getpid()}\n")
        return True

    def release(self) -> None:
        """Remove the pid file (if it is still ours) and drop the lock."""
        if not self._lock.held:
            return
        if self.holder() == os.getpid():
            self.pid_path.unlink(missing_ok=True)
        self._lock.release()


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as 0600, atomically: readers never see half a file."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


WRITER = "writer"  # run/writer.lock: held by whichever process writes the store


class WriterLock:
    """One writer of the store at a time, across processes; re-entrant within one.

    Two writers at once (two `reindex`, or `reindex` beside the watcher) each
    decided from their own view of the store and wrote alongside: every file
    ended up twice. The lock serializes them; the second one waits, told once
    through ``on_wait`` (with the holder's pid) so the user sees why.
    """

    def __init__(
        self,
        run_dir: Path,
        on_wait: Callable[[int | None], None] | None = None,
        poll_s: float = 0.1,
    ) -> None:
        self.run_dir = run_dir
        self.on_wait = on_wait
        self.poll_s = poll_s
        self._claim = Claim(run_dir, WRITER)
        self._local = threading.RLock()
        self._depth = 0

    @contextmanager
    def held(self) -> Iterator[bool]:
        """Hold the lock for the block; yields True on the outermost entry (a fresh hold)."""
        with self._local:
            outer = self._depth == 0
            if outer:
                self._take()
            self._depth += 1
            try:
                yield outer
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._claim.release()

    def _take(self) -> None:
        if self._claim.acquire():
            return
        if self.on_wait is not None:
            self.on_wait(self._claim.holder())
        while not self._claim.acquire():
            time.sleep(self.poll_s)
