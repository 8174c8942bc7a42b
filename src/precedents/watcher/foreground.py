"""Run a :class:`Watcher` in the foreground until SIGINT or SIGTERM.

What both entry points run: ``precedents watch`` and ``python -m
precedents.watcher``. Entry points call :func:`configure_logging` first: INFO
from precedents to stderr, so what was indexed is visible (paths and counts,
never text).
"""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType
from typing import Any

from precedents.config import Settings
from precedents.errors import UsageError
from precedents.ingest.sources import Sources
from precedents.watcher.child import configure_logging
from precedents.watcher.core import Watcher, WatchTiming

__all__ = ["configure_logging", "run_until_signalled"]

log = logging.getLogger("precedents.watcher")


def run_until_signalled(settings: Settings, folders: Sources, debounce_s: float) -> None:
    """Watch ``folders`` (every configured source when none is named) until a signal.

    ``debounce_s`` is how long a file must be quiet before it is indexed. A
    watcher already running or a missing folder raises :class:`UsageError`.
    """
    if debounce_s < 0:
        raise UsageError("--debounce must not be negative")
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("received %s, stopping", signal.Signals(signum).name)
        stop.set()

    previous: dict[signal.Signals, Any] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, on_signal)
    try:
        watcher = Watcher(settings, folders=folders, timing=WatchTiming(quiet_s=debounce_s))
        with watcher:
            # A short timeout keeps the main thread responsive to signals everywhere.
            while not stop.wait(0.5):
                pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
