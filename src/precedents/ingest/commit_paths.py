"""Where a commit record and a project's commit state live: names the indexer
(ingest/commit_index.py) and the daemon (recall/commit_files.py) share, standard
library only so the daemon imports nothing else of the indexer."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Final

FOLDER: Final = "commits"


def commit_path(root: str, sha: str) -> str:
    """The record path of commit ``sha`` of the repository at ``root``: ``ROOT@SHA12``
    (unique per record; not under ``ROOT/``, so no folder's pass takes it for a file)."""
    return f"{root}@{sha[:12]}"


def commit_short(path: str) -> str:
    """The short sha of a commit record's path ``ROOT@SHA12``."""
    return path.rpartition("@")[2][:7]


def state_key(root: str) -> str:
    """The file name stem of a project's commit state."""
    return hashlib.sha256(root.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def state_path(cache_dir: Path, root: str) -> Path:
    """The indexer's state of project ``root``: its head and path history."""
    return cache_dir / FOLDER / f"{state_key(root)}.json"


def files_map_path(cache_dir: Path, root: str) -> Path:
    """The file hook's map of project ``root`` (and its git problems, for ``status``)."""
    return cache_dir / FOLDER / f"{state_key(root)}.files.json"


def read_problems(cache_dir: Path) -> list[dict[str, str]]:
    """Every project's git problems as the last pass found them (for ``status``)."""
    out: list[dict[str, str]] = []
    try:
        found = sorted((cache_dir / FOLDER).glob("*.files.json"))
    except OSError:
        return out
    for path in found:
        try:
            data = json.loads(path.read_text("utf-8"))
            out += [{"project": str(data["root"]), "problem": str(p)} for p in data["problems"]]
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out
