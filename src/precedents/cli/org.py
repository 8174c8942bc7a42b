"""`precedents org ...`: the organisation's index (docs/org.md).

`pull` brings the served version here now (the daemon does it by itself in the
background: on start, every ``org_pull_s``, at a session start when older);
`status` says what is held, from the status file (no network). A failure is
one line and exit 1; the version held before keeps serving.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from precedents import api
from precedents.cli.common import JsonOpt, add_commands, print_json
from precedents.config import load_settings

org_app = typer.Typer(
    help="The organisation's index: pull it here, see what is held.",
    no_args_is_help=True,
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


add_commands(org_app, {"pull": pull, "status": status})


def register(app: typer.Typer) -> None:
    """Add the `org` group to the main command line."""
    app.add_typer(org_app, name="org")
