"""Small named exceptions, raised by the library and translated at the boundaries.

The CLI turns :class:`UsageError` into exit code 2 and every other
:class:`PrecedentsError` into exit code 1, each as a one-line message; an
``OSError`` that reaches it (a full disk above all: :class:`DiskFull`,
:func:`is_disk_full`) is one line and exit 1 too.
"""

from __future__ import annotations

import errno
import os


class PrecedentsError(Exception):
    """Base class of every error precedents reports to a user."""


class UsageError(PrecedentsError):
    """The user asked for something that cannot be: a missing folder, a bad option."""


class NotAFolder(UsageError):
    """A path named as a folder (a source folder, a project) is missing or not a folder."""


class ConfigError(UsageError):
    """The configuration file or an environment variable is malformed."""


class ModelError(PrecedentsError):
    """The embedding model cannot be loaded or used."""


class ModelNotAvailable(ModelError, UsageError):
    """The model is not on this machine (and this command may not download it)."""


class StoreError(PrecedentsError):
    """LanceDB failed: the store is damaged, locked or unreadable."""


class ModelMismatch(StoreError):
    """The store was built with another model; a full re-embed is needed."""


class NoteExists(PrecedentsError):
    """A note was to be written where a file is already (`promote` never overwrites)."""


class DiskFull(PrecedentsError):
    """A write failed because the disk holding it (or the user's quota) is full."""


def is_disk_full(exc: BaseException | None) -> bool:
    """Whether ``exc``, or an exception it was raised from, is a full disk or quota.

    LanceDB reports it as text inside a RuntimeError/OSError of its own, so the
    message is looked at too.
    """
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, DiskFull):
            return True
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        text = str(exc)
        if "No space left on device" in text or "Disk quota exceeded" in text:
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def disk_full(
    exc: BaseException, where: object = None, then: str = "free some space and try again"
) -> DiskFull:
    """The one-line :class:`DiskFull` for a write that failed on a full disk: where
    (``where``, else the file the error names), and what to do next."""
    if isinstance(exc, DiskFull):
        return exc
    if where is None:
        named = getattr(exc, "filename", None)
        where = os.path.dirname(str(named)) or named if named else None
    place = f"the disk holding {where}" if where else "the disk"
    return DiskFull(f"{place} is full; {then} (nothing stored before was lost)")


class InvalidSetting(ConfigError):
    """A setting names nothing usable: an unknown model, a device or runtime that is no
    choice, a number out of range. Said with where the value came from (an option, an
    environment variable, config.toml)."""


class DaemonModelDiffers(UsageError):
    """The running daemon embeds with another model than this process's settings name:
    its answer would not be the one asked for (docs/daemon.md)."""


class OrgError(PrecedentsError):
    """The organisation's index at ``org_uri`` cannot be read or written (one line: which
    URI and why); whatever was served before keeps serving (docs/org.md)."""


class OrgUnreachable(OrgError):
    """The storage does not answer: no network, a wrong endpoint, a bucket that is not there."""


class OrgDenied(OrgError):
    """The storage refused the credentials of its standard chain, or the write."""


class OrgNotAnIndex(OrgError):
    """What is at the URI is not a precedents org index (foreign, corrupt or too new)."""


class OrgBusy(OrgError):
    """Another build holds the index's lock object."""
