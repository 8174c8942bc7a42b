"""`setup`, `reindex` and `status`: make the model available, build the index, describe it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from precedents import api
from precedents.cli.common import (
    AdrsOpt,
    ConversationsOpt,
    JsonOpt,
    ModelOpt,
    NotesOpt,
    ProjectOpt,
    RulesOpt,
    add_commands,
    print_json,
    to_sources,
)
from precedents.cli.org import status_line as org_status_line
from precedents.config import load_settings
from precedents.errors import PrecedentsError
from precedents.inert import SUSPECT_MARK

if TYPE_CHECKING:
    from precedents.ingest.indexer import IndexReport


def setup(
    model: Annotated[str | None, typer.Option(help="sentence-transformers id or folder.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Make the model available (the only command that may download), then load it once."""
    # The model named may be one to download: it is not looked for on this machine yet.
    info = api.setup(load_settings(fetching=True), model)
    if as_json:
        print_json(info)
        return
    typer.echo(
        f"model {info['model']} ({info['dimension']}d) ready on {info['device']}, "
        f"loaded in {info['load_seconds']}s from {info['path']}"
    )


def _waiting(pid: int | None) -> None:
    """Another process writes the index: say so once, then wait for it."""
    who = f" (pid {pid})" if pid else ""
    typer.echo(f"precedents: another writer{who} is updating the index; waiting for it", err=True)


def reindex(
    full: Annotated[bool, typer.Option("--full", help="Drop the index and re-embed all.")] = False,
    notes: NotesOpt = None,
    rules: RulesOpt = None,
    adrs: AdrsOpt = None,
    conversations: ConversationsOpt = None,
    project: ProjectOpt = None,
    model: ModelOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Index what changed (by content hash); with folders given, index only those."""
    from precedents.cli.progress import index_progress

    with index_progress(enabled=not as_json) as progress:
        report = api.reindex(
            load_settings(model=model),
            full=full,
            sources=to_sources(notes, rules, adrs, conversations, project),
            progress=progress,
            on_wait=_waiting,
        )
    if as_json:
        print_json(report.to_json())
    else:
        typer.echo(_summary(report))
        for p in report.problems:
            typer.echo(f"  skipped/warned: {p.path}: {p.reason}", err=True)
    if report.files_seen and report.files_indexed + report.files_unchanged == 0:
        raise PrecedentsError("nothing could be indexed")


def _summary(report: IndexReport) -> str:
    """The one-line summary of a pass: files, chunks, time and rate."""
    model = (
        f"; model loaded in {report.model_seconds:.1f}s)" if report.model_seconds >= 0.05 else ")"
    )
    # A file read but holding nothing to search (an automated session, an empty
    # note) is not "indexed": `make run` once said "12 indexed" of 11 such (#21).
    skipped = [
        f"{n} {what}{'s' if n > 1 else ''}"
        for n, what in (
            (report.skipped_sessions, "automated session"),
            (report.files_empty, "empty file"),
        )
        if n
    ]
    empty = report.skipped_sessions + report.files_empty
    left_out = f"{empty} skipped ({', '.join(skipped)}: nothing to search), " if empty else ""
    commits = f", {report.commits_indexed} new commit(s)" if report.commits_indexed else ""
    return (
        f"{report.files_seen} files: {report.files_indexed - empty} indexed, {left_out}"
        f"{report.files_unchanged} unchanged, {report.files_deleted} removed{commits}; "
        f"{report.chunks_embedded} chunks embedded in {report.seconds:.1f}s "
        f"({report.chunks_per_second:.0f}/s{model}"
    )


def status(as_json: JsonOpt = False) -> None:
    """Sources, counts per kind and project, model, device, store size, last index time."""
    info = api.status(load_settings())
    if as_json:
        print_json(info)
        return
    for line in _status_lines(info):
        typer.echo(line)


def _status_lines(info: dict[str, Any]) -> list[str]:
    """The human-readable `status` report."""
    built = (
        f" (index built with {info['indexed_model']}, {info['dimension']}d)"
        if info["indexed_model"]
        else " (no index yet)"
    )
    lines = [
        f"state:   {info['state_dir']}",
        f"model:   {info['model']} on {info['device']}{built}",
        f"index:   {info['documents']} documents, {info['chunks']} chunks, "
        f"{info['store_bytes'] / 1e6:.1f} MB, last indexed {info['last_indexed'] or 'never'}",
    ]
    if info.get("indexing"):
        p = info["indexing"]
        lines.append(
            f"indexing: {p['files_done']}/{p['files_total']} files, {p['chunks']} chunks "
            f"embedded (pid {p['pid']}; notes, rules and ADRs first, then newest sessions)"
        )
    for kind, c in info["kinds"].items():
        lines.append(f"  {kind:<13} {c['documents']:>6} docs {c['chunks']:>7} chunks")
    for proj, c in info["projects"].items():
        lines.append(f"  {proj:<40} {c['documents']:>6} docs")
    formats = (info.get("rules") or {}).get("formats") or {}
    if formats:
        lines.append("rules by format (docs/rules.md):")
    for fmt, c in formats.items():
        modes = ", ".join(f"{mode}: {n}" for mode, n in sorted(c["modes"].items()))
        lines.append(f"  {fmt:<21} {c['files']:>4} files  ({modes})")
    suspect = info.get("suspect") or {}
    if suspect.get("count"):
        lines.append(
            f"suspect records: {suspect['count']} (their text reads as orders to the agent; "
            "the hook shows their path only; docs/daemon.md)"
        )
        lines += [
            f"  {SUSPECT_MARK} {r['kind']:<12} {r['path']}  ({r['reason']})"
            for r in suspect["records"]
        ]
    if info.get("org"):
        lines.append(org_status_line(info["org"]))
    if info.get("model_load_seconds") is not None:
        lines.append(f"model load: {info['model_load_seconds']:.1f}s (last time it was needed)")
    lines.append(f"sources: {len(info['sources'])} folders")
    for s in info["sources"]:
        kind = f"{s['kind']} ({s['origin']})" if s.get("origin") else s["kind"]
        lines.append(f"  {kind:<13} {s['root']}")
        if s.get("problem"):  # a team's config.toml that could not be followed
            lines.append(f"    problem: {s['problem']}")
    withheld = info.get("withheld_paths") or []
    if withheld:
        lines.append(f"withheld: {len(withheld)} not indexed, a secret in the path (masked)")
    lines += [f"  {w['path']}: {w['reason']}" for w in withheld]
    git = info.get("git_problems") or []
    if git:
        lines.append(f"git history: {len(git)} problem(s), the rest indexed")
    lines += [f"  {g['project']}: {g['problem']}" for g in git]  # shown by api (masked)
    return lines


def register(app: typer.Typer) -> None:
    """Add `setup`, `reindex` and `status` to the main command line."""
    add_commands(app, {"setup": setup, "reindex": reindex, "status": status})
