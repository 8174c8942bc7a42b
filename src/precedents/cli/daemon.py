"""`serve` and `install-hook`: the query daemon and the Claude Code hook that asks it."""

from __future__ import annotations

import json
import os
import shlex
import socket
from pathlib import Path
from typing import Annotated

import typer

from precedents.cli.common import JsonOpt, add_commands, print_json
from precedents.config import CONFIG_FILE, Settings, load_settings, record_http_port
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
    from precedents.hook.core import FIRST_BUDGET_MS, PROMPT_BUDGET_MS
    from precedents.hook.install import has_ours, install, plugin_enabled, settings_path

    if user and (project is not None or shared):
        raise UsageError("give --user or --project/--shared, not both")
    if form not in ("auto", "exec", "shell"):
        raise UsageError("--form must be auto, exec or shell")
    settings = load_settings()
    path = settings_path(project, settings.claude_dir, shared=shared)
    # Only a budget other than the hook's own default goes into its arguments.
    budget = settings.hook_budget_ms
    url = None
    if http and not uninstall:
        from precedents.hook.install import check_http_support

        check_http_support()  # before anything is written
        url = _http_setup(settings)
    report = install(
        path,
        uninstall=uninstall,
        exec_form=None if form == "auto" else form == "exec",
        budget_ms=None if budget == PROMPT_BUDGET_MS else budget,
        http_url=url,
        first_budget_ms=(
            None
            if settings.first_prompt_budget_ms == FIRST_BUDGET_MS
            else settings.first_prompt_budget_ms
        ),
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
    if url is not None:
        _http_notes(settings, url)
    kind = "http" if report.http else "exec" if report.exec_form else "shell"
    messages = {
        "installed": f"hooks registered in {path} ({kind} form)",
        "unchanged": f"hooks already registered in {path}",
        "uninstalled": f"removed {report.removed} precedents hook(s) from {path}",
        "absent": f"no precedents hooks in {path}",
    }
    typer.echo(messages[report.action])


def _http_setup(settings: Settings) -> str:
    """The http hook's URL: ``http_port`` (picked and recorded in config.toml when unset);
    the per-install secret is created if missing."""
    from precedents.query_daemon.http import ensure_secret, hook_url, pick_port

    port = settings.http_port
    if not port:
        port = pick_port()
        record_http_port(settings.home / CONFIG_FILE, port)
    ensure_secret(settings.home)
    return hook_url(port)


def _http_notes(settings: Settings, url: str) -> None:
    """What the user still has to do: the token in Claude Code's environment, a daemon restart."""
    from precedents.query_daemon.http import TOKEN_ENV, ensure_secret, secret_path
    from precedents.query_daemon.server import status as server_status

    if os.environ.get(TOKEN_ENV) != ensure_secret(settings.home):
        typer.echo(
            f"note: Claude Code must see {TOKEN_ENV}; add to your shell profile "
            f'(the secret stays in its 0600 file): export {TOKEN_ENV}="$(cat '
            f'{shlex.quote(str(secret_path(settings.home)))})"',
            err=True,
        )
    port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        listening = probe.connect_ex(("127.0.0.1", port)) == 0
    if not listening and server_status(settings.run_dir)["running"]:
        typer.echo(
            "note: the running daemon has no HTTP listener yet; restart it "
            "(`precedents serve --stop`; the next session's hook starts it again)",
            err=True,
        )


def register(app: typer.Typer) -> None:
    """Add `serve` and `install-hook` to the main command line."""
    add_commands(app, {"serve": serve, "install-hook": install_hook})
