"""The typer app: the root callback, and every command group attached by its ``register``."""

from __future__ import annotations

from typing import Annotated

import typer

import precedents.cli.adr as adr
import precedents.cli.check as check
import precedents.cli.daemon as daemon
import precedents.cli.evaluate as evaluate
import precedents.cli.index as index
import precedents.cli.mcp as mcp
import precedents.cli.query as query
import precedents.cli.remember as remember
import precedents.cli.service as service
import precedents.cli.uninstall as uninstall
import precedents.cli.watch as watch
import precedents.cli.why as why
from precedents.cli.fast import start_process

app = typer.Typer(
    help="Local memory recall for AI coding agents: notes, rules, ADRs and conversations.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

# Every group attaches the same way, through its module's register(app). The
# order is the order `precedents --help` lists them in (sub-groups come last).
for group in (watch, daemon, index, query, remember, check, why, mcp, evaluate, adr, service):
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


def main() -> None:
    """Console-script entry point."""
    app()
