"""Indexing is background work: it yields the CPU to the hook and gives memory back.

A pull of thousands of team notes keeps the watcher embedding for minutes (the
bundled model is compute-bound on a laptop's cores: issue #28 measured 12-26
chunks/s on a 2-core VM). Meanwhile the user types, and the prompt hook's
process, the daemon's answer and the user's own build must not queue behind
it. So the threads that embed run at a lower CPU priority (a nice value: they
still get every idle cycle, but a waking hook is scheduled ahead of them), and
the heap pages a batch freed go back to the system before the next batch, so
the watcher's resident memory follows one batch, not the largest one it ever
saw.

Standard library only: used by the watcher's threads and the indexer alike.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import cast

log = logging.getLogger("precedents.ingest")

# 10 of 19: under contention a nice-10 thread gets about a tenth of a nice-0 one's
# share, and a waking nice-0 process (the hook) preempts it at once; alone on the
# machine it still runs at full speed.
BACKGROUND_NICE = 10


def lower_priority(nice: int = BACKGROUND_NICE) -> bool:
    """Run the calling thread (and the threads it starts from now on) at ``nice``.

    Linux only, where each thread has its own nice value and new threads inherit
    their creator's: ONNX Runtime's compute threads, created when the model loads,
    follow the thread that loads it. Elsewhere a nice value is the whole process's
    and this does nothing (the watcher may share its process with a caller). A
    priority already lower is kept. True when the thread runs at ``nice`` or lower.
    """
    if not sys.platform.startswith("linux"):
        return False
    tid = threading.get_native_id()
    try:
        current = os.getpriority(os.PRIO_PROCESS, tid)
        if current < nice:
            os.setpriority(os.PRIO_PROCESS, tid, nice)
    except OSError as exc:  # a sandbox may forbid it: indexing goes on at normal priority
        log.debug("could not lower the indexing thread's priority: %s", exc)
        return False
    return True


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        return cast("Callable[[int], int]", libc.malloc_trim)
    except (OSError, AttributeError):  # musl has no malloc_trim: its free() returns pages
        return None


def release_memory() -> None:
    """Give the heap pages freed since the last call back to the system (glibc's
    ``malloc_trim``; a few ms). Without it a batch's chunk texts, token arrays and
    Arrow buffers stay resident after they are freed, and the watcher keeps the
    footprint of its largest batch for the rest of its life."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
