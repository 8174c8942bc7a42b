"""`precedents adr ...`: the ADR graph on the command line (list, find, show, chain, check).

Thin: each command builds the graph with :func:`precedents.adr_graph.build_graph`
(the same call the watcher and the daemon make) and prints one library answer.
User mistakes exit 2 with one line on stderr; a chain that cannot be followed
exits 1; `check` exits 1 when it finds an error, so it can run in CI.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from precedents.adr_graph import STATUSES, AdrRecord
from precedents.cli.common import JsonOpt, add_commands, print_json
from precedents.config import Settings, load_settings
from precedents.errors import PrecedentsError, UsageError
from precedents.secrets import mask_secrets

if TYPE_CHECKING:
    from precedents.adr_graph import AdrGraph

DirOption = Annotated[
    Path | None,
    typer.Option(
        "--dir",
        help="ADR folder (default: the configured or conventional ADR folder of this repository).",
        file_okay=False,
    ),
]
IdArgument = Annotated[str, typer.Argument(metavar="ID", help="ADR id, number or path.")]


def _settings() -> Settings | None:
    try:
        return load_settings()
    except PrecedentsError:
        return None  # a broken config must not stop an ADR query: run uncached, unconfigured


def _graph(folder: Path | None) -> AdrGraph:
    """The graph of ``folder``, else of the configured or conventional ADR folder here."""
    # Imported here: the graph's parser loads only for `adr` commands (CLI start).
    from precedents.adr_graph import build_graph, default_adr_dir

    settings = _settings()
    if folder is None:
        folder = default_adr_dir(Path.cwd(), settings.adrs if settings else ())
    cache = settings.cache_dir / "adr" if settings else None
    return build_graph(folder, cache, mask_secrets)


def _line(rec: AdrRecord) -> str:
    mark = f"  [{rec.mark}]" if rec.mark else ""
    return f"{rec.label:<12} {rec.status:<21} {rec.title}{mark}  ({rec.path})"


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
    graph = _graph(dir)
    shown = [rec for rec in graph if status is None or rec.status == status]
    if json_out:
        data = graph.as_dict()
        data["records"] = [r.as_dict() for r in shown]
        print_json(data)
        return
    for rec in shown:
        typer.echo(_line(rec))
    if graph.non_adrs:
        typer.echo("\nnot ADRs:")
        for other in graph.non_adrs:
            typer.echo(f"  {other.path}  ({other.reason})")
    for warning in graph.warnings:
        typer.echo(f"warning: {warning}", err=True)


def find_cmd(
    words: Annotated[list[str], typer.Argument(help="Words that must all appear.")],
    dir: DirOption = None,
    json_out: JsonOpt = False,
) -> None:
    """ADRs whose title or text contains every word, with status and date."""
    hits = _graph(dir).find(words)
    if json_out:
        keys = ("path", "id", "title", "status", "mark", "date")
        print_json([{k: r.as_dict()[k] for k in keys} for r in hits])
        return
    for rec in hits:
        typer.echo(f"{rec.date or '':10} {_line(rec)}")
    if not hits:
        typer.echo("no ADR matches", err=True)


def show_cmd(adr_id: IdArgument, dir: DirOption = None, json_out: JsonOpt = False) -> None:
    """One ADR: its mark first, then its header and its text."""
    graph = _graph(dir)
    rec = graph.get(adr_id)
    text = graph.text_of(rec)
    if json_out:
        print_json({**rec.as_dict(), "text": text})
        return
    externals = [s["target"] for s in rec.successor_refs if s["kind"] == "external"]
    mark = rec.mark or "live"
    if externals:
        mark += f" (external: {', '.join(externals)})"
    typer.echo(mark)
    typer.echo(f"{rec.label}: {rec.title}")
    typer.echo(f"path: {rec.path}")
    typer.echo(f"status: {rec.status} (declared: {rec.declared_status or 'none'}; {rec.reason})")
    for key, value in (("date", rec.date), ("component", rec.component)):
        if value:
            typer.echo(f"{key}: {value}")
    if rec.successors:
        typer.echo(f"successors: {', '.join(rec.successors)}")
    for rel in rec.relations:
        typer.echo(f"{rel['type'].replace('_', ' ')}: {rel['target']}")
    typer.echo("")
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def chain_cmd(adr_id: IdArgument, dir: DirOption = None, json_out: JsonOpt = False) -> None:
    """Follow replacements to the ADR in force: current policy, then history."""
    graph = _graph(dir)
    packet = graph.chain(adr_id)
    if json_out:
        print_json(packet)
        return
    _print_chain(graph, packet)


def _print_chain(graph: AdrGraph, packet: dict[str, Any]) -> None:
    """The records in force with their text, then the replaced ones as history."""
    current = packet["current"] if isinstance(packet["current"], list) else [packet["current"]]
    sources = packet["sources"]
    typer.echo("CURRENT POLICY (in force):")
    for rid in current:
        src = sources[rid]
        typer.echo(f"\n=== {graph.records[rid].label}: {src['title']} ({src['path']})\n")
        typer.echo(src["text"].rstrip("\n"))
    if packet.get("note"):
        typer.echo(f"\nnote: {packet['note']}")
    if packet["history"]:
        typer.echo("\nHISTORY (replaced; background only, not current policy):")
        for rid in packet["history"]:
            src = sources[rid]
            typer.echo(
                f"  {graph.records[rid].label}: {src['title']} [{src['mark']}] ({src['path']})"
            )
    for crossing in packet.get("cross_component", []):
        typer.echo(f"\ncross-component replacement: {crossing['components']}")


def check_cmd(dir: DirOption = None, json_out: JsonOpt = False) -> None:
    """Cycles, dangling links, disagreements, cross-component replacements, missing
    statuses. Exit 1 when any error is found (for CI)."""
    graph = _graph(dir)
    findings = graph.check()
    errors = sum(f.severity == "error" for f in findings)
    if json_out:
        print_json(
            {
                "folder": str(graph.folder),
                "records": len(graph),
                "errors": errors,
                "warnings": len(findings) - errors,
                "findings": [f.as_dict() for f in findings],
            }
        )
    else:
        for f in findings:
            typer.echo(f"{f.severity:7} {f.kind:20} {f.path}: {f.message}")
        typer.echo(
            f"{len(graph)} ADRs: {errors} error(s), {len(findings) - errors} warning(s)",
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
