"""LanceDB and Arrow failures as one line each: what failed, and the fix.

Why a module of its own: the same lines come from the store (LanceDB), from
the read-only table reader (``lance``) and from `status`'s check, and what
LanceDB says is not for users: it carries paths inside its Rust sources
(``/rustc/…/function.rs:250:5``, ``/home/runner/work/lance/…``). Those are
logged (``-v`` shows them) and left out of the message (issue #21).
"""

from __future__ import annotations

import errno
import logging
import re
from pathlib import Path

from precedents.errors import StoreError

log = logging.getLogger("precedents.store")

# What reading or writing a table raises when its files are damaged: pyarrow's
# ArrowInvalid and lance's own errors are ValueErrors; a missing file an OSError.
LANCE_ERRORS = (OSError, ValueError, RuntimeError)

# A source location LanceDB appends to its messages: ", /rustc/<hash>/library/…rs:250:5".
_SOURCE_PLACE = re.compile(r",?\s*(?:/[^\s,]*)?\.rs:\d+(?::\d+)?")
_WRAPPERS = re.compile(r"^(?:External error:\s*)?(?:LanceError\(\w+\):\s*)?")


def is_disk_full(exc: BaseException) -> bool:
    """Whether a LanceDB/OS failure is a full disk (or quota), whatever layer reported it."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(exc)
    return "No space left on device" in text or "Disk quota exceeded" in text


def reason(exc: BaseException) -> str:
    """The first line of ``exc`` without LanceDB's wrappers and source locations."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return _WRAPPERS.sub("", _SOURCE_PLACE.sub("", text)).strip()[:200] or type(exc).__name__


def failed(path: Path, action: str, exc: BaseException) -> StoreError:
    """One line for a failed write: a full disk says so."""
    if is_disk_full(exc):
        return StoreError(
            f"{action} failed: the disk holding {path} is full; free some space and run "
            "`precedents reindex` (nothing indexed before was lost)"
        )
    log.info("%s: %s failed: %s", path, action, exc)
    return StoreError(f"{action} failed: {reason(exc)}")


def damaged_line(path: Path) -> str:
    """What `status` and `query` say of an index that cannot be read: the fix, in one line."""
    return (
        f"the index at {path} is damaged or unreadable; `precedents reindex --full` rebuilds "
        "it from your files (it holds nothing else)"
    )


def damaged(path: Path, exc: BaseException) -> StoreError:
    """The one-line error for an index LanceDB cannot read (its own words go to the log)."""
    if is_disk_full(exc):
        return failed(path, "using the index", exc)
    log.info("%s is unreadable: %s", path, exc)
    return StoreError(damaged_line(path))
