"""The text the hook injects: a header line, then one line per record (SPEC §2, §5).

Line shapes::

    note  name — description (path)
    note (team, author, YYYY-MM-DD)  name — description (path)     (a team note)
    rule  name — description (path)
    MARK adr  ID title (path)          (a live ADR has no mark: "adr  ID title (path)")
    conversation  YYYY-MM-DD title (path)
    conversation  YYYY-MM-DD title — decision passage (path)   (ingest/decisions.py)
    commit  SHORT YYYY-MM-DD subject — rationale (ROOT@SHA12)   (ingest/commit_index.py)
    commit  ... (ROOT@SHA12) · later changed by SHORT "subject"  (the file hook's)
    ⚠️amended YYYY-MM-DD → LATER TITLE KIND  ...      (a record a later chat amended)
    KIND (org, REPOSITORY)  ...        (a record of the organisation's index, recall/org.py)
    MARK adr (org, REPOSITORY)  ID title (org://REPOSITORY/path)

The byte cap counts UTF-8 over the whole line the hook prints: the JSON
envelope (``ensure_ascii=False``) plus its newline, so a cap of 1,024 means the
hook writes at most 1,024 bytes. Fitting, in this order:

1. Records are taken in display order; one that does not fit even with its
   shrinkable text emptied is left out whole (and later, shorter ones may
   still fit).
2. The shrinkable text (a note's or rule's description, an ADR's title, a
   conversation's decision passage, else its title) is cut to the same number of characters on every
   line, the largest number that fits, with "…" marking a cut.
3. Names, IDs, dates, paths and ADR marks never shrink: the mark is the whole
   point of showing a replaced decision.

Stored text is data (SPEC §5, docs/daemon.md): every field is rendered by
:func:`precedents.inert.inert` (one line, no tag, no role label, no control or
invisible character, capped), so nothing in a record can end its line, open or
close markup, or pose as a turn of the conversation; the line is the record's
data block, opened by a prefix only this module writes (its kind, or a mark)
and closed by its path. A record whose text reads as orders to the agent
(:func:`precedents.inert.suspect_reason`) is shown as its path only::

    ⚠️suspect note (path)
    ⚠️suspect note (team) (path)
    ⚠️suspect MARK adr (path)

A team note's mark (:func:`precedents.inert.team_label`) is part of the head: it
never shrinks, like an ADR's. No field can imitate a head or a mark of ours
(issue #28): :func:`~precedents.inert.inert` neutralises them in every field, the
marks themselves go through :func:`~precedents.inert.inert_mark`, a team note's
author is a short name (else ``author withheld``; the local user's name is
``"…" unverified``) and a date in the future is shown as none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING

from precedents.inert import (
    ELLIPSIS,
    ID_CHARS,
    MARK_CHARS,
    NAME_CHARS,
    SUSPECT_MARK,
    TEXT_CHARS,
    cut,
    inert,
    inert_mark,
    inert_path,
    is_future,
    org_label,
    path_words,
    shown_author,
    shown_day,
    shown_repo,
    suspect_reason,
    team_label,
)
from precedents.ingest.commit_paths import commit_short
from precedents.ingest.team import is_local_user
from precedents.protocol import EVENT_PROMPT, HEADER, printed_bytes
from precedents.recall.selection import Selection
from precedents.store.rows import DocumentHit, DocumentRecord

if TYPE_CHECKING:
    from precedents.protocol import QueryRow

__all__ = [
    "ELLIPSIS",
    "LineParts",
    "fit_kept",
    "fit_lines",
    "format_context",
    "line_parts",
    "record_json",
    "render_records",
    "suspect_of",
    "team_mark",
]


@dataclass(frozen=True)
class LineParts:
    """One record's line as a fixed head, a shrinkable middle and a fixed tail."""

    head: str
    joiner: str  # between head and middle; dropped with an empty middle
    middle: str
    tail: str

    def render(self, limit: int) -> str:
        middle = cut(self.middle, limit)
        return f"{self.head}{self.joiner}{middle}{self.tail}" if middle else self.head + self.tail


# The file hook's mark on a decision commit a later commit without rationale changed
# (ingest/commit_history.py ``later_line``).
LATER_PREFIX = "later changed by "
# A conversation's title on a line that carries its decision: enough to name the task.
CONVERSATION_TITLE_CHARS = 80


def suspect_of(record: DocumentRecord) -> str:
    """Why ``record``'s text reads as orders to the agent ('' when it does not): its name,
    description, ADR id, author and file name are read (:func:`precedents.inert.suspect_reason`)."""
    return suspect_reason(
        record.name, record.description, record.adr_id, record.author, path_words(record.path)
    )


def team_mark(record: DocumentRecord) -> str:
    """A team note's mark as its line shows it: ``(team, author, date)``, or ``(team)``
    when the note is suspect (its own words are withheld)."""
    return team_label() if suspect_of(record) else _team(record)


def _team(record: DocumentRecord) -> str:
    """``(team, author, date)`` of a note that is not suspect: an author who is the local
    user (by name) is shown as unverified (ingest/team.py ``is_local_user``)."""
    you = is_local_user(record.author, record.project)
    return team_label(record.author, record.date, you=you)


def line_parts(record: DocumentRecord, mark: str = "") -> LineParts:
    """The pieces of ``record``'s line; ``mark`` is its ADR mark ('' when live)."""
    # A control character in a file name shows as "?": the line stays one line.
    tail = f" ({inert_path(record.path)})"
    mark = inert_mark(mark, MARK_CHARS)  # ours: the record text it quotes is inert already
    # An org record's repository: a label of ours, its name reduced to a forge's letters.
    org = f" {org_label(record.repo)}" if record.org else ""
    if suspect_of(record):
        if mark.startswith(LATER_PREFIX):
            mark = ""  # the file hook's note on a commit, not a mark to keep
        # The path and the ADR mark only: the record's own words never reach the agent.
        head = f"{SUSPECT_MARK} {mark} {record.kind}" if mark else f"{SUSPECT_MARK} {record.kind}"
        # A suspect team note: the mark without its author (its words are withheld).
        return LineParts(f"{head} {team_label()}" if record.team else head + org, "", "", tail)
    name = inert(record.name, NAME_CHARS) or inert(PurePath(record.path).stem, NAME_CHARS)
    if record.kind == "adr":
        ident = inert(record.adr_id, ID_CHARS)
        head = f"{mark} adr{org}  " if mark else f"adr{org}  "
        # Without an id the title follows "adr  " directly (and may still shrink).
        title = inert(record.name, TEXT_CHARS) or name  # a title shrinks: its own cap
        return (
            LineParts(head + ident, " ", title, tail)
            if ident
            else LineParts(head[:-1], " ", title, tail)
        )
    if record.kind == "commit":
        return _commit_parts(record, mark, tail)
    marked = f"{mark} " if mark else ""  # a record a later chat amended
    if record.kind == "conversation":
        # The day its decision was said, else the conversation's first day.
        day = shown_day(record.decided_on or record.date)
        head = f"{marked}conversation  {day}".rstrip()
        # Only a stored passage shows (`decided` says where it was said): a store
        # written before issue #27 has no description worth showing for a chat.
        passage = inert(record.description, TEXT_CHARS) if record.decided else ""
        if not passage:
            return LineParts(head, " ", inert(record.name, TEXT_CHARS) or name, tail)
        # The decision shrinks; the title (which names the task) is capped, not shrunk.
        title = cut(inert(record.name, TEXT_CHARS) or name, CONVERSATION_TITLE_CHARS)
        return LineParts(f"{head} {title}", " — ", passage, tail)
    # Not suspect (checked above): the whole mark, without reading the fields again.
    kind = f"{record.kind} {_team(record)}" if record.team else record.kind + org
    return LineParts(f"{marked}{kind}  {name}", " — ", inert(record.description, TEXT_CHARS), tail)


def _commit_parts(record: DocumentRecord, mark: str, tail: str) -> LineParts:
    """``commit  SHORT DAY subject — rationale (ROOT@SHA12)``: the short sha is read from
    the path (ingest/commit_index.py); a ``later changed by`` mark (the file hook's)
    follows the path, an amended mark comes first as on every record."""
    short = inert(commit_short(record.path), ID_CHARS)
    day = shown_day(record.date)
    later = mark if mark.startswith(LATER_PREFIX) else ""
    marked = f"{mark} " if mark and not later else ""
    if later:
        # The later commit's subject is stored text too: suspect words show its sha only.
        words = later if not suspect_reason(later) else later.split('"', 1)[0].rstrip()
        tail = f"{tail} · {words}"
    head = f"{marked}commit  {short} {day}".rstrip()
    subject = cut(inert(record.name, TEXT_CHARS), CONVERSATION_TITLE_CHARS)
    rationale = inert(record.description, TEXT_CHARS)
    if not rationale:
        return LineParts(head, " ", inert(record.name, TEXT_CHARS), tail)
    return LineParts(f"{head} {subject}", " — ", rationale, tail)


def record_json(hit: DocumentHit, mark: str | None = None, *, muted: bool = False) -> QueryRow:
    """The ``precedents query --json`` (and MCP ``recall``) shape of one result: every
    field inert as on the hook's lines; a suspect record keeps its path, kind, date and
    mark, and says ``"suspect": true`` instead of its name, description and id. A team
    note says ``"team": true`` and its ``author`` (withheld too when it is suspect). A
    ``muted`` record (recall/mute.py) still ranks, as its path, kind, date and mark with
    ``"muted": true``: its words are withheld like a suspect record's."""
    r = hit.record
    suspect = bool(suspect_of(r))
    withheld = suspect or muted
    row: QueryRow = {
        "kind": r.kind,
        "project": shown_repo(r.repo) if r.org else inert_path(r.project),
        "path": inert_path(r.path),
        "name": "" if withheld else inert(r.name, NAME_CHARS),
        "description": "" if withheld else inert(r.description, TEXT_CHARS),
        "date": _day(r.date),
        "adr_id": "" if withheld else inert(r.adr_id, ID_CHARS),
        "score": round(hit.score, 4),
        "suspect": suspect,
        "team": r.team,
    }
    if muted:
        row["muted"] = True
    if r.org:  # the project is the repository's name: shown_repo, like its line's label
        row["org"] = True
        row["repo"] = row["project"]
    if r.team:
        you = is_local_user(r.author, r.project)
        row["author"] = "" if withheld else shown_author(r.author, you=you)
    if r.kind == "commit":
        row["short"] = inert(commit_short(r.path), ID_CHARS)
    if r.decided and not muted:
        row["exchange"] = r.decided_exchange
        row["decided"] = _day(r.decided_on)
    if mark is not None:
        row["mark"] = inert_mark(mark, MARK_CHARS)
    return row


def _day(value: str) -> str:
    """A stored date as JSON gives it: inert, '' when in the future (inert.is_future)."""
    day = inert(value, ID_CHARS)
    return "" if is_future(day) else day


def fit_lines(
    parts: Sequence[LineParts], byte_cap: int, event: str = EVENT_PROMPT, header: str = HEADER
) -> str | None:
    """``header`` plus as many of ``parts`` as fit in ``byte_cap``, shrunk as the module says."""
    fitted = fit_kept(parts, byte_cap, event, header)
    return fitted[0] if fitted is not None else None


def fit_kept(
    parts: Sequence[LineParts], byte_cap: int, event: str = EVENT_PROMPT, header: str = HEADER
) -> tuple[str, list[int]] | None:
    """:func:`fit_lines`, plus the indices of the ``parts`` that made it in."""

    def text(kept: Sequence[LineParts], limit: int) -> str:
        return "\n".join([header, *(p.render(limit) for p in kept)])

    def fits(kept: Sequence[LineParts], limit: int) -> bool:
        return printed_bytes(text(kept, limit), event) <= byte_cap

    kept: list[LineParts] = []
    index: list[int] = []
    for i, p in enumerate(parts):
        if fits([*kept, p], 0):
            kept.append(p)
            index.append(i)
    if not kept:
        return None
    longest = max(len(p.middle) for p in kept)
    if fits(kept, longest):
        return text(kept, longest), index
    lo, hi = 0, longest - 1  # fits(lo) holds; find the largest limit that fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(kept, mid):
            lo = mid
        else:
            hi = mid - 1
    return text(kept, lo), index


def format_context(
    selection: Selection,
    mark_for: Callable[[DocumentRecord], str],
    successors_for: Callable[[DocumentRecord], Sequence[DocumentRecord]] | None = None,
) -> str | None:
    """The ``additionalContext`` for ``selection``, or None when nothing is to be shown.

    ``mark_for`` gives a record's mark: an ADR's SPEC §4 mark, or the amended mark of
    a record a later chat revised ('' for none). ``successors_for`` names the live
    record(s) that replaced an ADR, each on the line after the replaced one (SPEC §5:
    a replaced decision never comes alone), and the chat that amended a record, on
    the line before it; unless shown already, and within the same byte cap (when
    it does not fit, the mark still names it).
    """
    if not selection.chosen or selection.byte_cap <= 0:
        return None
    records = [h.record for h in selection.chosen]
    return render_records(records, selection.byte_cap, mark_for, successors_for)[0]


def render_records(
    records: Sequence[DocumentRecord],
    byte_cap: int,
    mark_for: Callable[[DocumentRecord], str],
    successors_for: Callable[[DocumentRecord], Sequence[DocumentRecord]] | None = None,
    event: str = EVENT_PROMPT,
    header: str = HEADER,
) -> tuple[str | None, list[DocumentRecord]]:
    """The text for ``records`` (each replaced ADR followed by its successor, see
    :func:`format_context`) and the records whose lines made it into the cap."""
    if successors_for is not None:
        records = _with_successors(records, successors_for)
    parts = [line_parts(r, mark_for(r)) for r in records]
    fitted = fit_kept(parts, byte_cap, event, header)
    if fitted is None:
        return None, []
    return fitted[0], [records[i] for i in fitted[1]]


def _with_successors(
    records: Sequence[DocumentRecord],
    successors_for: Callable[[DocumentRecord], Sequence[DocumentRecord]],
) -> list[DocumentRecord]:
    shown = {r.path for r in records}
    out: list[DocumentRecord] = []
    for record in records:
        later: list[DocumentRecord] = []
        for successor in successors_for(record):
            if successor.path in shown:
                continue
            shown.add(successor.path)
            # A chat that amended a record is the decision that stands: it goes first,
            # and when both do not fit, the stale line is the one left out. A live ADR
            # that replaced one follows it (its line reads as the answer to the mark).
            if successor.kind == "conversation":
                out.append(successor)
            else:
                later.append(successor)
        out.append(record)
        out.extend(later)
    return out
