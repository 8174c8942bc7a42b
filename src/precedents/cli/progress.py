"""Progress bars for long work (indexing, eval), on stderr so stdout stays data."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

if TYPE_CHECKING:
    from precedents.ingest.progress import Progress as ProgressFn


@contextmanager
def index_progress(
    enabled: bool = True, label: str = "indexing", unit: str = "files"
) -> Iterator[ProgressFn | None]:
    """A callback that draws files (or ``unit``) done, chunks embedded and chunks/s; None
    when disabled."""
    console = Console(stderr=True)
    if not enabled or not console.is_terminal:
        yield None
        return
    columns = (
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit + " · {task.fields[chunks]} chunks · {task.fields[rate]} chunks/s"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("index", total=None, chunks=0, rate="-")

        def update(done: int, total: int, chunks: int) -> None:
            elapsed = bar.tasks[0].elapsed or 0.0
            rate = f"{chunks / elapsed:.0f}" if elapsed > 0 else "-"
            bar.update(task, completed=done, total=total, chunks=chunks, rate=rate)

        yield update
