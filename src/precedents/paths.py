"""A project's root (SPEC §2): one function for the indexer, the hook's daemon and `adr`.

Standard library only: the ADR graph and the sources both use it.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path


def git_root(start: str | Path) -> Path:
    """The git root above ``start`` (a folder holding ``.git``, a folder or a worktree's
    file), else ``start`` itself; absolute, symlinks kept as the user named them.

    Symlinks are not resolved: a project is the path Claude Code reports as the
    session's ``cwd``, and the same path must name it everywhere.
    """
    return Path(_git_root(str(Path(start).expanduser().absolute())))


@lru_cache(maxsize=256)
def _git_root(start: str) -> str:
    # Walking up for `.git` is what git does, without a 5-10 ms subprocess.
    current = Path(start)
    for candidate in (current, *current.parents):
        if (candidate / ".git").exists():
            return str(candidate)
    return start
