"""`eval`: recall and selection quality on labelled eval sets, and threshold tuning."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from precedents import api
from precedents.cli.common import JsonOpt, ModelOpt, add_commands, existing_folder, print_json
from precedents.config import load_settings


def eval_(
    sets: Annotated[
        list[Path],
        typer.Option(
            "--set",
            help="An eval set folder (docs/eval.md); repeat for several.",
            callback=existing_folder,
        ),
    ],
    tune: Annotated[bool, typer.Option("--tune", help="Search the threshold grid too.")] = False,
    model: ModelOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Recall and selection quality on labelled eval sets (and threshold tuning)."""
    from precedents.cli.progress import index_progress

    with index_progress(enabled=not as_json) as progress:
        result = api.evaluate(load_settings(model=model), sets, tune=tune, progress=progress)
    if as_json:
        print_json(result)
        return
    _print_report(result)


def _print_report(result: dict[str, Any]) -> None:
    """The figures at the model's thresholds, then at the best grid point when tuned."""
    typer.echo(f"model {result['model']}, thresholds {result['thresholds']}")
    for line in api.report_lines(result["scores"]):
        typer.echo(line)
    if "tuned" in result:
        typer.echo(f"best grid point: {result['tuned']['thresholds']}")
        for line in api.report_lines(result["tuned"]["scores"]):
            typer.echo(line)


def register(app: typer.Typer) -> None:
    """Add `eval` to the main command line."""
    add_commands(app, {"eval": eval_})
