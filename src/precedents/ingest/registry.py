"""Projects registered by their first session: the state folder's list of project roots.

Claude Code's projects folder names a project only once a transcript records its
``cwd``, and ``repos`` in config.toml is the user's to write. A project opened with
only the plugin installed is neither: the daemon registers it at its first hook
(:mod:`precedents.query_daemon.projects`), and every walk of the sources
(``reindex``, the watcher, ``status``) takes it on from here
(``configured_sources`` in :mod:`precedents.ingest.sources`).

The list is ``projects/registered.json`` in the state folder, alone in its folder so
that a running watcher can watch that folder and learn of a new project at once
(no restart, no 60 s rescan), without the events of the logs and the store.

Some folders are never a project however a session starts in them
(:func:`refused_root`): Claude Code started in the home folder or at ``/`` would
otherwise have the whole home walked and embedded.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from pathlib import Path

from precedents.config import ensure_private_dir
from precedents.runlock import FileLock, write_private

log = logging.getLogger("precedents.ingest")

REGISTRY_FOLDER = "projects"
REGISTRY_FILE = "registered.json"
# The watcher's claim in run/ (watcher/core.py ROLE). Not imported from there: that
# module brings watchdog and the indexer into the daemon, which only asks whether
# the lock is held.
WATCHER_ROLE = "watcher"
# Enough for anyone's projects; past it a registration is refused, not the file grown.
MAX_PROJECTS = 10_000

_write_lock = threading.Lock()


def registry_dir(home: Path) -> Path:
    """The folder of the registry (watched by a running watcher)."""
    return home / REGISTRY_FOLDER


def registry_path(home: Path) -> Path:
    """The registry file of the state folder ``home``."""
    return registry_dir(home) / REGISTRY_FILE


def registered(home: Path) -> list[str]:
    """The registered project roots, oldest first; [] when there are none or the file
    cannot be read (a damaged list costs the projects their registration, nothing else)."""
    try:
        data = json.loads(registry_path(home).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    roots = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(roots, list):
        return []
    return [r for r in roots if isinstance(r, str) and os.path.isabs(r)]


def register(home: Path, root: str) -> bool:
    """Add ``root`` to the registry; False when it was there already (or the list is full).

    Written whole and atomically (0600): a reader never sees half a list."""
    with _write_lock:
        roots = registered(home)
        if root in roots or len(roots) >= MAX_PROJECTS:
            return False
        ensure_private_dir(registry_dir(home))
        text = json.dumps({"projects": [*roots, root]}, indent=1) + "\n"
        write_private(registry_path(home), text)
    return True


def refused_root(
    root: str, home_folder: Path | None = None, state: Path | None = None
) -> str | None:
    """Why ``root`` is never registered nor indexed by a session starting in it, or None.

    The rule: not ``/`` (nor a drive root), not the user's home folder, nor any folder
    above it (``/home``, ``/Users``); a git repository inside the home folder, or any
    folder below it, is fine. The home folder itself as a git repository (dotfiles)
    is refused too: its root is the home folder. Nor a folder in the ``state`` folder
    (the daemon's own working folder)."""
    path = Path(root)
    if path.parent == path:
        return "the file system's root"
    if state is not None and path.is_relative_to(state):
        return "in the state folder"
    home = home_folder if home_folder is not None else _home()
    if home is None:
        return None
    if path == home:
        return "the home folder"
    if home.is_relative_to(path):
        return "a folder above the home folder"
    return None


def _home() -> Path | None:
    try:
        return Path(os.path.normpath(Path.home().absolute()))
    except (RuntimeError, KeyError):  # no HOME and no passwd entry
        return None


def watcher_running(run_dir: Path) -> bool:
    """Whether a watcher holds ``run_dir`` (its lock is taken). Probed with the lock
    alone, released at once: no pid file is touched."""
    path = run_dir / f"{WATCHER_ROLE}.lock"
    if not path.exists():
        return False
    probe = FileLock(path)
    try:
        if probe.acquire():
            probe.release()
            return False
    except OSError:
        return False
    return True


def registry_watch(home: Path) -> tuple[str, bool]:
    """The watch a watcher keeps on the registry's folder (made if missing): a project
    registered while it runs is taken on at once (watcher/core.py)."""
    folder = registry_dir(home)
    with contextlib.suppress(OSError):  # no room, read-only: watched once it appears
        ensure_private_dir(folder)
    return str(folder), False


def in_registry(home: Path, path: str) -> bool:
    """Whether a file-system event at ``path`` is the registry's (its folder's)."""
    return os.path.dirname(path) == str(registry_dir(home))
