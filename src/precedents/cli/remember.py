"""`remember`: save a memory note into the project's Claude Code memory folder."""

from __future__ import annotations

from typing import Annotated

import typer

from precedents import api
from precedents.cli.common import JsonOpt, ProjectOpt, add_commands, print_json
from precedents.config import load_settings


def remember(
    text: Annotated[str, typer.Argument(help="What to remember (Markdown).")],
    title: Annotated[
        str | None, typer.Option("--title", help="The note's name (default: its first line).")
    ] = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Write a note (front matter: name, description, date; secrets masked) where Claude Code
    keeps this project's memory, and make it searchable at once."""
    result = api.remember(load_settings(), text, title=title, project=project)
    if as_json:
        print_json(result)
    else:
        typer.echo(f"remembered: {result['path']} (indexed by {result['indexed_by']})")


def register(app: typer.Typer) -> None:
    """Add `remember` to the main command line."""
    add_commands(app, {"remember": remember})
