"""The kinds of record and the project each belongs to (SPEC §2), spelled once.

``Kind`` is a ``Literal`` so that mypy rejects a misspelled kind anywhere a
record, a source folder or a store row is compared or built.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Final, Literal, TypeGuard

Kind = Literal["note", "rule", "adr", "conversation", "commit"]

# "commit": a git commit whose message says why (ingest/commit_index.py, docs/commits.md).
KINDS: Final[tuple[Kind, ...]] = ("note", "rule", "adr", "conversation", "commit")
# What the selection gap is computed over: conversations are long, score high
# against almost anything, and would shrink the gap (SPEC §5); commits rank in their
# own group and join what the documents earned, as conversations do.
DOCUMENT_KINDS: Final[frozenset[Kind]] = frozenset({"note", "rule", "adr"})


def is_kind(value: object) -> TypeGuard[Kind]:
    """Whether ``value`` is one of the kinds (a row read back from the store)."""
    return value in KINDS


# Rules are shared by every project; they are stored under this project key.
SHARED_PROJECT = "*"

# A project is its git root: one function for the indexer, the hook's daemon and `adr`
# (standard library only: the ADR graph uses it too).


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
