"""The daemon seen from the library (``api``): ask it, else work in-process; start it and
wait for it; stop it. Every question goes through :class:`precedents.protocol.DaemonClient`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from precedents.protocol import DaemonClient, Refused, Unavailable
from precedents.query_daemon.starter import start_daemon

T = TypeVar("T")

# How long a caller that started the daemon waits for it (the model loads in seconds).
START_WAIT_S = 30.0


def daemon_or_here(
    run: Path, question: Callable[[DaemonClient], T | None], here: Callable[[], T]
) -> T:
    """``question`` put to the daemon of ``run``, whose model is warm (milliseconds, not a
    model load); ``here``, in this process, when none answers, it is still loading, it
    refuses, or ``question`` returns None (there is nothing to ask it)."""
    try:
        answer = question(DaemonClient(run))
    except (Unavailable, Refused):
        answer = None
    return here() if answer is None else answer


def ensure_daemon(home: Path, client: DaemonClient, wait_s: float = START_WAIT_S) -> bool:
    """Whether a daemon with its model loaded answers ``client``, within ``wait_s`` of
    starting one in the background (as the hook starts it) when none is ready."""
    if client.ready(2.0):
        return True
    start_daemon(str(home))
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if client.ready(2.0):
            return True
        time.sleep(0.2)
    return False


def stop_daemon(run: Path) -> bool:
    """Ask the daemon of ``run`` to exit; False when none answered."""
    try:
        DaemonClient(run).stop(2.0)
    except Unavailable:
        return False
    except Refused:
        pass  # it answered: it is there, and was asked
    return True
