"""The repositories of an org build: the ``--repos-from`` file, and git URLs cloned.

One repository a line: a local path or a git URL, optionally ``name=NAME`` after
it; ``#`` starts a comment, blank lines are skipped. A repository's name (its
``project`` in the table) defaults to the folder's or URL's last part, less
``.git``. Two lines of one name are a usage error: the second would replace the
first's rows. A git URL is cloned shallow into a temporary folder; a clone that
fails is that repository's error (its served rows are kept), its URL masked (a
token in ``https://user:TOKEN@host/…`` is never echoed).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from precedents.errors import UsageError
from precedents.org.location import shown

CLONE_TIMEOUT_S: Final = 600
_URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|[\w.-]+@[\w.-]+:)", re.IGNORECASE)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


@dataclass(frozen=True)
class RepoSpec:
    """One line of the repos file: the repository's name and where it is."""

    name: str
    source: str  # as written: a path (made absolute) or a git URL

    @property
    def is_url(self) -> bool:
        """Whether the source is a git URL (cloned), not a folder here."""
        return bool(_URL.match(self.source))


def read_repos(path: Path) -> list[RepoSpec]:
    """The repositories the file at ``path`` lists; :class:`UsageError` for a file that
    cannot be read, a bad name, or a name given twice."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--repos-from {path}: cannot read it ({exc})") from None
    return parse_repos(text, path.parent)


def parse_repos(text: str, base: Path) -> list[RepoSpec]:
    """The repositories of a repos file's ``text`` (relative paths from ``base``)."""
    out: dict[str, RepoSpec] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        parts = line.split()
        source, name = parts[0], ""
        for extra in parts[1:]:
            if not extra.startswith("name="):
                raise UsageError(f"repos file line {number}: {shown(extra)!r} is not name=NAME")
            name = extra.removeprefix("name=")
        if not _URL.match(source):
            source = str((base / Path(source).expanduser()).absolute())
        name = name or default_name(source)
        if not _NAME.match(name):
            raise UsageError(f"repos file line {number}: {shown(name)!r} is not a usable name")
        if name in out:
            raise UsageError(
                f"repos file line {number}: the name {name!r} is given twice "
                f"({shown(out[name].source)} and {shown(source)}); add name=… to one"
            )
        out[name] = RepoSpec(name, source)
    return list(out.values())


def default_name(source: str) -> str:
    """A folder's or URL's last part, less ``.git`` (``…/name/.git``: ``name``)."""
    last = re.split(r"[/:]", source.rstrip("/").removesuffix("/.git"))[-1]
    return last.removesuffix(".git")


def clone(spec: RepoSpec, into: Path) -> tuple[Path, str]:
    """Clone ``spec``'s URL shallow into ``into``: the folder and its head. Raises
    :class:`RuntimeError` with one masked line when git fails."""
    target = into / spec.name
    try:
        done = subprocess.run(
            ["git", "clone", "--depth", "1", "--quiet", "--", spec.source, str(target)],
            capture_output=True,
            text=True,
            timeout=CLONE_TIMEOUT_S,
            env=_git_env(),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuntimeError(f"git clone {shown(spec.source)} failed: {type(exc).__name__}") from None
    if done.returncode != 0:
        why = " ".join((done.stderr or "").split())[:300]
        raise RuntimeError(f"git clone {shown(spec.source)} failed: {shown(why)}")
    return target, head_of(target)


def head_of(folder: Path) -> str:
    """The commit checked out in ``folder`` ("" when it is not a git repository)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
            env=_git_env(),
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def _git_env() -> dict[str, str]:
    """git never prompts (a CI job would hang on a password prompt)."""
    import os

    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
