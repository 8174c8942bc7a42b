"""A project's identity: its root, its Claude Code folder name, the keys its rows are
stored under. Split from :mod:`precedents.ingest.sources` (which re-exports it)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

from precedents.kinds import SHARED_PROJECT, git_root

CLAUDE_NAME_LIMIT = 200
UNRESOLVED_PREFIX = "claude:"


def encode_project_path(path: str) -> str:
    """Claude Code's folder name for a project path (SPEC §2).

    Every character outside ``[a-zA-Z0-9]`` becomes ``-``; names over 200
    characters are cut to 200 plus ``-<hash>`` (so long ones match by prefix).
    """
    encoded = re.sub(r"[^a-zA-Z0-9]", "-", path)
    if len(encoded) > CLAUDE_NAME_LIMIT:
        digest = hashlib.sha256(path.encode()).hexdigest()[:8]
        encoded = f"{encoded[:CLAUDE_NAME_LIMIT]}-{digest}"
    return encoded


def project_root(path: str | Path) -> str:
    """A project's identity: the absolute path of the git root above ``path``, or ``path``."""
    return str(git_root(path))


def project_keys(root: str) -> list[str]:
    """Every project key rows of ``root`` may be stored under, plus shared rules."""
    return [root, UNRESOLVED_PREFIX + encode_project_path(root), SHARED_PROJECT]


def claude_folder_matches(folder_name: str, root: str) -> bool:
    """Whether a ``~/.claude/projects`` folder name belongs to project ``root``."""
    encoded = encode_project_path(root)
    if len(encoded) > CLAUDE_NAME_LIMIT:
        return folder_name.startswith(encoded[:CLAUDE_NAME_LIMIT])
    return folder_name == encoded


def resolve_claude_project(folder: Path) -> str:
    """The project root a Claude Code project folder stands for.

    The folder name cannot be decoded (``-`` is ambiguous), so the ``cwd``
    recorded in its transcripts is used; failing that the name is kept as an
    unresolved key that :func:`project_keys` still matches at query time.
    """
    for cwd in _transcript_cwds(folder):
        root = project_root(cwd)
        if claude_folder_matches(folder.name, cwd) or claude_folder_matches(folder.name, root):
            return root
    return UNRESOLVED_PREFIX + folder.name


def _transcript_cwds(folder: Path) -> Iterator[str]:
    try:
        logs = sorted(folder.glob("*.jsonl"))
    except OSError:
        return
    for log_path in logs[:20]:
        try:
            with log_path.open("rb") as fh:
                for _, raw in zip(range(50), fh, strict=False):
                    try:
                        obj = json.loads(raw)
                    except ValueError:
                        continue
                    if isinstance(obj, dict) and isinstance(obj.get("cwd"), str):
                        yield obj["cwd"]
                        break
        except OSError:
            continue
