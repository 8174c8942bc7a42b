"""What each Claude Code session was given, and which files it touched.

The daemon keeps, per ``session_id``, the records already handed to the agent
(with the content hash they had: a record whose file changed since is given
again) and the files its tools touched (a rule scoped to those files becomes
eligible for the prompt hook), and the instruction files Claude Code loaded into it
by itself (issue #29: a ``.claude/rules`` rule or a nested ``CLAUDE.md`` it loaded is
not given again; docs/rules.md, "Rules Claude Code loads itself"). Bounded and
expiring: a daemon serving a user for months holds at most ``max_sessions`` sessions of at most
``max_entries`` records and files each, and forgets a session idle for
``ttl_s``. In memory only: a restarted daemon starts afresh (the worst case
is a record given twice, once before and once after the restart).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

MAX_SESSIONS = 256
MAX_ENTRIES = 4096
TTL_S = 24 * 3600.0
MAX_SESSION_ID = 200


@dataclass
class _Session:
    seen: float
    given: OrderedDict[str, str] = field(default_factory=OrderedDict)  # path -> source hash
    touched: OrderedDict[str, None] = field(default_factory=OrderedDict)  # relative paths
    # Instruction files the client loaded itself, by absolute path (as indexed).
    loaded: OrderedDict[str, None] = field(default_factory=OrderedDict)
    client: str | None = None  # its Claude Code's version ("" none found; None not read)


class SessionLog:
    """Per-session memory of given records and touched files (thread-safe)."""

    def __init__(
        self, max_sessions: int = MAX_SESSIONS, max_entries: int = MAX_ENTRIES, ttl_s: float = TTL_S
    ) -> None:
        self.max_sessions = max_sessions
        self.max_entries = max_entries
        self.ttl_s = ttl_s
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._lock = threading.Lock()
        # The Claude Code version of the latest session whose transcript named one: a
        # session whose own is not written yet is most likely run by the same client.
        self.last_client = ""

    def _get(self, session: str, create: bool) -> _Session | None:
        """The session's entry (the caller holds the lock); expired ones are dropped."""
        now = time.monotonic()
        while self._sessions:
            oldest = next(iter(self._sessions.values()))
            if now - oldest.seen <= self.ttl_s:
                break
            self._sessions.popitem(last=False)
        entry = self._sessions.get(session)
        if entry is None:
            if not create:
                return None
            entry = self._sessions[session] = _Session(now)
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
        entry.seen = now
        self._sessions.move_to_end(session)
        return entry

    def withheld(self, session: str, records: Iterable[tuple[str, str]]) -> set[str]:
        """The paths among ``records`` (path, source hash) this session was given unchanged."""
        if not valid(session):
            return set()
        with self._lock:
            entry = self._get(session, create=False)
            if entry is None:
                return set()
            return {path for path, digest in records if entry.given.get(path) == digest}

    def give(self, session: str, records: Iterable[tuple[str, str]]) -> None:
        """Remember that ``records`` (path, source hash) were handed to ``session``."""
        if not valid(session):
            return
        with self._lock:
            entry = self._get(session, create=True)
            assert entry is not None
            for path, digest in records:
                entry.given[path] = digest
                entry.given.move_to_end(path)
            while len(entry.given) > self.max_entries:
                entry.given.popitem(last=False)

    def take_back(self, session: str, paths: Iterable[str]) -> None:
        """Forget that ``paths`` were handed to ``session``: their answer never reached it
        (the hook had given up), so the next prompt may give them (issue #21)."""
        if not valid(session):
            return
        with self._lock:
            entry = self._get(session, create=False)
            if entry is None:
                return
            for path in paths:
                entry.given.pop(path, None)

    def touch(self, session: str, rel: str) -> None:
        """Remember that ``session``'s tools touched the file ``rel`` (project-relative)."""
        if not valid(session):
            return
        with self._lock:
            entry = self._get(session, create=True)
            assert entry is not None
            entry.touched[rel] = None
            entry.touched.move_to_end(rel)
            while len(entry.touched) > self.max_entries:
                entry.touched.popitem(last=False)

    def load(self, session: str, paths: Iterable[str]) -> None:
        """Remember that Claude Code loaded the instruction files ``paths`` (absolute)
        into ``session`` by itself: the hooks do not give them to it again."""
        if not valid(session):
            return
        with self._lock:
            entry = self._get(session, create=True)
            assert entry is not None
            for path in paths:
                entry.loaded[path] = None
                entry.loaded.move_to_end(path)
            while len(entry.loaded) > self.max_entries:
                entry.loaded.popitem(last=False)

    def loaded(self, session: str) -> frozenset[str]:
        """The instruction files Claude Code loaded into ``session`` by itself."""
        if not valid(session):
            return frozenset()
        with self._lock:
            entry = self._get(session, create=False)
            return frozenset(entry.loaded) if entry is not None else frozenset()

    def client(self, session: str) -> str | None:
        """The Claude Code version of ``session`` ("": none found), None until set."""
        if not valid(session):
            return None
        with self._lock:
            entry = self._get(session, create=False)
            return entry.client if entry is not None else None

    def set_client(self, session: str, version: str) -> None:
        """Remember ``session``'s Claude Code version (recall/loaded.py), and that it is
        the latest one seen (:attr:`last_client`)."""
        if not valid(session):
            return
        with self._lock:
            entry = self._get(session, create=True)
            assert entry is not None
            entry.client = version
            if version:
                self.last_client = version

    def forget(self, session: str) -> None:
        """Drop what ``session`` was given and touched (SessionStart: a new, resumed,
        cleared or compacted session no longer holds what it was given before)."""
        with self._lock:
            self._sessions.pop(session, None)

    def touched(self, session: str) -> list[str]:
        """The files ``session`` touched, oldest first."""
        if not valid(session):
            return []
        with self._lock:
            entry = self._get(session, create=False)
            return list(entry.touched) if entry is not None else []

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)


def valid(session: object) -> bool:
    """Whether ``session`` can key a session (a hook without one is never deduplicated)."""
    return isinstance(session, str) and 0 < len(session) <= MAX_SESSION_ID
