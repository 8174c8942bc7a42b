"""Coalescing of file-system events: a key is due once it has been quiet long enough.

Editors touch a file several times per save (truncate, write, chmod, rename),
and conversation logs grow by a line every few seconds while a session runs.
Each key (a file, a folder, or "rediscover the sources") waits until no event
has arrived for its quiet period; ``max_wait_s`` caps the wait so a file that
never goes quiet (a long session's log) is still indexed regularly.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass


@dataclass
class _Entry:
    first: float
    last: float
    quiet: float


class Debouncer:
    """Keys waiting for a quiet period; :meth:`add` from any thread, :meth:`take_due` from one."""

    def __init__(
        self, max_wait_s: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        """``max_wait_s``: the longest a key waits after its first event, quiet or not."""
        self.max_wait_s = max_wait_s
        self._clock = clock
        self._cond = threading.Condition()
        self._entries: dict[Hashable, _Entry] = {}
        self._closed = False

    def add(self, key: Hashable, quiet_s: float) -> None:
        """Record an event for ``key``; it becomes due ``quiet_s`` after its last event."""
        now = self._clock()
        with self._cond:
            entry = self._entries.get(key)
            if entry is None:
                self._entries[key] = _Entry(now, now, quiet_s)
            else:
                entry.last = now
                # The longest quiet period asked for wins (a log and a note never share a key).
                entry.quiet = max(entry.quiet, quiet_s)
            self._cond.notify()

    def _deadline(self, entry: _Entry) -> float:
        return min(entry.last + entry.quiet, entry.first + self.max_wait_s)

    def take_due(self, timeout_s: float) -> list[Hashable]:
        """Block up to ``timeout_s`` until some keys are due; remove and return them.

        Returns ``[]`` on timeout or after :meth:`close`.
        """
        end = self._clock() + timeout_s
        with self._cond:
            while not self._closed:
                now = self._clock()
                due = [k for k, e in self._entries.items() if self._deadline(e) <= now]
                if due:
                    for key in due:
                        del self._entries[key]
                    return due
                if now >= end:
                    return []
                wake = min((self._deadline(e) for e in self._entries.values()), default=end)
                self._cond.wait(max(0.0, min(wake, end) - now))
        return []

    def pending(self) -> int:
        """How many keys are waiting."""
        with self._cond:
            return len(self._entries)

    def close(self) -> None:
        """Wake the taker for good: :meth:`take_due` returns ``[]`` from now on."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
