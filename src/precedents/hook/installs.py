"""Which settings files `install-hook` wrote precedents' hooks into: ``hook-installs.json``.

`precedents uninstall` (service/uninstall.py) removes our hooks from every file
listed here, besides the user's own ``settings.json``. Without the record it
could not know the projects: a project's ``.claude/settings.local.json`` is
found nowhere else. Installs made before the record existed are not in it
(docs/plugin.md says how to remove them). The file lives in the state folder,
so `uninstall` reads it before it removes that folder.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

RECORD_FILE = "hook-installs.json"

log = logging.getLogger("precedents.hook")


def recorded(home: Path) -> list[Path]:
    """The settings files recorded in ``home`` (none when the record is missing or unreadable)."""
    try:
        data = json.loads((home / RECORD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    paths = data.get("settings") if isinstance(data, dict) else None
    if not isinstance(paths, list):
        return []
    return [Path(p) for p in paths if isinstance(p, str) and p]


def record(home: Path, path: Path, *, present: bool) -> None:
    """Add ``path`` to the record (``present``: it now holds our hooks) or drop it from it.

    Best effort: a state folder that cannot be written must not fail the install
    itself, whose hooks are in place; it is logged.
    """
    paths = [p for p in recorded(home) if p != path]
    if present:
        paths.append(path)
    target = home / RECORD_FILE
    try:
        if not paths and not target.exists():
            return
        home.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(json.dumps({"settings": [str(p) for p in paths]}, indent=1) + "\n")
        os.replace(tmp, target)
    except OSError as exc:
        log.warning("could not record %s in %s: %s", path, target, exc.strerror or exc)
