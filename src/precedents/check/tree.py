"""What `precedents check` reads: the content staged for a commit, or the working tree.

A pre-commit hook must judge what is committed, not what is on disk: with no
files named, every file is read from git's index (``git cat-file`` on the blob
each index entry names, which is ``git show :path`` for many files in one
process), and the files checked are those staged (``git diff --cached``). With
files named (pre-commit names them, having stashed what is not staged) or with
``--all`` (CI), the working tree is read; a folder's other files are then its
tracked ones, so an untracked draft beside a staged ADR is not judged with it.

Paths are POSIX and relative to the repository's root; a named file outside it
keeps its absolute path. Outside any repository the working folder is the root
and folders are walked on disk.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from precedents.errors import PrecedentsError
from precedents.files import LINKED_OUT, NOT_UTF8_NAME, Refused, inside, read_regular, undecodable
from precedents.files import MAX_BYTES as FILE_CAP
from precedents.rules.formats import PRUNED

# Past this, a file is reported rather than read: notes, rules and ADRs are small,
# and scanning a huge file for secrets would stall a commit.
MAX_BYTES: Final = FILE_CAP
GIT_TIMEOUT_S: Final = 120.0
_SUBMODULE, _SYMLINK = "160000", "120000"


class GitError(PrecedentsError):
    """git could not answer (not installed, a broken repository): one line, exit 1."""


def _git(root: Path, *args: str, data: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            input=data,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError:
        raise GitError("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0]} took more than {GIT_TIMEOUT_S:.0f} s") from None
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git {args[0]} failed: {why[0] if why else done.returncode}")
    return done.stdout


def repository_root(cwd: Path) -> Path | None:
    """The root of the git repository ``cwd`` is in; None outside one (or without git)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(cwd), "rev-parse", "--show-toplevel"],
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None
    top = done.stdout.decode("utf-8", "surrogateescape").strip()
    return Path(top).resolve() if done.returncode == 0 and top else None


def _split_z(out: bytes) -> list[str]:
    return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]


def staged_changes(root: Path) -> tuple[list[str], list[str]]:
    """(files added, copied or modified in the index, files deleted from it).

    Renames are read as a deletion and an addition: the new name is checked, and
    the old one's folder is looked at again (an ADR chain may have lost a record).
    """
    out = _split_z(_git(root, "diff", "--cached", "--name-status", "--no-renames", "-z"))
    changed: list[str] = []
    deleted: list[str] = []
    for status, path in zip(out[::2], out[1::2], strict=False):
        if status[:1] in ("A", "C", "M"):
            changed.append(path)
        elif status[:1] == "D":
            deleted.append(path)
    return changed, deleted


def _index(root: Path) -> dict[str, str]:
    """Every regular file of the index: path -> blob id (stage 0; submodules and
    symbolic links are no text of the commit)."""
    entries: dict[str, str] = {}
    for entry in _split_z(_git(root, "ls-files", "--stage", "-z")):
        meta, _, path = entry.partition("\t")
        mode, blob, stage = [*meta.split(" "), "", "", ""][:3]
        if stage == "0" and mode not in (_SUBMODULE, _SYMLINK):
            entries[path] = blob
    return entries


@dataclass
class Tree:
    """The files of one run, read from the index (``staged``) or the working tree."""

    root: Path
    git: bool
    staged: bool
    index: dict[str, str] = field(default_factory=dict)  # path -> blob id; {} outside git
    named: set[str] = field(default_factory=set)  # files named on the command line

    @classmethod
    def open(cls, root: Path, git: bool, *, staged: bool, named: Iterable[str] = ()) -> Tree:
        return cls(root, git, staged, _index(root) if git else {}, set(named))

    def tracked(self) -> list[str]:
        """Every file of the index, in path order."""
        return sorted(self.index)

    def files_under(self, folder: str) -> list[str]:
        """The files below ``folder`` (relative to the root; "" is the root) that
        belong to the commit: the index's, and those named (from the working tree:
        those still on disk); on disk outside git."""
        prefix = folder.rstrip("/") + "/" if folder else ""
        if self.git:
            found = {p for p in (*self.index, *self.named) if p.startswith(prefix)}
            if not self.staged:  # a tracked file deleted on disk is not in what is checked
                found = {p for p in found if (self.root / p).is_file()}
            return sorted(found)
        return _walk(self.root, folder)

    def read(self, paths: Sequence[str]) -> dict[str, bytes | str]:
        """Each path's content, or a one-line reason it cannot be read."""
        # A name that is not UTF-8 is skipped, as the indexer skips it (issue #28).
        bad: dict[str, bytes | str] = {p: NOT_UTF8_NAME for p in paths if undecodable(p)}
        paths = [p for p in paths if p not in bad]
        if self.staged:
            return {**self._read_index(paths), **bad}
        return {
            **{
                path: _read_file(self.root / path, None if path.startswith("/") else self.root)
                for path in paths
            },
            **bad,
        }

    def _read_index(self, paths: Sequence[str]) -> dict[str, bytes | str]:
        out: dict[str, bytes | str] = {}
        wanted = [p for p in paths if p in self.index]
        for path in paths:
            if path not in self.index:
                out[path] = "not in the index (a submodule or a symbolic link?)"
        if not wanted:
            return out
        request = "".join(f"{self.index[p]}\n" for p in wanted).encode()
        data = _git(self.root, "cat-file", "--batch", data=request)
        pos = 0
        for path in wanted:
            end = data.index(b"\n", pos)
            header = data[pos:end].split(b" ")
            if len(header) < 3:  # "<id> missing"
                out[path] = "its staged content is missing from the repository"
                pos = end + 1
                continue
            size = int(header[2])
            blob = data[end + 1 : end + 1 + size]
            pos = end + 1 + size + 1
            out[path] = blob if size <= MAX_BYTES else _too_large(size)
        return out


def _too_large(size: int) -> str:
    return f"too large to check ({size / 1024 / 1024:.1f} MiB; at most {MAX_BYTES >> 20} MiB)"


def _read_file(path: Path, root: Path | None) -> bytes | str:
    """The file's bytes, or why not. Confined to the repository at ``root`` (None: a file
    named outside it): a link out, a FIFO, a device, a huge file are refused (issue #28)."""
    try:
        if path.is_dir():
            return "a folder, not a file"
        return read_regular(path, within=root, limit=MAX_BYTES, outside=LINKED_OUT)
    except Refused as exc:
        return _too_large(exc.size) if exc.size is not None else exc.reason
    except OSError as exc:
        return f"cannot read it: {exc.strerror or type(exc).__name__}"


def _walk(root: Path, folder: str) -> list[str]:
    """Files below ``root/folder`` on disk (dependency and build folders pruned)."""
    found: list[str] = []
    if not inside(root / folder, root):  # `docs/adr -> /elsewhere`: not the repository's
        return found
    for dirpath, dirnames, filenames in os.walk(root / folder):
        dirnames[:] = [d for d in dirnames if d not in PRUNED]
        for name in filenames:
            found.append(Path(dirpath, name).relative_to(root).as_posix())
    return sorted(found)


def expand(root: Path, cwd: Path, names: Sequence[str]) -> list[str]:
    """The files named on the command line, as paths relative to ``root`` (absolute
    outside it); a folder stands for every file below it."""
    out: dict[str, None] = {}
    for name in names:
        path = Path(os.path.normpath(cwd / name))
        files = [path / rel for rel in _walk(path, "")] if path.is_dir() else [path]
        out.update(dict.fromkeys(relative(f, root) for f in files))
    return list(out)


def relative(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` (POSIX), or absolute when it is outside."""
    for candidate in (path, path.parent.resolve() / path.name):
        try:
            return candidate.relative_to(root).as_posix()
        except ValueError:
            continue
    return str(path)
