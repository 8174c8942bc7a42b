"""How the watcher's worker cuts its work into batches, and how it logs one.

A `git pull` can bring thousands of files in one burst (issue #28: 5,000 team
notes). They go due together, but are applied in groups of ``APPLY_FILES``:
each group is one hold of the store's writer lock (a `remember` or a `reindex`
waits for a group, not for the whole pull), its own failure isolation (a bad
file is retried alone among its group's files, not among thousands), and one
account in the log. Inside a group the indexer commits every embedding batch,
so notes are searchable as they land whatever the group size.

Before the groups, a burst of more than ``BURST_HEADS_FROM`` files has every new
or changed document stored by its head alone (:mod:`precedents.ingest.heads`), in one
hold of the writer lock per ``HEAD_BATCH`` heads: the whole pull is searchable
first, then indexed in full group by group.
"""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, TypeVar

from precedents.ingest.heads import HEAD_BATCH, HEADS_FROM, index_heads
from precedents.secrets.names import shown_path

if TYPE_CHECKING:
    from precedents.ingest.indexer import Indexer
    from precedents.ingest.sources import SourceFile

log = logging.getLogger(__name__)

APPLY_FILES = HEADS_FROM  # a group is never headed again by the indexer (heads.py)
# A path is due 0.3 s after its own last event, so a `git pull` reaches the worker
# in several bursts (a few files, then the rest while those were indexed): a burst
# is headed from this size on, well below a group.
BURST_HEADS_FROM = 64
LOGGED_PATHS = 5


T = TypeVar("T")


def groups(items: Sequence[T], size: int = APPLY_FILES) -> Iterator[list[T]]:
    """``items`` in order, ``size`` at a time."""
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def listing(label: str, paths: Sequence[str]) -> str:
    """``label: a, b, c, d, e and 3 more`` (empty for no paths)."""
    if not paths:
        return ""
    more = f" and {len(paths) - LOGGED_PATHS} more" if len(paths) > LOGGED_PATHS else ""
    # A path that carries a secret is logged masked (it is never indexed either).
    return f"{label}: {', '.join(shown_path(p) for p in paths[:LOGGED_PATHS])}{more}"


def heads_first(
    indexer: Indexer,
    route: Callable[[str], SourceFile | None],
    paths: Sequence[str],
    stop: Callable[[], None],
    arriving: bool = False,
) -> int:
    """Store the heads of a burst's new or changed documents; returns how many.

    Each ``HEAD_BATCH`` of files is one hold of the writer lock, so a `remember`
    waits for a batch of heads, not for the pull.
    """
    if len(paths) <= BURST_HEADS_FROM and not arriving:
        return 0  # a few files: indexed in full at once (``arriving``: part of a pull)
    started = time.perf_counter()
    files = [src for p in paths if (src := route(p)) is not None and os.path.isfile(p)]
    headed = 0
    indexer.new_pass()
    for group in groups(files, HEAD_BATCH):
        with indexer.writing():
            headed += index_heads(indexer, group, indexer.store.files(), stop)
        stop()
    if headed:
        log.info(
            "stored the heads of %d file(s) of a burst of %d in %.2f s (the full pass follows)",
            headed,
            len(paths),
            time.perf_counter() - started,
        )
    return headed


def apply_in_groups(
    paths: list[str],
    head: Callable[[list[str], bool], None],
    apply_group: Callable[[list[str]], bool],
    more: Callable[[bool], list[str]],
    pending: Callable[[], int] = lambda: 0,
) -> bool:
    """Apply ``paths`` a group at a time, their heads first; True when every group failed.

    A path is due 0.3 s after its own last event, so a `git pull` of thousands of
    files reaches the worker in bursts while it works on the first. Whenever a burst
    is taken (the first ``paths`` or what became due after a group), what is still
    arriving is taken too (``more(True)``: waits up to a second while paths are
    pending) until nothing more comes, and headed whatever its size (``head(paths,
    True)``): the whole pull is searchable before the next full group starts (a full
    group is ~20 s of embedding on 2 cores). Between groups, what became due
    meanwhile (``more(False)``) is taken too: a burst is headed and queued behind, a
    few files are applied next (a save is not kept waiting behind a pull). A few
    files taken while more than ``BURST_HEADS_FROM`` paths are ``pending`` (not yet
    due) are the front of a pull still arriving: a burst too, not a group of their own.
    """
    queue: deque[list[str]] = deque()

    def take(new: list[str]) -> bool:
        if new and len(new) + pending() > BURST_HEADS_FROM:  # a burst, or a pull's front
            head(new, True)
            queue.extend(groups(new))
            # A pull whose first files came as a few (applied at once) reaches here
            # after a group: the rest of it is headed before the next group too.
            while rest := more(True):
                head(rest, True)
                queue.extend(groups(rest))
        elif new:
            queue.appendleft(new)
        return bool(new)

    take(paths)
    results = []
    while queue:
        results.append(apply_group(queue.popleft()))
        take(more(False))
    return bool(results) and all(results)
