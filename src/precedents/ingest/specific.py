"""Which of the paths a note, ADR or chat names are evidence for the file hook (issue #28).

A record that names a file is given when the agent touches that file
(recall/files.py). A name that matches much of the project's tree — ``src/``,
``tests/``, a ``README.md`` beside every package — says nothing about any one
file, and a note naming 28 common paths (hostile, or only sweeping) would
otherwise come with nearly every file the agent opens. So at index time each
named path is counted against the project's files (``git ls-files``, else a
bounded walk) and kept only when it is specific:

* a path that matches more than :data:`BROAD_SHARE` of the tree (and more
  than :data:`BROAD_FILES` files) is dropped;
* a record whose remaining names together match more than :data:`SPREAD_SHARE`
  of the tree (and more than :data:`SPREAD_FILES` files) names everything: none
  of its paths is kept (its component and code names still are).

A path that matches nothing today is kept (the file may be about to be written).
Without a tree to count against (no folder, a git that fails) the scope is left
as it is. The counts follow :func:`precedents.rules.scope.mention_names`: a file
by its path or its tail, a folder as a run of folders anywhere above a file.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from precedents.rules.formats import PRUNED
from precedents.rules.scope import Scope

BROAD_SHARE: Final = 0.10
BROAD_FILES: Final = 8
SPREAD_SHARE: Final = 0.25
SPREAD_FILES: Final = 25
# Bounds on reading the tree: a project bigger than this is counted on its first files
# (the shares stay right for any path common enough to matter).
MAX_FILES: Final = 200_000
GIT_TIMEOUT_S: Final = 10.0
WALK_BUDGET_S: Final = 2.0
# A tree read without git (no index file to tell when it changed) is read again after this.
WALK_TTL_S: Final = 60.0


@dataclass(frozen=True)
class Tree:
    """How many of a project's files each file tail and each run of folders names."""

    files: int
    tails: Counter[str]
    folders: Counter[str]

    @classmethod
    def of(cls, paths: list[str]) -> Tree:
        tails: Counter[str] = Counter()
        by_folder: Counter[str] = Counter()
        for rel in paths:
            parts = rel.split("/")
            for i in range(len(parts)):
                tails["/".join(parts[i:])] += 1
            by_folder["/".join(parts[:-1])] += 1
        folders: Counter[str] = Counter()
        for folder, count in by_folder.items():
            if not folder:
                continue
            parts = folder.split("/")
            runs = {
                "/".join(parts[i:j])
                for i in range(len(parts))
                for j in range(i + 1, len(parts) + 1)
            }
            for run in runs:
                folders[run] += count
        return cls(len(paths), tails, folders)

    def count(self, mention: str) -> int:
        """How many files the named path ``mention`` names (mention_names' rule)."""
        folder = mention.endswith("/")
        m = mention.strip("/").removeprefix("./")
        if not m:
            return 0
        found = 0 if folder else self.tails.get(m, 0)
        if not folder and not found and "/" in m:
            # An absolute path ending in a file of the tree: that file.
            parts = m.split("/")
            found = next((1 for i in range(1, len(parts)) if "/".join(parts[i:]) in self.tails), 0)
        if folder or ("/" in m and "." not in m.rsplit("/", 1)[-1]):
            found += self.folders.get(m, 0)
        return found


def specific(scope: Scope, tree: Tree | None) -> Scope:
    """``scope`` with only the named paths that are evidence for one file (the module)."""
    if tree is None or not scope.mentions or tree.files == 0:
        return scope
    broad = max(BROAD_FILES, BROAD_SHARE * tree.files)
    counts = {m: tree.count(m) for m in scope.mentions}
    kept = tuple(m for m in scope.mentions if counts[m] <= broad)
    if sum(counts[m] for m in kept) > max(SPREAD_FILES, SPREAD_SHARE * tree.files):
        return replace(scope, mentions=())
    return replace(scope, mentions=kept)


class Trees:
    """The trees of the projects being indexed, read once and again when they change."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[object, float, Tree]] = {}

    def of(self, project: str) -> Tree | None:
        """The tree of the project whose key is ``project`` (None: no folder to count)."""
        if not os.path.isabs(project) or not os.path.isdir(project):
            return None  # the shared rules' "*", an unresolved Claude project
        root = Path(project)
        stamp = _index_stamp(root)
        cached = self._cache.get(project)
        fresh = stamp is not None or (cached and time.monotonic() - cached[1] < WALK_TTL_S)
        if cached is not None and cached[0] == stamp and fresh:
            return cached[2]
        paths = _git_files(root) if stamp is not None else None
        tree = Tree.of(paths if paths is not None else _walked_files(root))
        self._cache[project] = (stamp, time.monotonic(), tree)
        return tree


def _index_stamp(root: Path) -> object:
    """What changes when git's index does (a pull, a checkout, a commit); None: no git."""
    try:
        st = os.stat(root / ".git" / "index")
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _git_files(root: Path) -> list[str] | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z"],
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    names = out.stdout.split(b"\0", MAX_FILES)[:MAX_FILES]
    return [n.decode("utf-8", "replace") for n in names if n]


def _walked_files(root: Path) -> list[str]:
    """The project's files without git: pruned as rule discovery prunes, within a budget."""
    found: list[str] = []
    deadline = time.monotonic() + WALK_BUDGET_S
    for folder, dirs, files in os.walk(root):
        dirs[:] = [
            d for d in dirs if d not in PRUNED and not os.path.islink(os.path.join(folder, d))
        ]
        rel = os.path.relpath(folder, root).replace(os.sep, "/")
        found += [f if rel == "." else f"{rel}/{f}" for f in files]
        if len(found) >= MAX_FILES or time.monotonic() > deadline:
            break
    return found[:MAX_FILES]
