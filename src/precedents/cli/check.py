"""`precedents check`: what a commit must not carry, for pre-commit and CI (docs/check.md).

Thin: :func:`precedents.api.check` finds; this prints one ``path:line: level:
message`` line per finding and a summary on stderr (``--json``: the findings as a
list), and exits 1 when any finding is an error, 0 with warnings only. Misuse
(files and ``--all`` together, nothing named outside a git repository, an unknown
option) exits 2.
"""

from __future__ import annotations

from typing import Annotated

import typer

from precedents import api
from precedents.cli.common import JsonOpt, add_commands, print_json
from precedents.config import load_settings


def check(
    files: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="FILES",
            help="Files (or folders) to check, read from disk; default: the staged files, "
            "read from git's index.",
            show_default=False,
        ),
    ] = None,
    all_files: Annotated[
        bool,
        typer.Option("--all", help="Every rule, ADR and team note the repository tracks (CI)."),
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Secrets, ADR graph errors, rule front matter its agent would ignore or misread, and
    near-duplicate team notes, in the staged files. Exit 1 on any error (for pre-commit
    and CI), 0 with warnings only."""
    report = api.check(load_settings(), files or (), all_files=all_files)
    if json_out:
        print_json(report["findings"])
    else:
        for f in report["findings"]:
            typer.echo(f"{f['path']}:{f['line']}: {f['level']}: {f['message']}")
        other = f", {report['skipped']} other file(s) by name" if report["skipped"] else ""
        typer.echo(
            f"{report['checked']} file(s) checked{other}: "
            f"{report['errors']} error(s), {report['warnings']} warning(s)",
            err=True,
        )
    if report["errors"]:
        raise typer.Exit(1)  # findings, not a failure of the command: already printed


def register(app: typer.Typer) -> None:
    """Add `check` to the main command line."""
    add_commands(app, {"check": check})
