"""`precedents org ...`: the organisation's index (docs/org.md).

Thin: `org build` calls :func:`precedents.api.org_build` and prints one line per
repository (records, new, removed, refused, error), each refusal on its own
indented line, then a summary line with the version served and the time
(``--json``: the report as data). A URI that is no URI (``http://``), a bad repos
file: exit 2; the storage refusing, another build holding the lock: exit 1, one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from precedents import api
from precedents.cli.common import JsonOpt, add_commands, print_json
from precedents.config import load_settings


def build(
    repos_from: Annotated[
        Path,
        typer.Option(
            "--repos-from",
            help="A file listing the repositories: a path or git URL a line, optional name=NAME.",
            exists=True,
            dir_okay=False,
        ),
    ],
    to: Annotated[
        str,
        typer.Option("--to", help="Where the index lives: s3://…, gs://…, az://…, or a path."),
    ],
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers", help="Local worker processes (default: one per two CPUs, max 8)."
        ),
    ] = None,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="ADDRESS|auto",
            help="Spread the work over a Ray cluster (needs the org-ray extra).",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Build the org index from many repositories: their ADRs, rules and team notes,
    checked, masked and embedded; only what changed since the served version."""
    from precedents.cli.progress import index_progress

    with index_progress(enabled=not json_out, label="building", unit="repositories") as progress:
        report = api.org_build(
            load_settings(), repos_from, to, workers=workers, ray=ray, progress=progress
        )
    if json_out:
        print_json(report)
        return
    for repo in report["repos"]:
        typer.echo(repo_line(repo))
        for line in repo["refused"]:
            typer.echo(f"  refused: {line}")
    if report["rebuilt"]:
        typer.echo(report["rebuilt"])
    for name in report["gone"]:
        typer.echo(f"{name}: no longer listed, its records removed")
    typer.echo(
        f"served version {report['version']} at {report['uri']}: "
        f"{sum(r['records'] for r in report['repos'])} records from {len(report['repos'])} "
        f"repositories, {report['chunks_embedded']} chunks embedded in {report['seconds']:.1f} s"
    )


def repo_line(repo: dict[str, Any]) -> str:
    """One repository's line."""
    if repo["error"]:
        return f"{repo['name']}: error: {repo['error']} ({repo['records']} records kept)"
    unchanged = "" if repo["changed"] else ", unchanged"
    return (
        f"{repo['name']}: {repo['records']} records, {repo['new']} new, "
        f"{repo['removed']} removed, {len(repo['refused'])} refused{unchanged}"
    )


org_app = typer.Typer(
    help="The organisation's index: built in CI from many repositories, read by every daemon.",
    no_args_is_help=True,
)
add_commands(org_app, {"build": build})


def register(app: typer.Typer) -> None:
    """Add the `org` group to the main command line."""
    app.add_typer(org_app, name="org")
