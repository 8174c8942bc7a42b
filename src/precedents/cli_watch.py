"""The `watch` command; :func:`register` adds it to the main app.

Runs the watcher in the foreground until SIGINT/SIGTERM and logs to stderr at
INFO what was indexed (paths and counts, never text). Errors follow cli.py's
convention: one line on stderr, exit 2 for user mistakes (a missing folder, a
watcher already running), 1 for failures, never a traceback.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import typer

from precedents.cli_common import errors
from precedents.config import load_settings, private_umask
from precedents.errors import UsageError
from precedents.sources import Sources

log = logging.getLogger("precedents.watcher")


def _configure_logging() -> None:
    """Entry point only: INFO from precedents to stderr (once, whoever set up the root)."""
    logger = logging.getLogger("precedents")
    logger.setLevel(logging.INFO)
    if not logging.getLogger().handlers and not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)


def watch(
    notes: Annotated[list[Path] | None, typer.Option("--notes", help="A notes folder.")] = None,
    rules: Annotated[list[Path] | None, typer.Option("--rules", help="A rules folder.")] = None,
    adrs: Annotated[list[Path] | None, typer.Option("--adrs", help="An ADR folder.")] = None,
    conversations: Annotated[
        list[Path] | None, typer.Option("--conversations", help="A folder of .jsonl logs.")
    ] = None,
    project: Annotated[
        str | None,
        typer.Option("--project", "--repo", help="Project root (default: this directory's root)."),
    ] = None,
    debounce: Annotated[
        float,
        typer.Option("--debounce", help="Seconds a note must be quiet before it is indexed."),
    ] = 0.3,
) -> None:
    """Keep the index current as files change, in the foreground, until Ctrl-C or SIGTERM.

    With folders given, only they are watched; otherwise every configured and
    discovered source (Claude Code's folders included, new ones as they appear).
    """
    from precedents.watcher import Watcher, WatchTiming

    private_umask()
    _configure_logging()
    if debounce < 0:
        raise UsageError("--debounce must not be negative")
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("received %s, stopping", signal.Signals(signum).name)
        stop.set()

    previous: dict[signal.Signals, Any] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, on_signal)
    try:
        watcher = Watcher(
            load_settings(),
            folders=Sources(
                tuple(notes or ()),
                tuple(rules or ()),
                tuple(adrs or ()),
                tuple(conversations or ()),
                project,
            ),
            timing=WatchTiming(quiet_s=debounce),
        )
        with watcher:
            # A short timeout keeps the main thread responsive to signals everywhere.
            while not stop.wait(0.5):
                pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def register(app: typer.Typer) -> None:
    """Add `watch` to the main command line."""
    app.command("watch")(errors(watch))
