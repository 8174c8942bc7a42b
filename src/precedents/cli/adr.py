"""`precedents adr ...`: the ADR graph on the command line (list, find, show, chain, check).

Thin: each command gets the graph from :func:`precedents.api.adr_view` (the one way
a command or an MCP tool builds one) and prints one library answer, rendered by
:class:`precedents.adr_graph.view.AdrView` as the MCP tools are: every field inert,
an ADR's text behind a gutter, a suspect ADR as its id, path and mark. User
mistakes, a broken config among them, exit 2 with one line on stderr; a chain that
cannot be followed exits 1; `check` exits 1 when it finds an error, so it can run in CI.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from precedents import api
from precedents.adr_graph.model import STATUSES
from precedents.adr_graph.view import GUTTER, WITHHELD, line_label, shown_date
from precedents.cli.common import JsonOpt, add_commands, existing_folder, print_json
from precedents.config import load_settings
from precedents.errors import UsageError
from precedents.inert import SUSPECT_MARK, inert_path

if TYPE_CHECKING:
    from precedents.adr_graph import AdrRecord
    from precedents.adr_graph.view import AdrView

DirOption = Annotated[
    Path | None,
    typer.Option(
        "--dir",
        help="ADR folder (default: the configured or conventional ADR folder of this repository).",
        metavar="<dir>",
        callback=existing_folder,
    ),
]
IdArgument = Annotated[str, typer.Argument(metavar="ID", help="ADR id, number or path.")]


def _view(folder: Path | None) -> AdrView:
    """The graph of ``folder``, else of the configured or conventional ADR folder here,
    as output: every field inert (adr_graph/view.py). A broken config is its one-line
    error, as for every command and the MCP tools (it names the ADR folders too)."""
    return api.adr_view(load_settings(), folder)


def _line(view: AdrView, rec: AdrRecord) -> str:
    """One record on one line, every field inert: a suspect one shows no title."""
    d = view.record(rec)
    title = f"{SUSPECT_MARK} ({d['suspect_reason']})" if d["suspect"] else d["title"]
    mark = f"  [{d['mark']}]" if d["mark"] else ""
    label = line_label(view.label(rec))
    return f"{label:<12} {rec.status:<21} {title}{mark}  ({d['path']})"


def list_cmd(
    dir: DirOption = None,
    status: Annotated[
        str | None,
        typer.Option(help=f"Only records of this effective status ({', '.join(STATUSES)})."),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Every ADR with its effective status, successors and mark; other files apart."""
    if status is not None and status not in STATUSES:
        raise UsageError(f"--status must be one of {', '.join(STATUSES)}, not {status!r}")
    view = _view(dir)
    shown = [rec for rec in view.graph if status is None or rec.status == status]
    data = view.listing(shown)
    if json_out:
        print_json(data)
        return
    for rec in shown:
        typer.echo(_line(view, rec))
    if data["not_adrs"]:
        typer.echo("\nnot ADRs:")
        for other in data["not_adrs"]:
            typer.echo(f"  {other['path']}  ({other['reason']})")
    for warning in data["warnings"]:
        typer.echo(f"warning: {warning}", err=True)


def find_cmd(
    words: Annotated[list[str], typer.Argument(help="Words that must all appear.")],
    dir: DirOption = None,
    json_out: JsonOpt = False,
) -> None:
    """ADRs whose title or text contains every word, with status and date."""
    view = _view(dir)
    hits = view.graph.find(words)
    if json_out:
        keys = ("path", "id", "title", "status", "mark", "date", "suspect")
        print_json([{k: view.record(r)[k] for k in keys} for r in hits])
        return
    for rec in hits:
        typer.echo(f"{shown_date(rec.date):10} {_line(view, rec)}")
    if not hits:
        typer.echo("no ADR matches", err=True)


def show_cmd(adr_id: IdArgument, dir: DirOption = None, json_out: JsonOpt = False) -> None:
    """One ADR: its mark first, then its header and its text (behind a gutter)."""
    view = _view(dir)
    rec = view.get(adr_id)
    d = view.show(rec)
    if json_out:
        print_json(d)
        return
    mark = d["mark"] or "live"
    if d["external"]:
        mark += f" (external: {', '.join(d['external'])})"
    typer.echo(mark)
    if d["suspect"]:
        typer.echo(f"{SUSPECT_MARK} ({d['suspect_reason']}): {WITHHELD}")
    typer.echo(f"id: {line_label(view.label(rec))}")
    if not d["suspect"]:
        typer.echo(f"title: {d['title']}")
    typer.echo(f"path: {d['path']}")
    declared = "" if d["suspect"] else f"declared: {d['declared_status'] or 'none'}; "
    typer.echo(f"status: {rec.status} ({declared}{d['reason']})")
    for key in ("date", "component"):
        if d[key]:
            typer.echo(f"{key}: {d[key]}")
    if d["successors"]:
        typer.echo(f"successors: {', '.join(d['successors'])}")
    for rel in d["relations"]:
        typer.echo(f"{rel['type'].replace('_', ' ')}: {rel['target']}")
    _print_lines(d["lines"])


def _print_lines(lines: list[str]) -> None:
    """An ADR's text as a data block: a blank line, then each line behind the gutter."""
    if lines:
        typer.echo("")
    for line in lines:
        typer.echo(f"{GUTTER}{line}".rstrip())


def chain_cmd(adr_id: IdArgument, dir: DirOption = None, json_out: JsonOpt = False) -> None:
    """Follow replacements to the ADR in force: current policy, then history."""
    view = _view(dir)
    packet = view.chain(adr_id)
    if json_out:
        print_json(packet)
        return
    _print_chain(packet)


def _print_chain(packet: dict[str, Any]) -> None:
    """The records in force with their text, then the replaced ones as history."""
    current = packet["current"] if isinstance(packet["current"], list) else [packet["current"]]
    sources = packet["sources"]
    typer.echo("CURRENT POLICY (in force):")
    for key in current:
        src = sources[key]
        if src["suspect"]:
            typer.echo(f"\n=== {SUSPECT_MARK} {src['label']} ({src['path']})")
            typer.echo(f"({src['suspect_reason']}): {WITHHELD}")
            continue
        typer.echo(f"\n=== {src['label']} — {src['title']} ({src['path']})")
        _print_lines(src["lines"])
    if packet.get("note"):
        typer.echo(f"\nnote: {packet['note']}")
    if packet["history"]:
        typer.echo("\nHISTORY (replaced; background only, not current policy):")
        for key in packet["history"]:
            src = sources[key]
            title = SUSPECT_MARK if src["suspect"] else src["title"]
            typer.echo(f"  - {src['label']} — {title} [{src['mark']}] ({src['path']})")
    for crossing in packet.get("cross_component", []):
        typer.echo(f"\ncross-component replacement: {crossing['components']}")


def check_cmd(dir: DirOption = None, json_out: JsonOpt = False) -> None:
    """Cycles, dangling links, disagreements, cross-component replacements, missing
    statuses; ADRs whose text reads as orders to an agent; ids another ADR folder of the
    repository claims too. Exit 1 when any error is found (for CI)."""
    view, findings = api.adr_check(load_settings(), dir)
    # The summary counts the very lines printed, by the severity each is printed with.
    errors = sum(f["severity"] == "error" for f in findings)
    warnings = sum(f["severity"] == "warning" for f in findings)
    if json_out:
        print_json(
            {
                "folder": inert_path(str(view.graph.folder)),
                "records": len(view.graph),
                "errors": errors,
                "warnings": warnings,
                "findings": findings,
            }
        )
    else:
        for f in findings:
            typer.echo(f"{f['severity']:7} {f['kind']:20} {f['path']}: {f['message']}")
        typer.echo(
            f"{len(view.graph)} ADRs: {errors} error(s), {warnings} warning(s)",
            err=bool(findings),
        )
    if errors:
        raise typer.Exit(1)  # findings, not a failure of the command: already printed


adr_app = typer.Typer(
    help="Architecture decision records: effective statuses, chains and checks.",
    no_args_is_help=True,
)
add_commands(
    adr_app,
    {"list": list_cmd, "find": find_cmd, "show": show_cmd, "chain": chain_cmd, "check": check_cmd},
)


def register(app: typer.Typer) -> None:
    """Add the `adr` group to the main command line."""
    app.add_typer(adr_app, name="adr")
