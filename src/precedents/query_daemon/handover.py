"""`remember`'s note handed to the daemon (issue #29): the CLI writes the note, the daemon
takes it at once and indexes it with its model on its own time, so the CLI neither loads
a model (seconds) nor imports LanceDB. A daemon that is down is started, as the hook
starts it, and handed the note as soon as it listens: well before its model is loaded.

Standard library and the protocol only: this runs in the CLI, before anything heavy.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from precedents import protocol
from precedents.protocol import DaemonClient, Refused, Unavailable
from precedents.query_daemon import client as daemon_client

if TYPE_CHECKING:
    from precedents.config import Settings

# How long a note waits for a daemon this process started to listen (a Python start and
# the server's imports: 0.3-1 s on a busy 2-core machine) before it is indexed in-process.
HAND_OVER_S = 5.0
# The daemon takes a note at once; past this it is hung, or the machine is.
REMEMBER_S = 5.0


def hand_over(settings: Settings, path: str, project: str, *, start: bool) -> bool | None:
    """Hand note ``path`` (of project key ``project``) to the daemon: whether its model was
    loaded when it took the note (False: indexed once it is), or None when no daemon took
    it (none runs and ``start`` is off or none came up; an older daemon): index it here."""
    client = DaemonClient(settings.run_dir)
    try:
        return client.remember(path, project, REMEMBER_S)["loaded"]
    except Unavailable as exc:
        if exc.why == "timeout":  # it was sent, and the daemon is slow: not indexed twice
            return False
    except Refused:  # an older daemon (no such op), or one stopping
        return None
    return _start_and_hand_over(settings, client, path, project) if start else None


def start_early() -> None:
    """Start the daemon of the state folder if none listens, before `remember`'s imports
    (cli/fast.py): its start overlaps them, and :func:`hand_over` finds it listening or
    about to. A daemon already there, or one started within the minute, is left be."""
    from pathlib import Path

    home = Path(protocol.default_home())  # the state folder, as config.state_dir reads it
    client = DaemonClient(home / "run")
    if not client.listening(0.5):
        daemon_client.ensure_daemon(home, client, wait_s=0.0)


def _start_and_hand_over(
    settings: Settings, client: DaemonClient, path: str, project: str
) -> bool | None:
    daemon_client.ensure_daemon(settings.home, client, wait_s=0.0)  # starts it, waits not
    deadline = time.monotonic() + HAND_OVER_S
    while time.monotonic() < deadline and _coming_up(str(settings.run_dir)):
        try:
            return client.remember(path, project, REMEMBER_S)["loaded"]
        except Unavailable as exc:
            if exc.why == "timeout":  # sent, and it is slow: it has the note
                return False
        except Refused:
            return None
        time.sleep(0.05)
    return None


def _coming_up(run: str) -> bool:
    """Whether a daemon process is there to wait for: the one its pid file names (it has
    claimed the folder) or the spawn stamp's (just started). None started (a full disk,
    one started within the minute that died): not worth :data:`HAND_OVER_S` of waiting."""
    if os.name == "nt":
        return True  # no cheap liveness probe: the deadline alone
    for name in (protocol.PID_NAME, protocol.SPAWN_STAMP):
        try:
            with open(os.path.join(run, name)) as fh:
                os.kill(int(fh.read().strip()), 0)
        except (OSError, ValueError):
            continue
        return True
    return False
