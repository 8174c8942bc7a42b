"""`precedents remember`: save a memory note where Claude Code keeps the project's notes.

The note is a Markdown file with front matter (``name``, ``description``,
``date``) in the project's ``~/.claude/projects/<encoded root>/memory/``
folder — the same files the user already owns and Claude Code reads. Secrets
are masked *before* the file is written: a note is stored in clear on disk,
and the indexer would mask them anyway, but the file itself must not hold
them either.

With ``--team`` the note goes to the repository's team folder instead
(ingest/team.py), with ``author`` and ``created`` in place of ``date``, to be
committed: see :mod:`precedents.ingest.promote`.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from precedents.errors import NoteExists, UsageError, disk_full, is_disk_full
from precedents.ingest.sources import claude_folder_matches, encode_project_path
from precedents.secrets.mask import mask_secrets
from precedents.text import one_line

if TYPE_CHECKING:
    from precedents.config import Settings
    from precedents.models.embedding import Embedder

NAME_CHARS = 80
DESCRIPTION_CHARS = 200


def memory_folder(claude_dir: Path, root: str) -> Path:
    """The memory folder of project ``root``: the Claude Code folder that already
    stands for it, else the one Claude Code would create for it."""
    projects = claude_dir / "projects"
    try:
        folders = sorted(p for p in projects.iterdir() if p.is_dir())
    except OSError:
        folders = []
    for folder in folders:
        if claude_folder_matches(folder.name, root):
            return folder / "memory"
    return projects / encode_project_path(root) / "memory"


def _first_sentence(text: str) -> str:
    line = one_line(text)
    found = re.match(r"(.+?[.!?])(?:\s|$)", line)
    return (found.group(1) if found else line)[:DESCRIPTION_CHARS]


def _free_path(folder: Path, name: str) -> Path:
    slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")[:60] or "note"
    path = folder / f"{slug}.md"
    n = 2
    while path.exists():
        path = folder / f"{slug}_{n}.md"
        n += 1
    return path


def today() -> str:
    """The ISO date a note is written on."""
    return _dt.date.today().isoformat()


def write_note(
    folder: Path, text: str, title: str | None = None, *, author: str | None = None
) -> Path:
    """Write a new note (never overwriting one) and return its path.

    ``title`` defaults to the text's first line; the description is its first
    sentence. Both, and the body, are masked before anything is written. With
    ``author`` it is a team note: ``author`` and ``created`` instead of ``date``.
    """
    body = mask_secrets(text.strip())
    if not body:
        raise UsageError("nothing to remember: the text is empty")
    name = one_line(mask_secrets(title) if title else body.splitlines()[0])[:NAME_CHARS]
    meta = {"name": name, "description": _first_sentence(body)}
    if author is None:
        meta["date"] = today()
    else:
        meta.update(author=one_line(mask_secrets(author))[:NAME_CHARS], created=today())
    return create_note(folder, name, front_matter(meta), body)


def front_matter(meta: Mapping[str, object]) -> str:
    """``meta`` as a note's front matter block (YAML, in the order given)."""
    dumped = yaml.safe_dump(dict(meta), allow_unicode=True, sort_keys=False, width=1000)
    return f"---\n{dumped}---\n"


def create_note(folder: Path, name: str, front: str, body: str, file: str = "") -> Path:
    """Create ``folder``/``file`` (default: a free name made from ``name``) holding ``front``
    and ``body``: never over another file, never left half-written. A file of that name
    already there is a :class:`NoteExists`."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / file if file else _free_path(folder, name)
        # O_EXCL: two notes saved at once never overwrite each other.
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise NoteExists(f"{path} exists already; nothing was written") from None
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(f"{front}\n{body}\n")
        except OSError:
            # Ours alone (O_EXCL): a half-written note must not stay to be indexed.
            path.unlink(missing_ok=True)
            raise
    except OSError as exc:
        if is_disk_full(exc):
            raise disk_full(exc, folder, "free some space and save the note again") from None
        raise UsageError(f"{folder}: cannot write the note ({exc.strerror})") from None
    return path


def index_remembered(settings: Settings, model: Embedder, path: Path, project: str) -> int:
    """Index a note just saved (``path``, of project key ``project``) with ``model``, as the
    one writer; the number of files indexed. The daemon's ``remember`` op calls it with its
    warm model, `remember` itself with one it loads when no daemon can be had (api)."""
    from precedents.ingest.indexer import index_note  # LanceDB: only where it indexes

    return index_note(settings, model, path, project)
