"""The commands run most often, started without building the typer app (issue #21).

`precedents status`, `query`, `remember` and `mcp` are run by people and agents
many times a day; `mcp` must answer the handshake within 0.3 s. Building the typer
app imports every command module, and typer (0.29) validates each option with
pydantic: ~0.15 s of CPU, 0.3-0.5 s on a busy 2-core machine, before the
command starts. Here a few exact argument shapes call the very same command
functions (cli/index.py, cli/query.py, the MCP server) behind the very same
error boundary (cli/common.py); anything else — ``--help``, ``-v``, an option
spelt another way, a mistake — goes to the typer app, which says what it says.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The options taken here, per command: flags, and options with one value each.
_FLAGS = {
    "query": {"--json": "as_json", "--all": "all_projects", "--auto": "auto"},
    "remember": {"--json": "as_json", "--team": "team"},
}
_VALUES = {
    "query": {"--project": "project", "--repo": "project", "-k": "k"},
    "remember": {"--project": "project", "--repo": "project", "--title": "title"},
}


def start_process(verbose: bool) -> None:
    """What every command does first (the root callback, cli/app.py): a private umask,
    since the store holds excerpts of private notes; logging to stderr."""
    from precedents.config import private_umask

    private_umask()
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def parse(argv: list[str]) -> tuple[str, dict[str, Any]] | None:
    """(command, keyword arguments) when ``argv`` is one of the shapes taken here."""
    if argv == ["mcp"]:
        return "mcp", {}
    if argv in (["status"], ["status", "--json"]):
        return "status", {"as_json": len(argv) == 2}
    if argv[:1] in (["query"], ["remember"]):
        return _parse_options(argv[0], argv[1:])
    return None


def _parse_options(command: str, args: list[str]) -> tuple[str, dict[str, Any]] | None:
    """``command TEXT`` with its options taken here, each at most once; else None."""
    flags, values = _FLAGS[command], _VALUES[command]
    kwargs: dict[str, Any] = {}
    text: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in flags and flags[arg] not in kwargs:
            kwargs[flags[arg]] = True
        elif arg in values and values[arg] not in kwargs and i + 1 < len(args):
            value = args[i + 1]
            if value.startswith("-") or (arg == "-k" and not value.isdigit()):
                return None
            if values[arg] == "project" and not Path(value).expanduser().is_dir():
                return None  # typer's callback (cli/common.py) says what is wrong with it
            kwargs[values[arg]] = int(value) if arg == "-k" else value
            i += 1
        elif not arg.startswith("-") and text is None:
            text = arg
        else:
            return None  # typer's to parse, or to refuse
        i += 1
    return (command, {"text": text, **kwargs}) if text is not None else None


def run(argv: list[str]) -> int | None:
    """Run ``argv`` when it is a shape taken here: its exit status; else None."""
    parsed = parse(argv)
    if parsed is None:
        return None
    name, kwargs = parsed
    if name == "mcp":
        return _mcp()
    start_process(verbose=False)
    if name == "status":
        from precedents.cli.index import status

        return _bounded(functools.partial(status, **kwargs))
    if name == "remember":
        if kwargs["text"].strip():
            # Before the command's imports (0.5-0.8 s on a busy 2-core machine): the
            # daemon's own start (0.4-1 s to listen) overlaps them (issue #29).
            from precedents.query_daemon.handover import start_early

            start_early()
        from precedents.cli.remember import remember

        return _bounded(functools.partial(remember, **kwargs))
    from precedents.cli.query import query

    return _bounded(functools.partial(query, **kwargs))


def _mcp() -> int:
    # The front first: it answers the handshake while the rest (typer for the
    # error boundary, the SDK) loads.
    from precedents.mcp.front import Front

    front = Front.start()
    start_process(verbose=False)
    from precedents.mcp import serve

    return _bounded(functools.partial(serve, front=front))


def _bounded(call: Callable[[], Any]) -> int:
    """``call`` behind the commands' error boundary; its exit status."""
    import typer

    from precedents.cli.common import errors

    try:
        errors(call)()
    except typer.Exit as exc:
        return int(exc.exit_code)
    return 0
