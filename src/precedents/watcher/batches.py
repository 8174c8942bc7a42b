"""How the watcher's worker cuts its work into batches, and how it logs one.

A `git pull` can bring thousands of files in one burst (issue #28: 5,000 team
notes). They go due together, but are applied in groups of ``APPLY_FILES``:
each group is one hold of the store's writer lock (a `remember` or a `reindex`
waits for a group, not for the whole pull), its own failure isolation (a bad
file is retried alone among its group's files, not among thousands), and one
account in the log. Inside a group the indexer commits every embedding batch,
so notes are searchable as they land whatever the group size.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from precedents.secrets.names import shown_path

APPLY_FILES = 256
LOGGED_PATHS = 5


def groups(paths: Sequence[str], size: int = APPLY_FILES) -> Iterator[list[str]]:
    """``paths`` in order, ``size`` at a time."""
    for start in range(0, len(paths), size):
        yield list(paths[start : start + size])


def listing(label: str, paths: Sequence[str]) -> str:
    """``label: a, b, c, d, e and 3 more`` (empty for no paths)."""
    if not paths:
        return ""
    more = f" and {len(paths) - LOGGED_PATHS} more" if len(paths) > LOGGED_PATHS else ""
    # A path that carries a secret is logged masked (it is never indexed either).
    return f"{label}: {', '.join(shown_path(p) for p in paths[:LOGGED_PATHS])}{more}"
