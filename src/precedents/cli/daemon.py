"""`serve` and `install-hook`: the query daemon and the Claude Code hook that asks it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from precedents.cli.common import JsonOpt, add_commands, print_json
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
    from precedents import protocol
    from precedents.query_daemon import server
    from precedents.query_daemon.server import configure_logging
    from precedents.query_daemon.server import serve as run_daemon

    settings = load_settings()
    if status:
        # The same test `serve` makes (who holds the lock), plus whether it answers.
        info = server.status(settings.run_dir)
        if not info["running"]:
            typer.echo("no daemon is running")
            raise typer.Exit(1)
        typer.echo(json.dumps(info))
        raise typer.Exit(0 if info["answering"] else 1)
    if stop:
        try:
            protocol.ask({"op": "stop"}, 2.0, settings.run_dir)
        except protocol.Unavailable:
            typer.echo("no daemon is running")
            raise typer.Exit(0) from None
        typer.echo("stopping the daemon")
        return
    configure_logging(settings)
    reason = run_daemon(settings, idle_timeout_s=idle_timeout, transport="tcp" if tcp else None)
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
    as_json: JsonOpt = False,
) -> None:
    """Register the UserPromptSubmit and SessionStart hooks without the plugin.

    By default in your own Claude Code settings.json; with --project, in that
    project's settings.local.json; never in a committed file without --shared.
    The plugin (docs/plugin.md) does the same without absolute paths.
    """
    from precedents.hook import PROMPT_BUDGET_MS
    from precedents.hook.install import has_ours, install, plugin_enabled, settings_path

    if user and (project is not None or shared):
        raise UsageError("give --user or --project/--shared, not both")
    if form not in ("auto", "exec", "shell"):
        raise UsageError("--form must be auto, exec or shell")
    settings = load_settings()
    path = settings_path(project, settings.claude_dir, shared=shared)
    # Only a budget other than the hook's own default goes into its arguments.
    budget = settings.hook_budget_ms
    report = install(
        path,
        uninstall=uninstall,
        exec_form=None if form == "auto" else form == "exec",
        budget_ms=None if budget == PROMPT_BUDGET_MS else budget,
    )
    if report.action == "installed" and plugin_enabled(settings.claude_dir):
        typer.echo(
            "note: the precedents plugin is enabled too; its hooks and these would both run "
            "(keep one: `precedents install-hook --uninstall` or `/plugin disable precedents`)",
            err=True,
        )
    committed = path.with_name("settings.json")
    if report.action == "installed" and committed != path and has_ours(committed):
        typer.echo(
            f"note: {committed} still holds precedents hooks from an earlier install "
            "(remove them: `precedents install-hook --project DIR --shared --uninstall`)",
            err=True,
        )
    if as_json:
        print_json(report.to_json())
        return
    messages = {
        "installed": f"hooks registered in {path} ({'exec' if report.exec_form else 'shell'} form)",
        "unchanged": f"hooks already registered in {path}",
        "uninstalled": f"removed {report.removed} precedents hook(s) from {path}",
        "absent": f"no precedents hooks in {path}",
    }
    typer.echo(messages[report.action])


def register(app: typer.Typer) -> None:
    """Add `serve` and `install-hook` to the main command line."""
    add_commands(app, {"serve": serve, "install-hook": install_hook})
