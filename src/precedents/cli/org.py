"""`precedents org ...`: the organisation's index (docs/org.md).

Thin: `org build` calls :func:`precedents.api.org_build` and prints one line per
repository (records, new, removed, refused, error), each refusal on its own
indented line, then a summary line with the version served and the time
(``--json``: the report as data). A URI that is no URI (``http://``), a bad repos
file: exit 2; the storage refusing, another build holding the lock: exit 1, one line.

`pull` brings the served version here now (the daemon does it by itself in the
background: on start, every ``org_pull_s``, at a session start when older);
`status` says what is held, from the status file (no network). A failed pull is
one line and exit 1; the version held before keeps serving.
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


def pull(
    uri: Annotated[
        str | None,
        typer.Option(
            "--from", help="The index's URI (default: the org_uri setting).", metavar="URI"
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Copy the served version's new files here now and serve it (only what changed)."""
    info = api.org_pull(load_settings(), uri)
    if as_json:
        print_json(info)
        return
    copied = f"{info['files_copied']} files, {_size(info['bytes_copied'])} copied"
    typer.echo(
        f"org: version {info['version']} of {info['uri']}: {info['records']} records in "
        f"{info['repositories']} repositories; {copied} in {info['seconds']:.1f}s"
    )


def status(as_json: JsonOpt = False) -> None:
    """The version held, its age, records, repositories and the last pull's error."""
    info = api.org_status(load_settings())
    if as_json:
        print_json(info)
        return
    if info is None:
        typer.echo("org: none configured (org_uri in config.toml, or PRECEDENTS_ORG_URI)")
        return
    typer.echo(f"org:        {info['configured'] or info['uri']}")
    if info["version"] is None:
        typer.echo("version:    none pulled yet")
    else:
        typer.echo(f"version:    {info['version']} (built {info['built_at']}, {info['model']})")
        typer.echo(f"pulled:     {age_words(info['age_s'])} ({info['pulled_at']})")
        typer.echo(f"records:    {info['records']} in {info['repositories']} repositories")
        typer.echo(
            f"last pull:  {info['files_copied']} files, {_size(info['bytes_copied'])} copied "
            f"in {info['seconds']:.1f}s; {_size(info['mirror_bytes'])} held here"
        )
    if info["pulling"] is not None:
        typer.echo(f"pulling:    now (pid {info['pulling']})")
    if info["last_error"]:
        typer.echo(f"last error: {info['last_error']} (at {info['attempted_at']})")


def status_line(info: dict[str, Any]) -> str:
    """The one `org:` line of `precedents status`."""
    where = info["configured"] or info["uri"]
    if info["version"] is None:
        held = "none pulled yet"
    else:
        held = (
            f"version {info['version']}, {info['records']} records in "
            f"{info['repositories']} repositories, pulled {age_words(info['age_s'])}"
        )
    error = f"; last pull failed: {info['last_error']}" if info["last_error"] else ""
    return f"org:     {held} ({where}){error}"


def age_words(seconds: float | None) -> str:
    """``3 min ago``: how long ago, in the largest whole unit."""
    if seconds is None:
        return "never"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return f"{int(seconds)} s ago"


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n} bytes"


org_app = typer.Typer(
    help="The organisation's index: built in CI from many repositories, read by every daemon.",
    no_args_is_help=True,
)
add_commands(org_app, {"build": build, "pull": pull, "status": status})


def register(app: typer.Typer) -> None:
    """Add the `org` group to the main command line."""
    app.add_typer(org_app, name="org")
