"""Records the user never wants injected again (`precedents mute PATH`).

Kept in the state folder (``muted.json``: a list of absolute paths), read by
the daemon on every question when the file changed (one ``stat``), so a mute
takes effect at the next message without a restart.

A muted record is delivered by no route: the prompt hook's selection, the
successor line of a replaced ADR or an amended record (recall/marks.py), the
file hook, SessionStart's lists (always-apply rules, live ADRs, changed team
notes), the MCP tools, and `precedents query`, which still ranks it but shows
its path, kind, date and mark only (its words are withheld, as a suspect
record's are). What each hook answer withheld for the mute list is logged with
its route (:data:`ROUTES`), and `precedents why` lists it.

What may be muted (:meth:`MuteList.check`): a file that exists. A path that
names nothing, or a folder, would be a mute that mutes nothing, so it is
refused. A file that exists but is not indexed (yet) is accepted without
looking at the index: the watcher may index it later, and the mute holds from
then on; finding out would cost this command a LanceDB import. `unmute` takes
any path on the list, even one whose file is gone.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable
from pathlib import Path

from precedents.errors import UsageError
from precedents.org.snapshot import ORG_SCHEME

FILE = "muted.json"

# The routes by which a muted record would have reached the agent (`why` names them).
PROMPT = "prompt"  # chosen by the prompt hook's selection
SUCCESSOR = "successor"  # the line that comes with a record it replaced or amended
FILE_HOOK = "file"  # scoped to, or naming, the file a tool touched
ALWAYS_RULE = "always-rule"  # SessionStart's rules that always apply
LIVE_ADR = "live-adr"  # SessionStart's list of live ADRs
TEAM_NEWS = "team-news"  # SessionStart's changed team notes
ROUTES = (PROMPT, SUCCESSOR, FILE_HOOK, ALWAYS_RULE, LIVE_ADR, TEAM_NEWS)
MUTED_NOTE = " (muted)"  # after a muted successor's id in a replaced ADR's mark


def name_muted(mark: str, labels: Iterable[str]) -> str:
    """``mark`` with "(muted)" after each of ``labels`` it names as a successor: the
    ADR graph names a chain's ends as ``→ A, B`` (adr_graph/status.py ``_mark``). The
    status is a fact and stays; the muted successor is named by its id, nothing more."""
    for label in labels:
        pattern = rf"(?:→|,) {re.escape(label)}(?=,|;| |$)"
        mark = re.sub(pattern, lambda m: m.group(0) + MUTED_NOTE, mark, count=1)
    return mark


class MuteList:
    """The muted paths of one state folder."""

    def __init__(self, home: Path) -> None:
        self.path = home / FILE
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._paths: frozenset[str] = frozenset()

    def paths(self) -> frozenset[str]:
        """The muted paths now (re-read only when the file changed)."""
        try:
            st = self.path.stat()
            stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        with self._lock:
            if stamp != self._stamp:
                self._paths = frozenset(self._read()) if stamp else frozenset()
                self._stamp = stamp
            return self._paths

    def _read(self) -> list[str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []  # a damaged list mutes nothing rather than breaking answers
        return [p for p in data if isinstance(p, str)] if isinstance(data, list) else []

    @staticmethod
    def target(path: str | Path) -> str:
        """``path`` as the list holds it: absolute, as the indexer stores record paths; an
        org record's ``org://repository/path`` as it is (recall/org.py)."""
        text = str(path)
        if text.startswith(ORG_SCHEME[:-1]):  # a Path made of it keeps one slash
            return ORG_SCHEME + text[len(ORG_SCHEME) - 1 :].lstrip("/")
        return str(Path(path).expanduser().absolute())

    def check(self, path: str | Path, *, undo: bool = False) -> None:
        """Refuse, as a :class:`UsageError`, a change that would change nothing real:
        muting a path that names no file, unmuting one that is neither listed nor a file."""
        target = self.target(path)
        if target.startswith(ORG_SCHEME):
            return  # an org record has no file here: `why` and `query` name it so
        where = Path(target)
        if undo:
            if target in self._read() or where.is_file():
                return  # listed: removable even when the file is gone; a file: "already"
            raise UsageError(f"{target}: not muted, and no such file")
        if where.is_dir():
            raise UsageError(f"{target} is a folder; `mute` takes one record's file")
        if not where.is_file():
            raise UsageError(
                f"{target}: no such file; `mute` takes a record's file (a note, rule or ADR)"
            )

    def mute(self, path: str | Path) -> tuple[str, bool]:
        """Add ``path`` (made absolute); returns it and whether it was new."""
        return self._change(path, add=True)

    def unmute(self, path: str | Path) -> tuple[str, bool]:
        """Remove ``path``; returns it and whether it was muted."""
        return self._change(path, add=False)

    def _change(self, path: str | Path, *, add: bool) -> tuple[str, bool]:
        target = self.target(path)
        current = set(self._read())
        changed = (target not in current) if add else (target in current)
        if add:
            current.add(target)
        else:
            current.discard(target)
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = self.path.with_name(FILE + ".tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(sorted(current), fh, ensure_ascii=False, indent=1)
            os.replace(tmp, self.path)
        except OSError as exc:
            raise UsageError(f"{self.path}: cannot write the mute list ({exc.strerror})") from None
        return target, changed
