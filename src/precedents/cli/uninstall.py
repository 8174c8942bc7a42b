"""`precedents uninstall`: stop precedents and remove everything it put on this machine."""

from __future__ import annotations

from typing import Annotated

import typer

from precedents import api
from precedents.cli.common import JsonOpt, add_commands, print_json
from precedents.config import load_settings


def uninstall(
    keep_data: Annotated[
        bool,
        typer.Option("--keep-data", help="Keep the state folder: the index, config.toml, logs."),
    ] = False,
    no_load: Annotated[
        bool,
        typer.Option(
            "--no-load",
            help="Remove the service unit files without calling systemctl or launchctl.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Stop the daemon and watcher, remove the hooks, service units, caches and the state folder.

    One line per thing removed, then a summary; exit 1 with one line per thing
    that could not be removed. Then `claude plugin uninstall precedents@precedents`
    and `pip uninstall precedents` remove the plugin and the package.
    """
    # create_home=False: a missing state folder must not be made just to be removed.
    result = api.uninstall(load_settings(create_home=False), keep_data=keep_data, load=not no_load)
    if as_json:
        print_json(result.to_json())
    else:
        for line in [*(r.line for r in result.removed), *result.notes]:
            typer.echo(line)
        for failure in result.failures:
            typer.echo(f"precedents: {failure}", err=True)
        typer.echo(result.summary())
    if not result.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the `uninstall` command to the main command line."""
    add_commands(app, {"uninstall": uninstall})
