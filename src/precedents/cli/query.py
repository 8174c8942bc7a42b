"""`query`: ranked records for a message, or exactly what the hook would inject (`--auto`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from precedents import api
from precedents.cli.common import JsonOpt, ProjectOpt, add_commands, print_json
from precedents.config import load_settings
from precedents.errors import UsageError
from precedents.inert import DATE_CHARS, SUSPECT_MARK, decided_label, org_label, team_head

if TYPE_CHECKING:
    from precedents.api import QueryResult


def query(
    text: Annotated[str, typer.Argument(help="What to look for.")],
    project: ProjectOpt = None,
    k: Annotated[int, typer.Option("-k", help="How many documents.")] = 5,
    auto: Annotated[
        bool,
        typer.Option(
            "--auto",
            help="Print exactly what the hook would inject (nothing: one line on stderr says so).",
        ),
    ] = False,
    all_projects: Annotated[
        bool, typer.Option("--all", help="Search every indexed project, not just one.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Documents of this project (and shared rules) ranked by similarity."""
    if k < 1:
        raise UsageError("-k must be at least 1")
    if all_projects and (project or auto):
        raise UsageError("--all searches every project: drop --project/--auto")
    if auto:
        _print_auto(api.auto_context(load_settings(), text, project=project), as_json)
        return
    result = api.query(load_settings(), text, project=project, k=k, all_projects=all_projects)
    if as_json:
        print_json(result)
        return
    _print_results(result, all_projects)


def _print_auto(context: str | None, as_json: bool) -> None:
    """What the hook would inject: its text, nothing when nothing stands out."""
    if as_json:
        print_json({"additionalContext": context})
    elif context:
        typer.echo(context)
    else:  # silence would read as a failure (issue #29): say it, on stderr as a note
        typer.echo(
            "nothing stands out for this message: the hook would inject nothing "
            "(`precedents query` shows the ranking)",
            err=True,
        )


def _print_results(result: QueryResult, all_projects: bool) -> None:
    """One line per document: score, ADR mark, kind, name, description, path."""
    rows = result["results"]
    if not rows:
        typer.echo("no records found for this project (run `precedents reindex`?)")
    elif not all_projects and all(r["project"] == "*" for r in rows):
        typer.echo(
            f"(only shared rules: nothing indexed for {result['project']}; "
            "try --project PATH or --all)",
            err=True,
        )
    for r in rows:
        label = f"{r['adr_id']} {r['name']}" if r["adr_id"] else r["name"]
        if r["kind"] == "commit":  # as the hook shows it: short sha and day first
            label = f"{r.get('short', '')} {r['date']} {label}".strip()
        desc = f" — {r['description']}" if r["description"] else ""
        if r.get("exchange"):  # a conversation's decision passage: which exchange, when
            stamp = f"{r.get('decided', '')}#{r['exchange']}"
            desc = f" — [{decided_label(stamp)}] {r['description']}"
        mark = r.get("mark") or ""
        kind = r["kind"]
        if r.get("team"):  # a team note: "note (team, author, date)", as the hook shows it
            kind = f"{kind} {team_head(r.get('author') or '', r['date'][:DATE_CHARS])}"
        if r.get("org"):  # an org record: "adr (org, repo)", as the hook shows it
            kind = f"{kind} {org_label(r.get('repo') or '')}"
        if r.get("suspect"):  # its text reads as orders: the path only (docs/daemon.md)
            mark = f"{SUSPECT_MARK} {mark}".rstrip()
            label, desc = "", ""
        if r.get("muted"):  # on the mute list: still ranked, its words withheld
            label, desc = "(muted)", ""
        typer.echo(
            f"{r['score']:.3f}  {mark + ' ' if mark else ''}{kind:<12} {label}{desc} ({r['path']})"
        )


def register(app: typer.Typer) -> None:
    """Add `query` to the main command line."""
    add_commands(app, {"query": query})
