"""`watch`: keep the index current as files change, in the foreground.

Logs to stderr at INFO what was indexed (paths and counts, never text). A
missing folder or a watcher already running is a user mistake (exit 2).
"""

from __future__ import annotations

from typing import Annotated

import typer

from precedents import api
from precedents.cli.common import (
    AdrsOpt,
    ConversationsOpt,
    NotesOpt,
    ProjectOpt,
    RulesOpt,
    add_commands,
    to_sources,
)
from precedents.config import load_settings


def watch(
    notes: NotesOpt = None,
    rules: RulesOpt = None,
    adrs: AdrsOpt = None,
    conversations: ConversationsOpt = None,
    project: ProjectOpt = None,
    debounce: Annotated[
        float,
        typer.Option("--debounce", help="Seconds a note must be quiet before it is indexed."),
    ] = 0.3,
) -> None:
    """Keep the index current as files change, in the foreground, until Ctrl-C or SIGTERM.

    With folders given, only they are watched; otherwise every configured and
    discovered source (Claude Code's folders included, new ones as they appear).
    """
    folders = to_sources(notes, rules, adrs, conversations, project)
    api.watch(load_settings(), folders, debounce)


def register(app: typer.Typer) -> None:
    """Add `watch` to the main command line."""
    add_commands(app, {"watch": watch})
