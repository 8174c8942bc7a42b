"""What SessionStart says of a repository's team notes: which changed since the last session.

A teammate's note arrives with a `git pull`; the watcher indexes it and the
prompt hook recalls it when a message relates to it. SessionStart also says,
once, which team notes are new or changed since the last session started in
that project (docs/team.md). What each project's last session saw (each team
note's path and content hash) is kept in the state folder, never in the
repository: ``team-seen.json``, ``{project root: {path: sha256}}``.

The first session of a project (nothing seen yet) hears how many team notes
the repository shares, not their titles: to a newcomer every note is "new".
A note deleted since is not mentioned (there is nothing to read).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precedents.inert import shown_day
from precedents.store.rows import DocumentRecord

FILE = "team-seen.json"


@dataclass(frozen=True)
class TeamNews:
    """A project's team notes at a session's start: those changed since the last one."""

    changed: tuple[DocumentRecord, ...]  # new or changed since the last session, by name
    total: int  # team notes the repository shares now
    first: bool  # no session of this project was seen before: ``changed`` is empty


class TeamSeen:
    """The team notes each project's last session saw, in one state file."""

    def __init__(self, home: Path) -> None:
        self.path = home / FILE
        self._lock = threading.Lock()

    def news(self, project: str, notes: Mapping[str, tuple[str, DocumentRecord]]) -> TeamNews:
        """The team notes of ``project`` (path -> (content hash, record)) that changed since
        its last session, which now sees them all."""
        now = {path: digest for path, (digest, _) in notes.items()}
        with self._lock:
            data = self._read()
            seen = data.get(project)
            if seen != now:
                data[project] = now
                self._write(data)
        if not isinstance(seen, dict):
            return TeamNews((), len(notes), True)
        changed = [r for path, (digest, r) in notes.items() if seen.get(path) != digest]
        # Newest first; a date in the future counts as none (inert.shown_day).
        changed.sort(key=lambda r: (shown_day(r.date), r.name, r.path), reverse=True)
        return TeamNews(tuple(changed), len(notes), False)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # none yet, or damaged: every project starts afresh
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        """Atomically (a reader never sees half a file); a failure costs one repeat."""
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".team-seen-", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump(data, out)
                os.replace(tmp, self.path)
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
