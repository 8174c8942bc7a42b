"""`precedents adr ...`: the ADR graph on the command line (list, find, show, chain, check).

Thin: each command builds the graph with :func:`precedents.adr_graph.build_graph`
(the same call the watcher and the daemon make) and prints one library answer.
User mistakes exit 2 with one line on stderr; a chain that cannot be followed
exits 1; `check` exits 1 when it finds an error, so it can run in CI.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from precedents.adr_graph import AdrGraph, AdrRecord, build_graph, default_adr_dir
from precedents.cli_common import print_json
from precedents.errors import PrecedentsError, UsageError

adr_app = typer.Typer(
    help="Architecture decision records: effective statuses, chains and checks.",
    no_args_is_help=True,
)

DirOption = Annotated[
    Path | None,
    typer.Option(
        "--dir",
        help="ADR folder (default: the configured or conventional ADR folder of this repository).",
        file_okay=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]
T = TypeVar("T")


def _fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"precedents adr: {message}", err=True)
    return typer.Exit(code)


def _guard(fn: Callable[[], T]) -> T:
    """Run library code; user mistakes exit 2, other known failures exit 1."""
    try:
        return fn()
    except UsageError as exc:
        raise _fail(str(exc), 2) from None
    except PrecedentsError as exc:
        raise _fail(str(exc), 1) from None


def _cache_dir() -> Path | None:
    try:
        from precedents.config import load_settings

        return load_settings().cache_dir / "adr"
    except PrecedentsError:
        return None  # a broken config must not stop an ADR query; run uncached


def _graph(folder: Path | None) -> AdrGraph:
    def build() -> AdrGraph:
        target = folder
        if target is None:
            configured: tuple[Path, ...] = ()
            try:
                from precedents.config import load_settings

                configured = load_settings().adrs
            except PrecedentsError:
                pass
            target = default_adr_dir(Path.cwd(), configured)
        return build_graph(target, _cache_dir())

    return _guard(build)


def _line(rec: AdrRecord) -> str:
    mark = f"  [{rec.mark}]" if rec.mark else ""
    return f"{rec.label:<12} {rec.status:<21} {rec.title}{mark}  ({rec.path})"


@adr_app.command("list")
def list_cmd(dir: DirOption = None, json_out: JsonOption = False) -> None:
    """Every ADR with its effective status, successors and mark; other files apart."""
    graph = _graph(dir)
    if json_out:
        print_json(graph.as_dict())
        return
    for rec in graph:
        typer.echo(_line(rec))
    if graph.non_adrs:
        typer.echo("\nnot ADRs:")
        for other in graph.non_adrs:
            typer.echo(f"  {other.path}  ({other.reason})")
    for warning in graph.warnings:
        typer.echo(f"warning: {warning}", err=True)


@adr_app.command("find")
def find_cmd(
    words: Annotated[list[str], typer.Argument(help="Words that must all appear.")],
    dir: DirOption = None,
    json_out: JsonOption = False,
) -> None:
    """ADRs whose title or text contains every word, with status and date."""
    hits = _graph(dir).find(words)
    if json_out:
        print_json(
            [
                {k: r.as_dict()[k] for k in ("path", "id", "title", "status", "mark", "date")}
                for r in hits
            ]
        )
        return
    for rec in hits:
        typer.echo(f"{rec.date or '':10} {_line(rec)}")
    if not hits:
        typer.echo("no ADR matches", err=True)


@adr_app.command("show")
def show_cmd(
    adr_id: Annotated[str, typer.Argument(metavar="ID", help="ADR id, number or path.")],
    dir: DirOption = None,
    json_out: JsonOption = False,
) -> None:
    """One ADR: its mark first, then its header and its text."""
    graph = _graph(dir)
    rec = _guard(lambda: graph.get(adr_id))
    if json_out:
        print_json(rec.as_dict(with_text=True))
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
    sys.stdout.write(rec.text if rec.text.endswith("\n") else rec.text + "\n")


@adr_app.command("chain")
def chain_cmd(
    adr_id: Annotated[str, typer.Argument(metavar="ID", help="ADR id, number or path.")],
    dir: DirOption = None,
    json_out: JsonOption = False,
) -> None:
    """Follow replacements to the ADR in force: current policy, then history."""
    graph = _graph(dir)
    packet = _guard(lambda: graph.chain(adr_id))
    if json_out:
        print_json(packet)
        return
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


@adr_app.command("check")
def check_cmd(dir: DirOption = None, json_out: JsonOption = False) -> None:
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
        raise typer.Exit(1)
