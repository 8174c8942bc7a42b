"""`service install/uninstall`: run the watcher and the query daemon at login."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from precedents import api
from precedents.cli.common import JsonOpt, add_commands, print_json
from precedents.config import load_settings

if TYPE_CHECKING:
    from precedents.service.units import ServiceResult

NoLoadOpt = Annotated[
    bool, typer.Option("--no-load", help="Only write/remove the files; do not call systemctl.")
]


def install(
    daemon: Annotated[bool, typer.Option(help="Also run the query daemon at login.")] = True,
    no_load: NoLoadOpt = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Print the unit files it would write; write and run nothing."
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Write the unit files with this interpreter and state folder, and start them."""
    # A dry run must not even create the state folder: it writes nothing at all.
    settings = load_settings(create_home=not dry_run)
    _print(api.install_service(settings, daemon=daemon, load=not no_load, dry_run=dry_run), as_json)


def uninstall(no_load: NoLoadOpt = False, as_json: JsonOpt = False) -> None:
    """Stop and remove exactly the units `service install` wrote."""
    _print(api.uninstall_service(load=not no_load), as_json)


def _print(result: ServiceResult, as_json: bool) -> None:
    if as_json:
        print_json(result.to_json())
    elif result.dry_run:
        for path, text in result.contents.items():
            typer.echo(f"== would write {path}")
            typer.echo(text.rstrip("\n") + "\n")
        for line in [*(f"would run: {c}" for c in result.commands), *result.notes]:
            typer.echo(line)
    else:
        for line in [*result.files, *(f"ran: {c}" for c in result.commands), *result.notes]:
            typer.echo(line)


service_app = typer.Typer(
    help="Run the watcher and the query daemon at login (systemd user units, LaunchAgents).",
    no_args_is_help=True,
)
add_commands(service_app, {"install": install, "uninstall": uninstall})


def register(app: typer.Typer) -> None:
    """Add the `service` group to the main command line."""
    app.add_typer(service_app, name="service")
