"""`serve` and `install-hook`: the query daemon and the Claude Code hook that asks it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from precedents import api
from precedents.cli.common import JsonOpt, add_commands, existing_folder, print_json
from precedents.config import load_settings
from precedents.errors import UsageError


def serve(
    idle_timeout: Annotated[
        float | None,
        typer.Option(
            "--idle-timeout",
            help="Exit after this many seconds without a question "
            "(default: idle_timeout_s, 6 hours).",
        ),
    ] = None,
    tcp: Annotated[
        bool, typer.Option("--tcp", help="TCP on 127.0.0.1 with a secret (Windows' transport).")
    ] = False,
    stop: Annotated[bool, typer.Option("--stop", help="Stop the running daemon and exit.")] = False,
    status: Annotated[
        bool, typer.Option("--status", help="Say whether a daemon is running and exit.")
    ] = False,
) -> None:
    """Run the query daemon in the foreground: the hook's answers come from it."""
    settings = load_settings()
    if status:
        # The same test `serve` makes (who holds the lock), plus whether it answers.
        info = api.daemon_status(settings)
        if not info["running"]:
            typer.echo("no daemon is running")
            raise typer.Exit(1)
        typer.echo(json.dumps(info))
        raise typer.Exit(0 if info["answering"] else 1)
    if stop:
        if not api.stop_daemon(settings):
            typer.echo("no daemon is running")
            raise typer.Exit(0)
        typer.echo("stopping the daemon")
        return
    reason = api.serve(settings, idle_timeout_s=idle_timeout, tcp=tcp)
    typer.echo(f"daemon stopped: {reason}", err=True)
    if reason.startswith("error"):
        raise typer.Exit(1)  # the daemon has logged why; the line above says so


def install_hook(
    project: Annotated[
        Path | None,
        typer.Option(
            "--project",
            help="Register in DIR/.claude/settings.local.json (not committed) "
            "instead of your own settings.",
            callback=existing_folder,
        ),
    ] = None,
    shared: Annotated[
        bool,
        typer.Option(
            "--shared",
            help="With --project (default: here): the committed DIR/.claude/settings.json "
            "instead; it holds this machine's paths.",
        ),
    ] = False,
    user: Annotated[
        bool,
        typer.Option(
            "--user",
            help="Your own settings.json in Claude Code's folder (the default; "
            "CLAUDE_CONFIG_DIR or ~/.claude).",
        ),
    ] = False,
    uninstall: Annotated[
        bool, typer.Option("--uninstall", help="Remove exactly the hooks precedents added.")
    ] = False,
    form: Annotated[
        str, typer.Option("--form", help="auto (ask `claude --version`), exec or shell.")
    ] = "auto",
    http: Annotated[
        bool,
        typer.Option(
            "--http",
            help="UserPromptSubmit as an http hook to the daemon on 127.0.0.1 "
            "(Claude Code 2.1.63+); records http_port in the config if unset.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Register the UserPromptSubmit and SessionStart hooks without the plugin.

    By default in your own Claude Code settings.json; with --project, in that
    project's settings.local.json; never in a committed file without --shared.
    The plugin (docs/plugin.md) does the same without absolute paths.
    """
    if user and (project is not None or shared):
        raise UsageError("give --user or --project/--shared, not both")
    if form not in ("auto", "exec", "shell"):
        raise UsageError("--form must be auto, exec or shell")
    done = api.install_hook(
        load_settings(), project=project, shared=shared, uninstall=uninstall, form=form, http=http
    )
    for warning in done.warnings:
        typer.echo(warning, err=True)
    if as_json:
        print_json(done.report.to_json())
        return
    for note in done.http_notes():
        typer.echo(note, err=True)
    typer.echo(done.message())


def register(app: typer.Typer) -> None:
    """Add `serve` and `install-hook` to the main command line."""
    add_commands(app, {"serve": serve, "install-hook": install_hook})
