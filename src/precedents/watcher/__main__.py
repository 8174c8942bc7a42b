"""``python -m precedents.watcher [options]``: the watcher on its own, without the CLI.

The same options as ``precedents watch``, parsed with argparse so that this
entry point needs nothing above the library (nothing below ``cli/`` imports it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from precedents.config import load_settings, private_umask
from precedents.errors import PrecedentsError, UsageError
from precedents.ingest.sources import Sources
from precedents.watcher.foreground import configure_logging, run_until_signalled


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m precedents.watcher",
        description="Keep the index current as files change, until Ctrl-C or SIGTERM.",
    )
    for flag, what in (
        ("--notes", "A notes folder."),
        ("--rules", "A rules folder."),
        ("--adrs", "An ADR folder."),
        ("--conversations", "A folder of .jsonl logs."),
    ):
        parser.add_argument(flag, action="append", type=Path, default=[], metavar="DIR", help=what)
    parser.add_argument(
        "--project", "--repo", metavar="PATH", help="Project root (default: this directory's root)."
    )
    parser.add_argument(
        "--debounce",
        type=float,
        default=0.3,
        metavar="S",
        help="Seconds a note must be quiet before it is indexed.",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse the options, watch until a signal; the exit code follows the CLI's rule."""
    args = _parser().parse_args(argv)
    private_umask()  # an entry point: what it creates is for its owner only
    configure_logging()
    folders = Sources(
        tuple(args.notes),
        tuple(args.rules),
        tuple(args.adrs),
        tuple(args.conversations),
        args.project,
    )
    try:
        run_until_signalled(load_settings(), folders, args.debounce)
    except UsageError as exc:
        print(f"precedents: {exc}", file=sys.stderr)
        return 2
    except PrecedentsError as exc:
        print(f"precedents: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
