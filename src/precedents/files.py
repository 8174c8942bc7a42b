"""Reading a repository's files safely: confined, regular, capped, never blocking.

Every reader of notes, rules, ADRs and team config (the indexer, the ADR graph,
``check``, team notes) goes through :func:`read_regular`, because a repository
the user cloned may be hostile (issue #28): a symlink to ``~/.ssh`` or
``/etc/passwd`` must not turn an outside file into this repository's record,
``/dev/zero`` or a 2 GB file must not fill memory, and a FIFO must not hang a
reader for ever. So a file is read only when

* its real path lies inside the folder it is confined to (``within``): a link
  that stays inside is followed, one that leaves is refused;
* it is a regular file, checked before and after opening (``lstat`` then
  ``fstat``), opened with ``O_NOFOLLOW`` (the resolved path: a link swapped in
  meanwhile is refused) and ``O_NONBLOCK`` (opening a FIFO never waits);
* it holds at most ``limit`` bytes: at most ``limit + 1`` are ever read, since
  ``st_size`` can lie (``/proc`` files say 0; a file may grow while read).

A file name that is not UTF-8 (Linux allows any bytes but ``/`` and NUL) comes
to Python with surrogate escapes, which the tokenizer, Arrow and JSON all
refuse: such a name is skipped where it is listed, never read
(:func:`undecodable`), and shown with its bytes escaped (:func:`escaped`).

Standard library only, below every reader (tests/test_layout.py).
"""

from __future__ import annotations

import os
import stat
from typing import Final

# Notes, rules and ADRs are small: of the 1,542 files in tests/fixtures/rules-wild,
# tests/fixtures/adr-wild and ../shared/adr-corpora the largest is a 309 KB ADR (the
# largest rule: 52 KB). 2 MiB leaves a margin of 6, and is what `check` allowed already.
MAX_BYTES: Final = 2 * 1024 * 1024
_CHUNK: Final = 256 * 1024
_FLAGS: Final = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
)

LINKED_OUT: Final = "symlink leads out of the repository: not followed"
OUTSIDE: Final = "symlink leads out of the source folder: not followed"
NOT_UTF8_NAME: Final = "file name is not UTF-8: skipped"


class Refused(OSError):
    """A file not read on purpose; ``reason`` is its one line. An :class:`OSError`, so a
    caller that catches those loses nothing; ``size`` is set when it was too large."""

    def __init__(self, reason: str, size: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.size = size

    def __str__(self) -> str:
        return self.reason


def inside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """Whether ``path``'s real path (every link followed) is ``root``'s or lies under it.

    A path that does not exist yet is judged by what exists of it (``realpath``).
    """
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return False
    return _under(real, root)


def _under(real: str, root: str | os.PathLike[str]) -> bool:
    """Whether the real path ``real`` is ``root``'s real path or lies under it."""
    try:
        top = os.path.realpath(root)
    except (OSError, ValueError):
        return False
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def undecodable(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` holds bytes that are not UTF-8 (surrogate escapes in a str)."""
    text = os.fspath(path)
    if isinstance(text, bytes):
        try:
            text.decode("utf-8")
        except UnicodeDecodeError:
            return True
        return False
    return any("\udc80" <= c <= "\udcff" for c in text)


def escaped(path: str | os.PathLike[str]) -> str:
    """``path`` printable: bytes that are not UTF-8 as ``\\xff``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def size_text(limit: int) -> str:
    """``2 MiB`` for a whole number of MiB, else the bytes (``1,000 bytes``)."""
    mib = 1024 * 1024
    return f"{limit // mib} MiB" if limit % mib == 0 else f"{limit:,} bytes"


def not_regular(mode: int) -> str:
    """The one line that refuses a file of this ``st_mode`` (a FIFO, a device...)."""
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symlink"),
    ):
        if test(mode):
            return f"not a regular file ({name}): skipped"
    return "not a regular file: skipped"


def read_regular(
    path: str | os.PathLike[str],
    *,
    within: str | os.PathLike[str] | None,
    limit: int = MAX_BYTES,
    outside: str = OUTSIDE,
) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them.

    ``within``: the folder the file must really lie in (its source folder, the
    repository); None only for a file the user named (a link is then followed,
    but the file must still be regular and small). Raises :class:`Refused` with
    the one-line reason (``outside`` for a link leaving ``within``), or the
    :class:`OSError` of the system (a vanished file: ``FileNotFoundError``).
    """
    real = os.path.realpath(path)
    if within is not None and not _under(real, within):
        raise Refused(outside)
    # lstat first: opening a device can do something (a tape rewinds); never open one.
    st = os.lstat(real)
    if not stat.S_ISREG(st.st_mode):
        raise Refused(not_regular(st.st_mode))
    if st.st_size > limit:
        raise Refused(f"larger than {size_text(limit)}: skipped", st.st_size)
    try:
        fd = os.open(real, _FLAGS)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        if os.path.islink(real):  # ELOOP: made a link since realpath
            raise Refused("turned into a symlink while being read: skipped") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(not_regular(st.st_mode))
        parts: list[bytes] = []
        got = 0
        while got <= limit:
            part = os.read(fd, min(_CHUNK, limit + 1 - got))
            if not part:
                break
            parts.append(part)
            got += len(part)
    finally:
        os.close(fd)
    if got > limit:
        raise Refused(f"larger than {size_text(limit)}: skipped", got)
    return b"".join(parts)
