"""The typer app: the root callback, and every command group attached by its ``register``."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

import precedents.cli.adr as adr
import precedents.cli.check as check
import precedents.cli.daemon as daemon
import precedents.cli.evaluate as evaluate
import precedents.cli.index as index
import precedents.cli.mcp as mcp
import precedents.cli.org as org
import precedents.cli.query as query
import precedents.cli.remember as remember
import precedents.cli.service as service
import precedents.cli.uninstall as uninstall
import precedents.cli.watch as watch
import precedents.cli.why as why
from precedents.cli.common import ClickException, ClickUsageError, NoArgsIsHelp, NoSuchPath
from precedents.cli.fast import start_process

app = typer.Typer(
    help="Local memory recall for AI coding agents: notes, rules, ADRs and conversations.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

# Every group attaches the same way, through its module's register(app). The
# order is the order `precedents --help` lists them in (sub-groups come last).
for group in (watch, daemon, index, query, remember, check, why, mcp, evaluate, adr, org, service):
    group.register(app)
uninstall.register(app)


@app.callback()
def _root(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Log progress to stderr.")
    ] = False,
) -> None:
    # Entry points alone set the umask (the store holds excerpts of private notes)
    # and logging; the same call starts the commands cli/fast.py runs.
    start_process(verbose)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: the app, its usage errors as one line and exit 2.

    Typer's own handling (standalone mode) frames a usage error in a 5-6 line
    panel; README promises one line (issue #29). So the app runs without it and
    :func:`usage_line` writes the line; ``--help`` is untouched.
    """
    try:
        code = app(args=argv, standalone_mode=False)
    except NoArgsIsHelp as exc:
        exc.show()  # `precedents` or `precedents adr` alone: the help, as ever
        code = exc.exit_code
    except ClickUsageError as exc:
        typer.echo(usage_line(exc), err=True)
        code = exc.exit_code
    except ClickException as exc:
        typer.echo(f"precedents: {_one_line(exc.format_message())}", err=True)
        code = exc.exit_code
    except typer.Abort:
        typer.echo("precedents: interrupted", err=True)
        code = 130
    sys.exit(code if isinstance(code, int) else 0)


def usage_line(exc: ClickUsageError) -> str:
    """A usage error as one line: what is wrong and, unless it is a path that does not
    exist (cli/common.py), where the command's options are listed."""
    line = f"precedents: {_one_line(exc.format_message())}"
    if exc.ctx is None or isinstance(exc, NoSuchPath):
        return line
    return f"{line} (see `{exc.ctx.command_path} --help`)"


def _one_line(text: str) -> str:
    return " ".join(text.split())
