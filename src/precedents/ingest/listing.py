"""Listing one source folder: its files, and the problems met on the way.

Split from :mod:`precedents.ingest.sources` (which re-exports :class:`Problem` and
:func:`leaves_root`); it never raises for a bad folder or file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from precedents.files import NOT_UTF8_NAME, OUTSIDE, escaped, not_regular, undecodable


@dataclass(frozen=True)
class Problem:
    """A file or folder that could not be (fully) read, with the reason."""

    path: str
    reason: str


class Listed(Protocol):
    """What the listing needs of a source folder (ingest.sources.SourceDir)."""

    @property
    def root(self) -> Path: ...
    @property
    def recursive(self) -> bool: ...
    @property
    def names(self) -> tuple[str, ...]: ...
    def takes(self, name: str) -> bool: ...


def leaves_root(path: Path, root: Path) -> bool:
    """Whether ``path`` (a symlink, or under one) really lies outside ``root``.

    A link inside a notes folder to ``/etc/shadow`` or ``~/.ssh`` must not
    turn a secret file into a note; links that stay inside are fine.
    """
    try:
        target = path.resolve(strict=True)
        return not target.is_relative_to(root.resolve(strict=True))
    except (OSError, RuntimeError):  # broken, looping, or vanished: nothing to follow
        return True


def walk_dir(src: Listed, problems: list[Problem]) -> Iterator[Path]:
    """The files of ``src`` (its folder, recursively when it is), in name order; a
    folder or file that cannot be read is a problem, a link out of the folder too."""
    visited: set[tuple[int, int]] = set()
    stack = [src.root]
    while stack:
        folder = stack.pop()
        try:
            st = folder.stat()
        except OSError as exc:
            problems.append(Problem(str(folder), f"cannot open folder: {exc.strerror}"))
            continue
        key = (st.st_dev, st.st_ino)
        if key in visited:
            problems.append(Problem(str(folder), "symlink loop: folder already visited"))
            continue
        visited.add(key)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            problems.append(Problem(str(folder), f"cannot list folder: {exc.strerror}"))
            continue
        for entry in entries:
            if entry.name.startswith(".") and entry.name not in src.names:
                continue
            if undecodable(entry.name):
                # No tool downstream holds such a name (the tokenizer, Arrow, JSON refuse
                # it): one file so named once failed every reindex (issue #28).
                if src.takes(entry.name) or _is_dir(entry):
                    problems.append(Problem(escaped(entry.path), NOT_UTF8_NAME))
                continue
            path = Path(entry.path)
            try:
                if entry.is_symlink() and leaves_root(path, src.root):
                    if os.path.exists(path):
                        problems.append(Problem(str(path), OUTSIDE))
                    else:
                        problems.append(Problem(str(path), "broken or looping symlink"))
                    continue
                if entry.is_dir():
                    if src.recursive and not src.names:
                        stack.append(path)
                    continue
                is_file = entry.is_file()
            except OSError as exc:
                problems.append(Problem(str(path), f"cannot stat: {exc.strerror}"))
                continue
            if not is_file:
                try:
                    mode = entry.stat().st_mode  # what a link leads to
                except OSError:
                    if entry.is_symlink():
                        problems.append(Problem(str(path), "broken or looping symlink"))
                    continue
                if src.takes(entry.name):  # a FIFO, a device: never opened (issue #28)
                    problems.append(Problem(str(path), not_regular(mode)))
                continue
            if src.takes(entry.name):
                yield path


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False
