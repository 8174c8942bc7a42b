"""One writer at a time: the lock object ``_precedents/lock.json`` at the index's URI.

Taken by the storage's conditional put (created only if absent), so two builds
started at once cannot both hold it: the second is :class:`OrgBusy`, one line
naming the holder. The holder renews it every :data:`RENEW_S` from a thread; a
lock not renewed for :data:`STALE_S` (a CI runner that vanished), or held by a
dead process of this very machine, is taken over. A renewal that finds the lock
in another build's hands marks this one lost: it must not write its pointer.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Final

from precedents.errors import OrgBusy, OrgUnreachable
from precedents.org.location import OrgLocation, translated
from precedents.org.table import LOCK

RENEW_S: Final = 60.0
STALE_S: Final = 600.0


@dataclass(frozen=True)
class Holder:
    """Who holds the lock, since when, last renewed when (epoch seconds)."""

    host: str
    pid: int
    started: float
    renewed: float

    def to_json(self) -> bytes:
        """The lock object's bytes."""
        return json.dumps(asdict(self)).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Holder | None:
        """The holder a lock object names; None for one that cannot be read."""
        try:
            raw = json.loads(data)
            return cls(
                str(raw["host"]), int(raw["pid"]), float(raw["started"]), float(raw["renewed"])
            )
        except (ValueError, KeyError, TypeError):
            return None

    def stale(self, now: float) -> bool:
        """Whether another build may take it over: not renewed for STALE_S, or held by a
        process of this machine that is gone."""
        if now - self.renewed > STALE_S:
            return True
        return self.host == socket.gethostname() and not _alive(self.pid)

    def said(self) -> str:
        """The holder as a message names it."""
        age = max(0, int(time.time() - self.started))
        return f"{self.host} pid {self.pid}, started {age} s ago"


class BuildLock:
    """The lock of the index at ``location``, held by this process while a build writes."""

    def __init__(self, location: OrgLocation, *, renew_s: float = RENEW_S) -> None:
        self.location = location
        self.store: Any = location.store()
        self.renew_s = renew_s
        now = time.time()
        self.holder = Holder(socket.gethostname(), os.getpid(), now, now)
        self.lost = ""  # why the lock was lost while held ("" while it is ours)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self) -> None:
        """Take the lock (or take over a stale one); :class:`OrgBusy` when it is held."""
        import obstore
        from obstore.exceptions import AlreadyExistsError

        try:
            self._create()
            return
        except AlreadyExistsError:
            pass
        except FileNotFoundError:  # S3 answers a put into a missing bucket with 404
            raise OrgUnreachable(
                f"org index {self.location}: no such bucket or container"
            ) from None
        except Exception as exc:
            raise translated(self.location, "taking the build lock", exc) from exc
        try:
            current = bytes(obstore.get(self.store, LOCK).bytes())
        except FileNotFoundError:
            current = b""  # released meanwhile
        except Exception as exc:
            raise translated(self.location, "reading the build lock", exc) from exc
        other = Holder.from_json(current)
        if other is not None and not other.stale(time.time()):
            raise OrgBusy(f"org index {self.location}: another build holds it ({other.said()})")
        # Stale: delete and create again. Two builds taking over at once both delete, and
        # only one creates (the conditional put decides).
        try:
            obstore.delete(self.store, LOCK)
            self._create()
        except AlreadyExistsError:
            raise OrgBusy(f"org index {self.location}: another build took it over first") from None
        except Exception as exc:
            raise translated(self.location, "taking over a stale build lock", exc) from exc

    def _create(self) -> None:
        import obstore

        obstore.put(self.store, LOCK, self.holder.to_json(), mode="create")
        self._start()

    def _start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._renew_loop, name="org-lock", daemon=True)
        self._thread.start()

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.renew_s):
            self.renew()

    def renew(self) -> None:
        """Say the build is alive; a lock found in another's hands is marked lost."""
        import obstore

        try:
            current = Holder.from_json(bytes(obstore.get(self.store, LOCK).bytes()))
            if current is None or (current.host, current.pid, current.started) != (
                self.holder.host,
                self.holder.pid,
                self.holder.started,
            ):
                self.lost = "the build lock was taken over by another build"
                self._stop.set()
                return
            renewed = Holder(self.holder.host, self.holder.pid, self.holder.started, time.time())
            obstore.put(self.store, LOCK, renewed.to_json())
        except Exception:  # the storage hiccuped: the next renewal tries again (STALE_S
            pass  # is ten of them); a build is never failed by one missed renewal

    def check(self) -> None:
        """Raise :class:`OrgBusy` when the lock was lost (before writing the pointer)."""
        if self.lost:
            raise OrgBusy(f"org index {self.location}: {self.lost}; nothing served changed")

    def release(self) -> None:
        """Stop renewing and delete the lock object (when it is still ours)."""
        import obstore

        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.lost:
            return
        # A lock left behind goes stale; never fail a finished build over it.
        with contextlib.suppress(Exception):
            obstore.delete(self.store, LOCK)

    def __enter__(self) -> BuildLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (killed, not yet reaped by its parent) holds nothing.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True
