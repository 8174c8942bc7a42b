"""Team notes: memory notes a team shares through its repository (issue #23).

A repository's team notes live in one folder of the repository, by default
``.precedents/notes/``. A team may name another folder, committed with the
repository, in ``.precedents/config.toml``::

    notes = "docs/team-notes"

The folder must stay inside the repository: a committed file must never point
the indexer at a teammate's home folder or at ``/``. A config that cannot be
read, or names a folder outside the repository, is reported (:class:`TeamConfig`
``.problem``) and the default folder is used: a teammate's typo must not make
the team's notes disappear without a word.

A team note is a note of the repository's project, stored with ``origin =
"team"`` and its ``author`` (front matter ``author``), dated by ``created``
(else ``date``): every channel shows it as ``note (team, author, date)``.
"""

from __future__ import annotations

import contextlib
import getpass
import subprocess
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from precedents.errors import UsageError
from precedents.files import read_regular
from precedents.inert import name_key
from precedents.kinds import git_root
from precedents.secrets.mask import mask_secrets
from precedents.text import iso_date, one_line

TEAM_DIR = ".precedents"
CONFIG_NAME = "config.toml"
DEFAULT_NOTES = Path(TEAM_DIR) / "notes"
# The `origin` a team note is stored with (a personal note's is "").
TEAM = "team"
GIT_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class TeamConfig:
    """Where a repository keeps its team notes, and what was wrong with its config."""

    root: Path
    notes: Path
    problem: str = ""  # why the config was not followed ("" when it was, or there is none)

    @property
    def config_file(self) -> Path:
        """The repository's team config (it may not exist)."""
        return self.root / TEAM_DIR / CONFIG_NAME


def team_config(root: Path) -> TeamConfig:
    """The team-notes folder of the repository at ``root`` (its git root)."""
    default = root / DEFAULT_NOTES
    path = root / TEAM_DIR / CONFIG_NAME
    try:  # a link out of the repository, a FIFO, a huge file: refused (issue #28)
        data = tomllib.loads(read_regular(path, within=root).decode("utf-8"))
    except FileNotFoundError:
        return TeamConfig(root, default)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        # A committed file is not the user's: what it says reaches `reindex`, `status`
        # and the watcher's log masked (issue #28), as every other text the index shows.
        why = mask_secrets(f"cannot read it ({exc})")
        return TeamConfig(root, default, f"{why}; using {DEFAULT_NOTES}")
    value = data.get("notes", str(DEFAULT_NOTES))
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        return TeamConfig(root, default, f"`notes` must be a folder name; using {DEFAULT_NOTES}")
    folder = (root / value).resolve()
    if not folder.is_relative_to(root.resolve()) or folder == root.resolve():
        shown = mask_secrets(one_line(value[:200]))
        why = f"`notes = {shown!r}` leaves the repository; using {DEFAULT_NOTES}"
        return TeamConfig(root, default, why)
    return TeamConfig(root, root / Path(value))


def team_notes_dir(root: Path) -> Path:
    """The folder of the repository's team notes (it may not exist yet)."""
    return team_config(root).notes


def is_team_note(path: Path, root: Path) -> bool:
    """Whether ``path`` is a team note of the repository at ``root``."""
    if not root.is_absolute():  # an unresolved project key ("claude:..."): no repository
        return False
    return path.absolute().is_relative_to(team_notes_dir(root).absolute())


def repository(start: str | Path) -> Path:
    """The git root of ``start``; a :class:`UsageError` when ``start`` is in no repository
    (team notes are shared through one)."""
    root = git_root(start)
    if not (root / ".git").exists():
        raise UsageError(
            f"{start} is not inside a git repository: team notes are shared through one "
            "(run it in your clone, or use --project)"
        )
    return root


def author_of(root: Path) -> str:
    """Who writes a team note in ``root``: git's ``user.name`` there, else the OS user."""
    try:
        found = subprocess.run(
            ["git", "-C", str(root), "config", "user.name"],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
        name = one_line(found.stdout) if found.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        name = ""
    if name:
        return name
    try:
        return one_line(getpass.getuser()) or "unknown"
    except (OSError, KeyError):  # no login name and no passwd entry (a container)
        return "unknown"


def is_local_user(author: str, project: str) -> bool:
    """Whether a team note's ``author`` is the name of the user on this machine (git's
    ``user.name``, the local part of ``user.email``, the OS login), look-alike letters
    and case aside: front matter proves nothing, so such a note is shown as
    ``(team, "Alice" unverified, …)``, never as the user's own word."""
    return bool(author.strip()) and name_key(author) in _local_names(project)


def warm_local_names(projects: Iterable[str]) -> None:
    """Read the local user's names of ``projects`` now (the daemon's refresh thread), so
    no hook's answer waits on the ``git config`` they take."""
    for project in projects:
        _local_names(project)


@lru_cache(maxsize=64)
def _local_names(project: str) -> frozenset[str]:
    """The local user's names (:func:`precedents.inert.name_key`), read once per project
    (a process that lives through a change of ``user.name`` keeps the old one)."""
    names: set[str] = set()
    try:
        found = subprocess.run(
            ["git", "-C", project or ".", "config", "--get-regexp", r"^user\.(name|email)$"],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
        for line in found.stdout.splitlines() if found.returncode == 0 else []:
            key, _, value = line.partition(" ")
            names.add(value.partition("@")[0] if key == "user.email" else value)
    except (OSError, subprocess.SubprocessError):
        pass
    with contextlib.suppress(OSError, KeyError):  # no login name, no passwd entry
        names.add(getpass.getuser())
    return frozenset(name_key(n) for n in names if n.strip())


def team_fields(front: Mapping[str, Any], date: str) -> tuple[str, str]:
    """A team note's (author, date) from its front matter (read from the masked text):
    ``author`` (also under ``metadata:``), and ``created`` before ``date`` (the note
    parser's ``date``, which reads ``date`` first)."""
    author = ""
    created = ""
    for source in (front, front.get("metadata")):
        if not isinstance(source, Mapping):
            continue
        value = source.get("author")
        if not author and value is not None and not isinstance(value, dict | list):
            author = one_line(str(value))
        created = created or (iso_date(source.get("created")) or "")
    return author, created or date
