"""The `precedents` command line: a thin shell over :mod:`precedents.api`.

Each command resolves settings, calls one library function and prints. User
mistakes exit 2 with one line on stderr, failures exit 1; never a traceback.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from precedents import api
from precedents.cli_adr import adr_app
from precedents.cli_common import errors, fail, print_json
from precedents.cli_daemon import register as register_daemon
from precedents.cli_watch import register as register_watch
from precedents.config import Settings, load_settings, private_umask
from precedents.errors import UsageError
from precedents.sources import Sources

app = typer.Typer(
    help="Local memory recall for AI coding agents: notes, rules, ADRs and conversations.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(adr_app, name="adr")
register_watch(app)
register_daemon(app)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print data as JSON.")]
ProjectOpt = Annotated[
    str | None,
    typer.Option("--project", "--repo", help="Project root (default: this directory's root)."),
]


def settings(**overrides: Any) -> Settings:
    """Resolved settings for a command (argument -> env -> config file -> default)."""
    return load_settings(**overrides)


@app.callback()
def _root(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Log progress to stderr.")
    ] = False,
) -> None:
    private_umask()
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


@app.command()
@errors
def setup(
    model: Annotated[str | None, typer.Option(help="sentence-transformers id or folder.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Make the model available (the only command that may download), then load it once."""
    info = api.setup(settings(), model)
    if as_json:
        print_json(info)
    else:
        typer.echo(
            f"model {info['model']} ({info['dimension']}d) ready on {info['device']}, "
            f"loaded in {info['load_seconds']}s from {info['path']}"
        )


@app.command()
@errors
def reindex(
    full: Annotated[bool, typer.Option("--full", help="Drop the index and re-embed all.")] = False,
    notes: Annotated[list[Path] | None, typer.Option("--notes", help="A notes folder.")] = None,
    rules: Annotated[list[Path] | None, typer.Option("--rules", help="A rules folder.")] = None,
    adrs: Annotated[list[Path] | None, typer.Option("--adrs", help="An ADR folder.")] = None,
    conversations: Annotated[
        list[Path] | None, typer.Option("--conversations", help="A folder of .jsonl logs.")
    ] = None,
    project: ProjectOpt = None,
    model: Annotated[str | None, typer.Option(help="Embedding model id or folder.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Index what changed (by content hash); with folders given, index only those."""
    from precedents.progress import index_progress

    with index_progress(enabled=not as_json) as progress:
        report = api.reindex(
            settings(model=model),
            full=full,
            sources=Sources(
                tuple(notes or ()),
                tuple(rules or ()),
                tuple(adrs or ()),
                tuple(conversations or ()),
                project,
            ),
            progress=progress,
        )
    if as_json:
        print_json(report.to_json())
    else:
        typer.echo(
            f"{report.files_seen} files: {report.files_indexed} indexed, "
            f"{report.files_unchanged} unchanged, {report.files_deleted} removed; "
            f"{report.chunks_embedded} chunks embedded in {report.seconds:.1f}s "
            f"({report.chunks_per_second:.0f}/s"
            + (
                f"; model loaded in {report.model_seconds:.1f}s)"
                if report.model_seconds >= 0.05
                else ")"
            )
        )
        for p in report.problems:
            typer.echo(f"  skipped/warned: {p.path}: {p.reason}", err=True)
    if report.files_seen and report.files_indexed + report.files_unchanged == 0:
        fail("nothing could be indexed", 1)


@app.command()
@errors
def status(as_json: JsonOpt = False) -> None:
    """Sources, counts per kind and project, model, device, store size, last index time."""
    info = api.status(settings())
    if as_json:
        print_json(info)
        return
    typer.echo(f"state:   {info['state_dir']}")
    typer.echo(
        f"model:   {info['model']} on {info['device']}"
        + (
            f" (index built with {info['indexed_model']}, {info['dimension']}d)"
            if info["indexed_model"]
            else " (no index yet)"
        )
    )
    typer.echo(
        f"index:   {info['documents']} documents, {info['chunks']} chunks, "
        f"{info['store_bytes'] / 1e6:.1f} MB, last indexed {info['last_indexed'] or 'never'}"
    )
    for kind, c in info["kinds"].items():
        typer.echo(f"  {kind:<13} {c['documents']:>6} docs {c['chunks']:>7} chunks")
    for proj, c in info["projects"].items():
        typer.echo(f"  {proj:<40} {c['documents']:>6} docs")
    if info.get("model_load_seconds") is not None:
        typer.echo(f"model load: {info['model_load_seconds']:.1f}s (last time it was needed)")
    typer.echo(f"sources: {len(info['sources'])} folders")
    for s in info["sources"]:
        typer.echo(f"  {s['kind']:<13} {s['root']}")


@app.command()
@errors
def query(
    text: Annotated[str, typer.Argument(help="What to look for.")],
    project: ProjectOpt = None,
    k: Annotated[int, typer.Option("-k", help="How many documents.")] = 5,
    auto: Annotated[
        bool, typer.Option("--auto", help="Print exactly what the hook would inject.")
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
        context = api.auto_context(settings(), text, project=project)
        if as_json:
            print_json({"additionalContext": context})
        elif context:
            typer.echo(context)
        return
    result = api.query(settings(), text, project=project, k=k, all_projects=all_projects)
    if as_json:
        print_json(result.to_json())
        return
    if not result.results:
        typer.echo("no records found for this project (run `precedents reindex`?)")
    elif not all_projects and all(h.record.project == "*" for h in result.results):
        typer.echo(
            f"(only shared rules: nothing indexed for {result.project}; "
            "try --project PATH or --all)",
            err=True,
        )
    for hit in result.results:
        r = hit.record
        label = f"{r.adr_id} {r.name}" if r.adr_id else r.name
        desc = f" — {r.description}" if r.description else ""
        mark = result.marks.get(r.path, "")
        typer.echo(
            f"{hit.score:.3f}  {mark + ' ' if mark else ''}{r.kind:<12} {label}{desc} ({r.path})"
        )


service_app = typer.Typer(
    help="Run the watcher and the query daemon at login (systemd user units, LaunchAgents).",
    no_args_is_help=True,
)
app.add_typer(service_app, name="service")
NoLoadOpt = Annotated[
    bool, typer.Option("--no-load", help="Only write/remove the files; do not call systemctl.")
]


def _print_service(result: Any, as_json: bool) -> None:
    if as_json:
        print_json(result.to_json())
        return
    for line in [*result.files, *(f"ran: {c}" for c in result.commands), *result.notes]:
        typer.echo(line)


@service_app.command("install")
@errors
def service_install(
    daemon: Annotated[bool, typer.Option(help="Also run the query daemon at login.")] = True,
    no_load: NoLoadOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Write the unit files with this interpreter and state folder, and start them."""
    from precedents.service import install_service

    _print_service(install_service(settings(), daemon=daemon, load=not no_load), as_json)


@service_app.command("uninstall")
@errors
def service_uninstall(no_load: NoLoadOpt = False, as_json: JsonOpt = False) -> None:
    """Stop and remove exactly the units `service install` wrote."""
    from precedents.service import uninstall_service

    _print_service(uninstall_service(load=not no_load), as_json)


@app.command("eval")
@errors
def eval_(
    sets: Annotated[
        list[Path],
        typer.Option("--set", help="An eval set folder (docs/eval.md); repeat for several."),
    ],
    tune: Annotated[bool, typer.Option("--tune", help="Search the threshold grid too.")] = False,
    model: Annotated[str | None, typer.Option(help="Embedding model id or folder.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Recall and selection quality on labelled eval sets (and threshold tuning)."""
    from precedents.evaluation import report_lines
    from precedents.progress import index_progress

    with index_progress(enabled=not as_json) as progress:
        result = api.evaluate(settings(model=model), sets, tune=tune, progress=progress)
    if as_json:
        print_json(result)
        return
    typer.echo(f"model {result['model']}, thresholds {result['thresholds']}")
    for line in report_lines(result["scores"]):
        typer.echo(line)
    if "tuned" in result:
        typer.echo(f"best grid point: {result['tuned']['thresholds']}")
        for line in report_lines(result["tuned"]["scores"]):
            typer.echo(line)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
