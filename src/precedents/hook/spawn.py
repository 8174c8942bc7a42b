"""Starting the daemon from the hook (stdlib only, like :mod:`.core`), and telling whether
one is on its way up.

Apart from :mod:`.core` because a hook whose daemon is up never needs it: it is
imported only when a daemon is down or starting, so the usual call does not pay
for reading it. The MCP server starts its daemon through here too (``api``).

- A daemon start is tried at most once per :data:`RESPAWN_S` (the spawn stamp
  in ``run/``): a daemon that cannot start would otherwise be started again on
  every message. A full disk starts none (:data:`MIN_FREE_BYTES`).
- The daemon runs detached, its output to nowhere, with this package first on
  its ``PYTHONPATH`` (the hook may run under ``python -I -S``).
"""

from __future__ import annotations

import os
import sys
import time

from precedents.protocol import PID_NAME, SPAWN_STAMP

RESPAWN_S = 60.0
# How long an empty spawn stamp (a daemon being started this moment) counts as one on
# its way up.
LAUNCH_GRACE_S = 1.0
# The run folder's disk must have this much room before a daemon is started again (a
# daemon start needs a pid file and log lines; on a full disk it would only die again).
MIN_FREE_BYTES = 1024 * 1024

# The daemon this process started, if any: whether it still runs is asked of it,
# not of its pid (a child that died is a zombie, and kill(pid, 0) finds it alive).
SPAWNED: list[object] = []


def daemon_alive(run: str) -> bool:
    """Whether a daemon process owns ``run`` (it may still be loading the model)."""
    try:
        with open(os.path.join(run, PID_NAME)) as fh:
            pid = int(fh.read().strip())
        if os.name == "nt":
            return False  # no cheap liveness probe; the daemon's lock stops doubles
        os.kill(pid, 0)
        return True
    except (OSError, ValueError):
        return False


def _disk_full(folder: str) -> bool:
    """Whether the disk holding ``folder`` has less than :data:`MIN_FREE_BYTES` left."""
    statvfs = getattr(os, "statvfs", None)
    if statvfs is None:
        return False  # Windows: no cheap probe; the stamp alone paces the starts
    try:
        st = statvfs(folder)
    except OSError:
        return False
    return bool(st.f_bavail * st.f_frsize < MIN_FREE_BYTES)


def _may_spawn(run: str) -> bool:
    """At most one daemon start per :data:`RESPAWN_S`: no crash loop.

    A daemon that cannot start (a model that is not installed, a broken
    config) exits; without this stamp every message would start another one
    and burn seconds of CPU loading torch each time. A full disk starts none
    (it would die at once), whatever the stamp says.
    """
    stamp = os.path.join(run, SPAWN_STAMP)
    try:
        if time.time() - os.stat(stamp).st_mtime < RESPAWN_S:
            return False
    except OSError:
        pass
    if _disk_full(run if os.path.isdir(run) else os.path.dirname(run)):
        return False
    try:
        os.makedirs(run, mode=0o700, exist_ok=True)
        os.close(os.open(stamp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
        os.utime(stamp)
    except OSError:
        return False  # a run folder we cannot write: no daemon could live there either
    return True


def start_daemon(home: str) -> bool:
    """Start the daemon detached in the background; False when one is already starting.

    A second daemon started by a racing hook exits at once (the daemon's lock).
    """
    run = os.path.join(home, "run")
    if daemon_alive(run) or not _may_spawn(run):
        return False
    import subprocess

    env = dict(os.environ)
    # The hook may run under `python -I -S` from a launcher; give the daemon the
    # same package folder, ahead of whatever site-packages hold.
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH", "")) if p)
    env["PRECEDENTS_HOME"] = home
    kwargs: dict[str, object] = {}
    if os.name == "nt":
        kwargs["creationflags"] = 0x00000008 | 0x00000200 | 0x08000000  # detached, group, no window
    else:
        kwargs["start_new_session"] = True
    child = subprocess.Popen(
        [sys.executable, "-m", "precedents.query_daemon"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        cwd=home if os.path.isdir(home) else None,
        env=env,
        **kwargs,  # type: ignore[call-overload]
    )
    SPAWNED.append(child)
    # The stamp says which daemon is on its way up, for hooks that come while it starts.
    try:
        fd = os.open(os.path.join(run, SPAWN_STAMP), os.O_WRONLY | os.O_TRUNC)
        try:
            os.write(fd, b"%d\n" % child.pid)
        finally:
            os.close(fd)
    except OSError:
        pass  # an empty stamp says "starting" for a moment; the pid file says it after
    return True


def coming_up(run: str) -> bool:
    """Whether a daemon for ``run`` is alive or on its way up: the one this process
    started still runs, a live process holds the pid file, or the spawn stamp names a
    live process (empty: one is being started this moment)."""
    for child in SPAWNED:
        if child.poll() is None:  # type: ignore[attr-defined]
            return True
    if daemon_alive(run):
        return True
    stamp = os.path.join(run, SPAWN_STAMP)
    try:
        age = time.time() - os.stat(stamp).st_mtime
        with open(stamp, "rb") as fh:
            text = fh.read(32).strip()
    except OSError:
        return False
    if not text:
        return 0 <= age < LAUNCH_GRACE_S
    # This process's own child was asked above: its pid may be a zombie's by now.
    if SPAWNED or not 0 <= age < RESPAWN_S or os.name == "nt":
        return False
    try:
        os.kill(int(text), 0)
    except (OSError, ValueError):
        return False
    return True
