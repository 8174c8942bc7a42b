"""`why`, `mute`, `unmute`: what the hook injected lately, and records never to inject again."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from precedents import api
from precedents.cli.common import JsonOpt, ProjectOpt, add_commands, print_json
from precedents.config import load_settings
from precedents.errors import UsageError
from precedents.inert import SUSPECT_MARK, decided_label, inert_mark, inert_path


def why(
    project: ProjectOpt = None,
    n: Annotated[int, typer.Option("-n", help="How many of the last prompts.")] = 5,
    as_json: JsonOpt = False,
) -> None:
    """The hook's last decisions for this project: injected or why not, scores, records shown."""
    if n < 1:
        raise UsageError("-n must be at least 1")
    settings = load_settings()
    answers = api.why(settings, project, n)
    if as_json:
        print_json(answers)
        return
    if not answers:
        typer.echo(
            "no prompt of this project answered yet (is the hook installed and the daemon up?)"
        )
    for a in answers:
        typer.echo(_line(a))
        suspect = set(a.get("suspect") or [])
        team = a.get("team") or {}
        decided = a.get("decided") or {}
        delivered = a["decision"] == "injected"
        for path in a["shown"]:
            # A suspect record was given as its path only: its text reads as orders.
            flag = f"  {SUSPECT_MARK} (shown as its path only)" if path in suspect else ""
            if path in team:  # a team note, with its author and date (logged inert)
                flag = f"  note {inert_mark(str(team[path]))}{flag}"
            if path in decided:  # a conversation: the exchange its decision was said in
                flag = f"  {decided_label(str(decided[path]))}{flag}"
            late = "" if delivered or a.get("hook") is None else "  (never reached the agent)"
            typer.echo(f"    {inert_path(path)}{flag}{late}")
        for path in a.get("withheld") or []:
            typer.echo(f"    {inert_path(path)}  (already given in this session)")
        for entry in a.get("muted") or []:
            # {"path", "route"}: the route it would have come by (older logs: a path).
            path, route = (
                (entry.get("path"), entry.get("route")) if isinstance(entry, dict) else (entry, "")
            )
            by = f"would have come by {inert_mark(str(route))}; " if route else ""
            typer.echo(
                f"    {inert_path(str(path))}  (muted: {by}`precedents unmute` gives it again)"
            )
    # The hook calls since the oldest answer listed that the daemon never saw (issue #21:
    # a prompt that got nothing because the daemon was down says so here too).
    calls = api.unanswered_calls(settings, answers[-1]["time"] if answers else "", n)
    if calls:
        typer.echo("hook calls the daemon never answered (any project; logs/hook.log):")
    for c in calls:
        typer.echo(f"{c['time']}  {c.get('event', 'prompt'):<6} {c.get('outcome')}")


def _line(a: dict[str, Any]) -> str:
    scores = " ".join(
        f"{k} {a[k]:.3f}" for k in ("top", "gap", "relevance") if isinstance(a.get(k), float)
    )
    hook = a.get("hook")
    if hook not in (None, "none", "starting", "injected") and a["decision"] in (
        a.get("reason"),
        "muted",
        "nothing-fit",
    ):
        scores += f" (hook: {hook})"  # e.g. a prompt that got nothing in time either way
    if a.get("waited_ms"):
        scores += f" (waited {a['waited_ms'] / 1000:.1f}s for the daemon to start)"
    return f"{a['time']}  {a.get('event', 'prompt'):<6} {a['decision']:<19} {scores}".rstrip()


PathArg = Annotated[Path, typer.Argument(help="The record's file (a note, rule or ADR).")]


def mute(path: PathArg, as_json: JsonOpt = False) -> None:
    """Never inject this record again (it still ranks in `query`); `unmute` undoes it."""
    _print(api.mute(load_settings(), path), as_json)


def unmute(path: PathArg, as_json: JsonOpt = False) -> None:
    """Let a muted record be injected again."""
    _print(api.mute(load_settings(), path, undo=True), as_json)


def _print(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(result)
        return
    state = "muted" if result["muted"] else "unmuted"
    typer.echo(f"{state}: {result['path']}" + ("" if result["changed"] else f" (already {state})"))


def register(app: typer.Typer) -> None:
    """Add `why`, `mute` and `unmute` to the main command line."""
    add_commands(app, {"why": why, "mute": mute, "unmute": unmute})
