"""The hook answers that need no ranking: the file hook, SessionStart, and the
once-per-session bookkeeping every hook shares (a part of :class:`~.core.Recall`)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from precedents.ingest.heads import PROVISIONAL
from precedents.ingest.sources import project_keys, project_root
from precedents.ingest.team import TEAM
from precedents.protocol import EVENT_FILE, EVENT_PROMPT, HEADER, printed_bytes
from precedents.recall.answer import Answer, Withheld
from precedents.recall.commit_files import CommitFiles
from precedents.recall.files import FileScopes, relative_to_root
from precedents.recall.format import render_records, suspect_of, team_mark
from precedents.recall.loaded import left_to_client, session_tools
from precedents.recall.marks import AdrMarks
from precedents.recall.mute import (
    ALWAYS_RULE,
    FILE_HOOK,
    LIVE_ADR,
    SUCCESSOR,
    TEAM_NEWS,
    MuteList,
)
from precedents.recall.org import ORG_KEY, OrgRecords
from precedents.recall.selection import WIDE_CAP_BYTES, Selection
from precedents.recall.sessions import SessionLog
from precedents.recall.start import session_text
from precedents.recall.team_news import TeamNews, TeamSeen
from precedents.recall.vectors import VectorSnapshot
from precedents.rules.symbols import defined_symbols
from precedents.store.rows import DocumentHit, DocumentRecord

# The file hook: the rules of one file are a few, at times a dozen (a Copilot
# project with one instruction file per concern); ADRs and notes naming it come
# after them. Headlines only, all in the wide cap.
FILE_MAX_RECORDS = 16
FILE_CAP_BYTES = WIDE_CAP_BYTES
LEFT_OUT = "… and {} more records for this file, left out for room"


class Given(NamedTuple):
    """What :meth:`HookAnswers._give` gave a session."""

    withheld: tuple[str, ...]  # paths left out: given to this session already, unchanged
    text: str | None
    shown: tuple[str, ...]  # paths whose lines are in ``text``
    suspect: tuple[str, ...]  # those of ``shown`` given as their path only (recall/format.py)
    team: tuple[tuple[str, str], ...] = ()  # the team notes of ``shown``, with their marks
    decided: tuple[tuple[str, str], ...] = ()  # its conversations' passages: day#exchange

    def answer(
        self,
        selection: Selection,
        project: str,
        timings_ms: dict[str, float],
        muted: Sequence[Withheld] = (),
    ) -> Answer:
        """The :class:`Answer` of a hook call that gave this (prompt and file hooks alike)."""
        return Answer(
            self.text,
            selection,
            project=project,
            withheld=self.withheld,
            shown=self.shown,
            suspect=self.suspect,
            team=dict(self.team),
            decided=dict(self.decided),
            muted=tuple(muted),
            timings_ms=timings_ms,
        )


class HookAnswers:
    """File and SessionStart answers, and what each session was given."""

    marks: AdrMarks
    muted: MuteList
    sessions: SessionLog
    team_seen: TeamSeen
    org: OrgRecords
    _snapshot: VectorSnapshot

    @property
    def scopes(self) -> FileScopes:  # pragma: no cover - Recall's
        """The scoped records of the snapshot in memory."""
        raise NotImplementedError

    commit_files: CommitFiles

    def _give(
        self,
        session: str,
        records: Sequence[DocumentRecord],
        cap: int,
        header: str,
        event: str = EVENT_PROMPT,
        later: Mapping[str, str] | None = None,
        root: str = "",
    ) -> Given:
        """Render ``records`` less those ``session`` was given unchanged, and remember the
        ones shown; ``root``: the project's (an org successor it holds itself is its own
        line's, recall/org.py)."""
        local = self.scopes.digests

        def digest(r: DocumentRecord) -> str:
            return self.org.digest(r.path) if r.org else local.get(r.path, "")

        withheld = self.sessions.withheld(session, [(r.path, digest(r)) for r in records])
        fresh = [r for r in records if r.path not in withheld]
        text: str | None = None
        shown: list[DocumentRecord] = []
        if fresh and cap > 0:
            successors = self._successors_in(root)
            text, shown = self._render(fresh, cap, header, event, later or {}, successors)
        self.sessions.give(session, [(r.path, digest(r)) for r in shown])
        suspect = tuple(r.path for r in shown if suspect_of(r))
        team = tuple((r.path, team_mark(r)) for r in shown if r.team)
        decided = tuple((r.path, r.decided) for r in shown if r.decided)
        return Given(
            tuple(sorted(withheld)), text, tuple(r.path for r in shown), suspect, team, decided
        )

    def _with_successors_muted(
        self, muted: Sequence[Withheld], records: Sequence[DocumentRecord], given: Given
    ) -> list[Withheld]:
        """``muted`` plus the muted successors of the records ``given`` shows: the lines
        that would have come with them (recall/marks.py), for `why`."""
        out = list(muted)
        listed = {path for path, _ in out}
        shown = set(given.shown)
        for record in records:
            if record.path not in shown:
                continue
            for path in self.marks.muted_successors(record):
                if path not in listed:
                    listed.add(path)
                    out.append((path, SUCCESSOR))
        return out

    def _successors_in(self, root: str) -> Callable[[DocumentRecord], list[DocumentRecord]]:
        """:meth:`AdrMarks.successors_for`, less the org records the project at ``root``
        must not be given (its own copy wins: recall/org.py)."""
        successors_for = self.marks.successors_for
        if not root or not self.org.snapshot.rows:
            return successors_for
        keys = tuple(project_keys(root))
        excluded = self.org.excluded(root, self._snapshot, keys, ranking=False)

        def successors(record: DocumentRecord) -> list[DocumentRecord]:
            return [s for s in successors_for(record) if s.path not in excluded]

        return successors

    def _render(
        self,
        records: Sequence[DocumentRecord],
        cap: int,
        header: str,
        event: str,
        later: Mapping[str, str],
        successors: Callable[[DocumentRecord], list[DocumentRecord]] | None = None,
    ) -> tuple[str | None, list[DocumentRecord]]:
        """:func:`render_records`; when some records do not fit, the last line says how
        many were left out (never a silent cut), in room kept free for it. ``later``: a
        decision commit's ``later changed by`` line, by record path (the file hook's)."""
        marks = self.marks
        successors_for = successors or marks.successors_for

        def mark_for(record: DocumentRecord) -> str:
            return later.get(record.path) or marks.mark_for(record)

        text, shown = render_records(records, cap, mark_for, successors_for, event, header)
        left = len({r.path for r in records} - {r.path for r in shown})
        if not left or text is None:
            return text, shown
        room = printed_bytes("\n" + LEFT_OUT.format(99), event) - printed_bytes("", event)
        text, shown = render_records(records, cap - room, mark_for, successors_for, event, header)
        left = len({r.path for r in records} - {r.path for r in shown})
        return (f"{text}\n{LEFT_OUT.format(left)}" if text else None), shown

    def file_context(
        self, cwd: str, path: str, *, session: str = "", tool: str = "", transcript: str = ""
    ) -> Answer:
        """What the file hook injects when ``tool`` (Claude Code's tool name; "" unknown)
        of ``session`` (whose log is ``transcript``) touches ``path``: the project's rules
        scoped to it, less those Claude Code loads itself (recall/loaded.py), the ADRs
        and notes that name it (docs/rules.md), and the decision commits that touched it
        (docs/commits.md)."""
        started = time.perf_counter()
        root = project_root(cwd)
        rel = relative_to_root(path, root, cwd)
        if rel is None:
            return Answer(None, skipped="outside", project=root)
        self.sessions.touch(session, rel)
        keys = tuple(project_keys(root))
        scopes = self.scopes
        # The code the file declares, read only when some record names code.
        org, org_keys = self.org.scopes, self.org.keys_for(root)
        names = scopes.names_symbols(keys) or org.names_symbols(org_keys)
        declared = defined_symbols(os.path.join(root, rel)) if names else frozenset()
        found = [*scopes.attached(keys, rel), *scopes.naming(keys, rel, declared)]
        loads_on = session_tools(self.sessions, session, transcript) if tool else frozenset()
        client = left_to_client(
            found,
            tool=tool,
            exists=tool in loads_on and os.path.isfile(os.path.join(root, rel)),
            cwd_rel=relative_to_root(cwd, root, cwd),
            loaded=self.sessions.loaded(session),
            loads_on=loads_on,
        )
        self.sessions.load(session, client.loading)
        found = client.give
        if self.org.snapshot.rows:
            # The org's after the project's own (recall/org.py); never left to Claude
            # Code: its files are not on this machine.
            excluded = self.org.excluded(root, self._snapshot, keys, ranking=False)
            more = [*org.attached(org_keys, rel), *org.naming(org_keys, rel, declared)]
            found += [s for s in more if s.record.path not in excluded]
        # A session's own log is never recalled into it (its deciding chat names files).
        own = scopes.logs_by_session.get(session) if session else None
        muted = self.muted.paths()
        hidden = muted | ({own} if own else set())
        records: list[DocumentRecord] = []
        withheld: list[Withheld] = []
        texts: set[str] = set()
        for s in found:
            if s.record.path in muted and s.record.path != own:
                if (s.record.path, FILE_HOOK) not in withheld:
                    withheld.append((s.record.path, FILE_HOOK))  # for `why`
                continue
            # One text under two names (a nested CLAUDE.md linking to its AGENTS.md) once.
            text_id = s.digest or s.record.path
            if s.record.path not in hidden and text_id not in texts:
                texts.add(text_id)
                records.append(s.record)
        # The decision commits that touched it, newest first, each with the later
        # commit without rationale that changed its lines (docs/commits.md).
        later: dict[str, str] = {}
        for path_of, line in self.commit_files.for_file(root, rel):
            commit = scopes.commits.get(path_of)
            if commit is not None and path_of not in hidden and path_of not in texts:
                texts.add(path_of)
                records.append(commit)
                if line:
                    later[path_of] = line
        records = records[:FILE_MAX_RECORDS]
        hits = tuple(DocumentHit(r, 1.0, 0) for r in records)
        selection = Selection(
            hits, FILE_CAP_BYTES if hits else 0, 0.0, 0.0, "file" if hits else "no-scope"
        )
        given = self._give(session, records, FILE_CAP_BYTES, HEADER, EVENT_FILE, later, root)
        # Rules left to Claude Code count as withheld: `why` lists them.
        given = given._replace(withheld=tuple(sorted({*given.withheld, *client.skipped})))
        return given.answer(
            selection,
            root,
            {"total": (time.perf_counter() - started) * 1000},
            self._with_successors_muted(withheld, records, given),
        )

    def instructions_loaded(self, path: str, *, session: str = "") -> bool:
        """Remember that Claude Code loaded the instruction file ``path`` (absolute) into
        ``session`` itself (its InstructionsLoaded event): the hooks give it no more there.
        Kept under its name and its real one (a symlinked checkout); whether the index
        holds it under either."""
        names = {os.path.normpath(path), os.path.realpath(path)}
        self.sessions.load(session, sorted(names))
        return any(n in self.scopes.digests for n in names)

    def _team_news(self, root: str) -> TeamNews | None:
        """The team notes of ``root`` changed since its last session (None while there
        is no index in memory: an empty one would count every note as new next time)."""
        snapshot = self._snapshot
        if not snapshot.rows:
            return None
        notes: dict[str, tuple[str, DocumentRecord]] = {}
        for m in snapshot.meta:
            if m.get("origin") == TEAM and m["project"] == root and m["path"] not in notes:
                # A note stored by its head first (a big pull) is the same content.
                digest = str(m.get("source_hash") or "").removeprefix(PROVISIONAL)
                notes[m["path"]] = (digest, DocumentRecord.from_row(m))
        return self.team_seen.news(root, notes)

    def session_context(self, cwd: str, *, session: str = "") -> str | None:
        """The SessionStart text (:meth:`session_answer`'s)."""
        return self.session_answer(cwd, session=session).context

    def session_answer(self, cwd: str, *, session: str = "") -> Answer:
        """The SessionStart text: the rules that always apply, then the repository's live
        ADRs (ids and titles only), capped; and the records of those lists the mute list
        kept out. A session starting (new, resumed, cleared or compacted) holds nothing
        it was given before: its memory starts afresh."""
        started = time.perf_counter()
        self.sessions.forget(session)
        root = project_root(cwd)
        keys = tuple(project_keys(root))
        muted = self.muted.paths()
        withheld: list[Withheld] = []
        seen: dict[str, Mapping[str, Any]] = {}
        for m in self._snapshot.meta:
            if m["kind"] == "adr" and m["project"] == root:
                seen.setdefault(m["path"], m)
        live = []
        for path, m in sorted(seen.items(), key=lambda kv: (kv[1]["adr_id"] or "", kv[0])):
            record = DocumentRecord.from_row(m)
            if self.marks.adr_mark(record) != "":
                continue
            if path in muted:
                withheld.append((path, LIVE_ADR))
            else:
                live.append(record)
        rules = []
        # An org rule that says `scope: org` and applies always, after the project's own.
        org_rules = self.org.scopes.always((ORG_KEY,)) if self.org.snapshot.rows else []
        for s in [*self.scopes.always(keys), *org_rules]:
            if s.record.path in muted:
                withheld.append((s.record.path, ALWAYS_RULE))
            else:
                rules.append(s)
        news = self._team_news(root)
        if news is not None and muted:
            kept = tuple(r for r in news.changed if r.path not in muted)
            withheld.extend((r.path, TEAM_NEWS) for r in news.changed if r.path in muted)
            news = replace(news, changed=kept)
        text, listed = session_text([s.record for s in rules], live, news)
        self.sessions.give(session, [(s.record.path, s.digest) for s in rules[:listed]])
        return Answer(
            text,
            project=root,
            muted=tuple(withheld),
            timings_ms={"total": (time.perf_counter() - started) * 1000},
        )
