"""The daemon's log file, and what it does when the disk is full (issue #20).

On a full disk a log line has no room either. So the daemon that cannot
start says so where it can: the log if a line still fits, stderr (one line:
`serve` shows it; the hook's background start sends it nowhere), and an empty
``run/daemon.disk-full`` mark (a name, no data: creating it needs no free
block on common filesystems), which the next daemon to start logs and
removes. It also dates back the starter's spawn stamp, which needs no room at
all, so that the next hook starts a daemon as soon as the disk has room
again rather than a minute later (:func:`.starter.allow_respawn`).
"""

from __future__ import annotations

import contextlib
import logging
import time
from logging.handlers import RotatingFileHandler
from pathlib import Path

from precedents.config import Settings, ensure_private_dir
from precedents.errors import DiskFull, disk_full, is_disk_full
from precedents.query_daemon.starter import allow_respawn

log = logging.getLogger("precedents.daemon")

DISK_FULL_MARK = "daemon.disk-full"


class QuietFile(RotatingFileHandler):
    """A rotating log file that drops a line it cannot write: logging's default
    prints a traceback on stderr for every such line."""

    def handleError(self, record: logging.LogRecord) -> None:
        pass


def configure_logging(settings: Settings) -> None:
    """Entry points only: the daemon logs to ``logs/daemon.log``, rotated, at INFO.

    With no room for the log file itself, nothing is set up: the start that
    follows fails on the same disk and says so in one line.
    """
    logger = logging.getLogger("precedents")
    try:
        ensure_private_dir(settings.log_dir)
        handler = QuietFile(
            settings.log_dir / "daemon.log", maxBytes=2_000_000, backupCount=2, encoding="utf-8"
        )
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        return
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def note_disk_full(settings: Settings, exc: BaseException) -> DiskFull:
    """The one-line error for a daemon stopped by a full disk, said wherever it fits."""
    full = disk_full(exc, settings.home, "free some space: the next prompt starts the daemon")
    # To the log file only: on a terminal (`serve`) the error boundary prints it, once.
    record = log.makeRecord(log.name, logging.ERROR, __file__, 0, "cannot serve: %s", (full,), None)
    for handler in logging.getLogger("precedents").handlers:
        if isinstance(handler, QuietFile):
            handler.handle(record)
    with contextlib.suppress(OSError):
        (settings.run_dir / DISK_FULL_MARK).touch()
    allow_respawn(str(settings.home))
    return full


def note_earlier_disk_full(run: Path) -> None:
    """Log (and clear) the mark of an earlier start that failed on a full disk."""
    mark = run / DISK_FULL_MARK
    with contextlib.suppress(OSError):
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(mark.stat().st_mtime))
        log.warning("an earlier daemon could not start at %s: the disk was full", when)
        mark.unlink()
