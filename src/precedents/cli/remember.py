"""`remember` and `promote`: save a memory note, personal or the team's (docs/team.md)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from precedents import api
from precedents.cli.common import JsonOpt, ProjectOpt, add_commands, print_json
from precedents.config import load_settings


def remember(
    text: Annotated[str, typer.Argument(help="What to remember (Markdown).")],
    title: Annotated[
        str | None, typer.Option("--title", help="The note's name (default: its first line).")
    ] = None,
    team: Annotated[
        bool,
        typer.Option(
            "--team",
            help="Write it into the repository's team notes (.precedents/notes/), to commit.",
        ),
    ] = False,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Write a note (front matter: name, description, date; secrets masked) where Claude Code
    keeps this project's memory, and make it searchable: the daemon (started if none runs)
    indexes it within seconds, and a `query` meanwhile waits for it. With --team: into the
    repository's team folder (author and created instead of date), never committed: it
    prints the `git add` to run."""
    # start_daemon: a daemon that is down is started and handed the note (it returns in
    # well under a second), rather than the model loaded here (seconds; docs/cli.md).
    result = api.remember(
        load_settings(), text, title=title, project=project, team=team, start_daemon=True
    )
    _print(result, as_json, "remembered")


def promote(
    note: Annotated[
        str, typer.Argument(help="A note's file, or the name of one of this project's notes.")
    ],
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Copy a personal note into the repository's team notes (masked, with author and
    created; the original stays as it is; an existing file is never overwritten)."""
    _print(api.promote(load_settings(), note, project=project), as_json, "promoted")


def _print(result: dict[str, Any], as_json: bool, done: str) -> None:
    if as_json:
        print_json(result)
        return
    if result.get("problem"):  # the team's config.toml: the default folder was used
        typer.echo(f"precedents: warning: {result['problem']}", err=True)
    by = result["indexed_by"]
    if by == "daemon":  # taken: indexed on its time (a `query` meanwhile waits for it)
        by = "the daemon" if result.get("loaded") else "the daemon once its model loads"
    typer.echo(f"{done}: {result['path']} (indexed by {by})")
    if result.get("git_add"):
        typer.echo(f"share it with your team (nothing was committed): {result['git_add']}")


def register(app: typer.Typer) -> None:
    """Add `remember` and `promote` to the main command line."""
    add_commands(app, {"remember": remember, "promote": promote})
