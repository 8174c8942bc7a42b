"""Is a daemon there, and who is on the other end: its pid, a status probe that
asks it and then looks at its lock (`serve --status`), a socket peer's uid.

Split from :mod:`.server` so that callers asking about a daemon (api, `install-hook`)
do not read the server's code, and the server stays one thing: serving.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
import time
from pathlib import Path

from precedents import runlock
from precedents.protocol import DAEMON_ROLE, DaemonClient, Refused, Unavailable


def read_pid(run: Path) -> int | None:
    """The pid recorded by a daemon in ``run``, if any."""
    return runlock.read_pid(run, DAEMON_ROLE)


def peer_uid(conn: socket.socket) -> int | None:
    """The uid of the process at the other end of a UNIX socket; None where we cannot ask.

    Linux: ``SO_PEERCRED`` (``struct ucred {pid, uid, gid}``). macOS and
    FreeBSD: ``LOCAL_PEERCRED`` at level ``SOL_LOCAL`` (0), a ``struct
    xucred {u_int version; uid_t uid; short ngroups; gid_t groups[16]}``.
    Elsewhere (other BSDs, Windows' TCP with its secret) None: the 0700
    folder is the only gate. Raises OSError when the OS refuses to say.
    """
    if hasattr(socket, "SO_PEERCRED"):
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("iII"))
        return int(struct.unpack("iII", creds)[1])
    if sys.platform == "darwin" or sys.platform.startswith("freebsd"):
        local_peercred = getattr(socket, "LOCAL_PEERCRED", 1)
        creds = conn.getsockopt(0, local_peercred, struct.calcsize("IIh16I"))
        return int(struct.unpack_from("II", creds)[1])
    return None


def status(run: Path, wait_s: float = 2.0) -> dict[str, object]:
    """Whether a daemon runs for ``run`` and answers on its socket: what `serve --status` says.

    ``running`` is what `serve` goes by (another process holds the lock);
    ``answering`` whether a ping is answered. A daemon recreating a lost
    socket, or hung, holds its lock without answering: when the pid file
    names a live process, the ping is retried for ``wait_s`` before the
    lock is looked at (taking it for a moment, so only then).
    Returns ``{"running", "answering", "pid"}`` plus the ping's answer.
    """
    deadline = time.monotonic() + wait_s
    client = DaemonClient(run)
    while True:
        try:
            answer = client.ping(max(min(wait_s, 2.0), 0.1))
        except (Unavailable, Refused):
            pass
        else:
            return {**answer, "running": True, "answering": True, "pid": answer["pid"]}
        pid = read_pid(run)
        if pid is None or not _alive(pid) or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    if pid is None or not _alive(pid):
        return {"running": False, "answering": False, "pid": None}
    probe = runlock.FileLock(run / f"{DAEMON_ROLE}.lock")
    if probe.acquire():  # nobody holds it: the pid file is stale
        probe.release()
        return {"running": False, "answering": False, "pid": None}
    return {"running": True, "answering": False, "pid": pid}


def _alive(pid: int) -> bool:
    if os.name == "nt":
        return True  # no cheap probe there; the lock decides
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, as another user
    return True
