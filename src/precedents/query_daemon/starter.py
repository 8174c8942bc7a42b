"""Starting the daemon from its clients (stdlib only), and telling whether one is on its
way up. The hook, the library's client (:mod:`.client`: the CLI and the MCP server,
through ``api``) and the daemon itself (which marks itself ready) all use it.

Standard library only, like :mod:`precedents.protocol`: the hook runs under
``python -I -S`` and reads this module only when its daemon is down or starting,
so the usual call does not pay for it.

- The spawn stamp (``run/daemon.spawned``) says when the last start that has not
  proved itself was made, and which pid it started. A daemon that becomes ready
  dates the stamp back (:func:`allow_respawn`): a daemon that answered and then
  died (``kill -9``, the OOM killer) is started again by the very next call.
- A start that never reached ready holds the next one back for :data:`RESPAWN_S`:
  a daemon that cannot start (a model that is not installed, a broken config)
  would otherwise be started again on every message, loading torch each time.
- A daemon stopped by a full disk dates the stamp back too; then no start is
  made while the disk has under :data:`MIN_FREE_BYTES` free, and the next one
  is made as soon as there is room.
- Two callers at once start one daemon: the check of the stamp and the start
  are made under an exclusive lock (``run/daemon.spawn.lock``, ``flock``). The
  loser then finds the fresh stamp naming a live process: one on its way up.
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
# Held while one caller decides and starts; a start takes milliseconds (fork and exec),
# so a caller that waits longer than this for it gives up rather than its budget.
STARTER_LOCK = "daemon.spawn.lock"
LOCK_WAIT_S = 2.0
LOCK_POLL_S = 0.01

# The daemon this process started, if any: whether it still runs is asked of it,
# not of its pid (a child that died is a zombie, and kill(pid, 0) finds it alive).
SPAWNED: list[object] = []


def daemon_alive(run: str) -> bool:
    """Whether a daemon process owns ``run`` (it may still be loading the model)."""
    try:
        with open(os.path.join(run, PID_NAME)) as fh:
            pid = int(fh.read().strip())
    except (OSError, ValueError):
        return False
    if os.name == "nt":
        return False  # no cheap liveness probe; the daemon's lock stops doubles
    return _running(pid)


def _running(pid: int) -> bool:
    """Whether ``pid`` is a process that runs: a zombie does not (a daemon killed with
    ``kill -9`` stays one until its new parent reaps it, which a container whose first
    process is no init never does, and ``kill(pid, 0)`` finds a zombie alive)."""
    try:
        os.kill(pid, 0)
    except OSError:
        return False  # gone, or another user's process under a reused pid: not our daemon
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read(512).rpartition(b")")[2].split()[:1]
    except OSError:
        return True  # no /proc (macOS, the BSDs): their init reaps at once
    return state != [b"Z"]


def allow_respawn(home: str) -> None:
    """Let the next call start a daemon at once: the daemon calls this when it is ready
    (it proved it can start) and when a full disk stopped it (it waits for room instead).

    Dates the stamp back rather than removing it or writing to it: changing a
    file's times needs no room on the disk.
    """
    try:  # noqa: SIM105 - contextlib would be one more import on the hook's path
        os.utime(os.path.join(home, "run", SPAWN_STAMP), (0, 0))
    except OSError:
        pass  # no stamp: nothing holds the next start back


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
    """Whether a start may be made now (and the stamp taken for it): none while the last
    start that has not reached ready is under :data:`RESPAWN_S` old, none on a full disk.

    Called under the starter lock, after the run folder is made.
    """
    stamp = os.path.join(run, SPAWN_STAMP)
    try:
        if time.time() - os.stat(stamp).st_mtime < RESPAWN_S:
            return False
    except OSError:
        pass
    if _disk_full(run):
        return False
    try:
        os.close(os.open(stamp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
        os.utime(stamp)
    except OSError:
        return False  # a run folder we cannot write: no daemon could live there either
    return True


def _lock(run: str) -> int | None:
    """The starter lock's descriptor, held; None when it cannot be had within
    :data:`LOCK_WAIT_S` (another caller is starting one) or the folder is not writable.

    Windows has no flock here: -1, no lock (a racing second daemon exits at once on
    the daemon's own lock, having cost one interpreter start).
    """
    if os.name == "nt":
        return -1
    import fcntl

    try:
        fd = os.open(os.path.join(run, STARTER_LOCK), os.O_WRONLY | os.O_CREAT, 0o600)
    except OSError:
        return None
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError:
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
        time.sleep(LOCK_POLL_S)


def start_daemon(home: str) -> bool:
    """Start the daemon detached in the background; False when one is alive or on its
    way up, when the last start never reached ready under :data:`RESPAWN_S` ago, or
    when the disk is full."""
    run = os.path.join(home, "run")
    if daemon_alive(run):
        return False
    try:
        os.makedirs(run, mode=0o700, exist_ok=True)
    except OSError:
        return False  # a run folder we cannot make: no daemon could live there either
    fd = _lock(run)
    if fd is None:
        return False
    try:
        # Asked again under the lock: a caller that held it may have just started one.
        if daemon_alive(run) or not _may_spawn(run):
            return False
        _launch(home, run)
        return True
    finally:
        if fd >= 0:
            os.close(fd)  # closing drops the flock


def _launch(home: str, run: str) -> None:
    """The daemon process itself, and its pid in the stamp."""
    import subprocess

    env = dict(os.environ)
    # The caller may run under `python -I -S` from a launcher; give the daemon the
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
    # The stamp says which daemon is on its way up, for callers that come while it starts.
    # Written at once: the daemon dates it back only seconds later, once it is ready.
    try:
        fd = os.open(os.path.join(run, SPAWN_STAMP), os.O_WRONLY | os.O_TRUNC)
        try:
            os.write(fd, b"%d\n" % child.pid)
        finally:
            os.close(fd)
    except OSError:
        pass  # an empty stamp says "starting" for a moment; the pid file says it after


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
        return _running(int(text))
    except ValueError:
        return False
