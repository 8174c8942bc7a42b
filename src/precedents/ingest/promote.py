"""Saving notes for `remember` and `promote`: personal ones, and a team's (issue #23).

A team note is written into the repository's team folder (ingest/team.py) of
the git root of the current folder (or ``--project``), masked first, with
``name``, ``description``, ``author`` (git's ``user.name`` in that repository,
else the OS user) and ``created``. Nothing is committed: the answer names the
file and the exact ``git add`` to run, and the team pulls it from there.

``promote NOTE`` copies one of this project's personal notes into the team
folder the same way. NOTE is a path to a Markdown file, or the name of one of
the project's personal notes (``~/.claude/projects/<root>/memory/``): its file
name without ``.md``, or its front matter ``name`` (case, spaces and punctuation do
not count); a name that matches several notes is refused with their paths. The copy keeps the
note's file name and front matter, masked, and adds ``author`` (unless the note
names one) and ``created`` (the note's own date when it has one, else today).
The original is left as it is; a file of the same name in the team folder is
never overwritten (:class:`~precedents.errors.NoteExists`).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precedents.config import Settings
from precedents.errors import UsageError
from precedents.files import Refused, read_regular
from precedents.ingest import team
from precedents.ingest.chunking import is_memory_index, parse_note
from precedents.ingest.remember import (
    create_note,
    front_matter,
    memory_folder,
    today,
    write_note,
)
from precedents.ingest.sources import (
    claude_folder_matches,
    project_root,
    resolve_claude_project,
)
from precedents.secrets.mask import mask_secrets
from precedents.secrets.names import shown_path, withheld_reason
from precedents.text import normalize, split_front_matter

MAX_NOTE_BYTES = 1_000_000  # a note to promote; larger is no note


@dataclass(frozen=True)
class Saved:
    """A note just written, and where the index keeps it."""

    path: Path
    root: str  # the project root it belongs to
    key: str  # the project key its rows are stored under
    # Whether a running watcher indexes it (it watches that folder, or will on the
    # folder's creation); else it is indexed at once, by the daemon or here.
    watched: bool = True
    team: bool = False
    problem: str = ""  # what was wrong with the team's config.toml (the default folder was used)

    def to_json(self, cwd: Path | None = None) -> dict[str, Any]:
        """``path`` and ``project``; for a team note also ``team`` and ``git_add``, the
        command that stages it (nothing is committed for the user), and ``problem``
        when the team's config could not be followed."""
        out: dict[str, Any] = {"path": str(self.path), "project": self.root}
        if self.team:
            out.update(team=True, git_add=git_add(self.path, Path(self.root), cwd or Path.cwd()))
        if self.problem:
            out["problem"] = self.problem
        return out


def save_personal(settings: Settings, text: str, title: str | None, project: str | None) -> Saved:
    """`remember`: a note in the project's Claude Code memory folder."""
    root = project_root(project or Path.cwd())
    folder = memory_folder(settings.claude_dir, root)
    path = write_note(folder, text, title)
    return Saved(path, root, resolve_claude_project(folder.parent))


def save_team(settings: Settings, text: str, title: str | None, project: str | None) -> Saved:
    """`remember --team`: a note in the repository's team folder."""
    root = team.repository(project or Path.cwd())
    path = write_note(team.team_notes_dir(root), text, title, author=team.author_of(root))
    return _team_saved(settings, path, root)


def promote(settings: Settings, note: str, project: str | None) -> Saved:
    """`promote NOTE`: a copy of a personal note in the repository's team folder."""
    root = team.repository(project or Path.cwd())
    source = find_note(settings, note, root)
    folder = team.team_notes_dir(root)
    if source.absolute().is_relative_to(folder.absolute()):
        raise UsageError(f"{source} is a team note already")
    if withheld_reason(source.name) is not None:  # it would be committed for all to read
        raise UsageError(f"{shown_path(source)}: its file name holds a secret; rename it first")
    try:  # named by the user: a link is followed, but a FIFO or a device is no note
        data = read_regular(source, within=None, limit=MAX_NOTE_BYTES)
        text = data.decode("utf-8", errors="replace")
    except Refused as exc:
        raise UsageError(f"{source}: {exc.reason}") from None
    except OSError as exc:
        raise UsageError(f"{source}: cannot read it ({exc.strerror})") from None
    masked = mask_secrets(normalize(text))
    found = split_front_matter(masked, lenient=True)
    meta = parse_note(masked, source.stem)
    front: dict[str, Any] = dict(found.data or {})
    body = found.body if found.data is not None else masked
    if not body.strip() and not front:
        raise UsageError(f"{source} is empty: nothing to promote")
    front.setdefault("name", meta.name)
    if meta.description:
        front.setdefault("description", meta.description)
    front.setdefault("author", mask_secrets(team.author_of(root)))
    front.setdefault("created", meta.date or today())
    path = create_note(folder, meta.name, front_matter(front), body.strip(), source.name)
    return _team_saved(settings, path, root)


def find_note(settings: Settings, note: str, root: Path) -> Path:
    """The note ``note`` names: a Markdown file, else one of ``root``'s personal notes by
    file name or front matter ``name``; a :class:`UsageError` for none or several."""
    given = Path(note).expanduser()
    if given.is_file():
        if given.suffix.lower() not in (".md", ".mdc"):
            raise UsageError(f"{note}: not a Markdown note")
        return given.absolute()
    folder = memory_folder(settings.claude_dir, str(root))
    wanted = _key(note.removesuffix(".md"))
    try:
        notes = sorted(p for p in folder.glob("*.md") if not is_memory_index(p))
    except OSError:
        notes = []
    matches = [p for p in notes if wanted in (_key(p.stem), _key(_name(p)))]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise UsageError(
            f"{note[:200]!r}: no such file, and no personal note of {root} by that name "
            f"(its notes: {folder})"
        )
    listed = ", ".join(str(p) for p in matches[:5])
    raise UsageError(f"{note[:200]!r} names {len(matches)} notes ({listed}): give its path")


def _key(name: str) -> str:
    """A name as compared: case, spaces and punctuation do not count ("Cache warm-up",
    "cache_warm_up" and "cache-warm-up" name one note)."""
    return re.sub(r"[\W_]+", "_", name.casefold()).strip("_")


def _name(path: Path) -> str:
    try:
        data = read_regular(path, within=path.parent, limit=MAX_NOTE_BYTES)
        return parse_note(data.decode("utf-8", errors="replace"), path.stem).name
    except OSError:  # Refused too: a FIFO among the notes must not hang `promote`
        return ""


def _team_saved(settings: Settings, path: Path, root: Path) -> Saved:
    """A team note of ``root``: watched when the watcher discovers that project (one
    Claude Code was used in, or a configured repository), else indexed at once."""
    projects = settings.claude_dir / "projects"
    try:
        known = any(claude_folder_matches(p.name, str(root)) for p in projects.iterdir())
    except OSError:
        known = False
    repos = {Path(project_root(r)) for r in settings.repos}
    config = team.team_config(root)
    problem = f"{shown_path(config.config_file)}: {config.problem}" if config.problem else ""
    return Saved(path, str(root), str(root), known or root in repos, True, problem)


def git_add(path: Path, root: Path, cwd: Path) -> str:
    """The exact command that stages ``path`` for a commit, from ``cwd``."""
    inside = cwd.absolute().is_relative_to(root.absolute())
    if inside:
        return f"git add {shlex.quote(os.path.relpath(path, cwd))}"
    return f"git -C {shlex.quote(str(root))} add {shlex.quote(str(path.relative_to(root)))}"
