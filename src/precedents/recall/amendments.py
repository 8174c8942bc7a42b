"""Decisions amended in a later chat (issue #27, SPEC §2 "A conversation's decision
passage"): which record a later conversation of the same project revised.

A conversation B amends an earlier record A of its project when

* B's deciding exchange reads as a revision (amendment words, found at index time:
  :func:`precedents.ingest.decisions.amends` — "amendment to…", "instead of",
  "we're changing the cap", "scratch the removal", "revert the cast"…),
* B's passage was said later than A's (a conversation's passage date; a note's or an
  ADR's own date, when it has one), and
* the two are about the same thing: the cosine of B's deciding exchange (its first
  chunk, ingest/chunking.py) and A's (a conversation) or A's first chunk (a note or
  an ADR) reaches :data:`SAME_TOPIC` (:data:`SAME_DOCUMENT` for a note or an ADR,
  whose first chunk holds more than one rule).

Chains follow: A amended by B amended by C marks A and B with C, the newest. The
amended record's mark names the day and the title of that newest chat
(``⚠️amended 2026-04-12 → Merge rule for duplicate contacts``), and the newest chat
comes with it on the hook's line *before* it (recall/format.py): the agent reads the
decision that stands first, and when both do not fit, the stale one is the line that
goes.

Built once per vector snapshot (the daemon's refresh thread), from the vectors in
memory: no model, no store, a matrix product per project.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from precedents.inert import inert, suspect_reason
from precedents.store.rows import DocumentRecord

if TYPE_CHECKING:
    from precedents.recall.vectors import VectorSnapshot

__all__ = ["AMENDED_MARK", "SAME_DOCUMENT", "SAME_TOPIC", "Amended", "Amendments"]

AMENDED_MARK = "⚠️amended"
# Deciding exchange against deciding exchange: on the decisions dev set the amended
# pairs score 0.49-0.90, and no pair of different decisions of the same codebase
# reaches 0.62 (the best of them 0.619); the deciding exchange separates better than
# the passage sentence alone or the title (docs/eval.md, "Decisions in chats").
SAME_TOPIC = 0.62
# A note's or an ADR's first chunk holds its name, description and body: no labelled
# pairs to tune on, so it asks for more than two chats do (docs/eval.md).
SAME_DOCUMENT = 0.7
_AMENDABLE = frozenset({"conversation", "note", "adr"})


@dataclass(frozen=True)
class Amended:
    """The newest conversation that amended a record, directly or down a chain."""

    by: DocumentRecord
    day: str  # YYYY-MM-DD the newest amendment was said

    def mark(self) -> str:
        """``⚠️amended DAY → TITLE`` (the title inert: it may not forge a mark of ours; one
        that reads as orders is not repeated: the later chat's own line is flagged)."""
        day = f" {self.day}" if self.day else ""
        title = "a later conversation" if suspect_reason(self.by.name) else inert(self.by.name)
        return f"{AMENDED_MARK}{day} → {title}"


@dataclass(frozen=True)
class _Passage:
    record: DocumentRecord
    row: int  # the snapshot row of its vector
    day: str  # when it was decided ("" unknown)
    revises: bool  # amendment words in it


class Amendments:
    """The amended records of one snapshot, by path."""

    def __init__(self, amended: dict[str, Amended] | None = None) -> None:
        self._amended = amended or {}

    @classmethod
    def of(cls, snapshot: VectorSnapshot) -> Amendments:
        """Every amendment among the records of ``snapshot``, project by project."""
        by_project: dict[str, list[_Passage]] = {}
        seen: set[str] = set()
        # Only projects with a revising chat can have anything amended (most have none).
        revising = {
            m["project"]
            for m in snapshot.meta
            if m["kind"] == "conversation" and str(m.get("decided") or "").endswith("#amends")
        }
        for i, m in enumerate(snapshot.meta):
            if m["kind"] not in _AMENDABLE or m["path"] in seen or m["project"] not in revising:
                continue
            passage = _passage(m, i)
            if passage is not None:
                seen.add(m["path"])
                by_project.setdefault(str(m["project"]), []).append(passage)
        amended: dict[str, Amended] = {}
        for passages in by_project.values():
            amended.update(_amended(passages, snapshot.matrix))
        return cls(amended)

    def __len__(self) -> int:
        return len(self._amended)

    def get(self, record: DocumentRecord) -> Amended | None:
        """What amended ``record`` (None when nothing did)."""
        return self._amended.get(record.path)

    def mark_for(self, record: DocumentRecord) -> str:
        """``record``'s amended mark, '' when no later chat amended it."""
        found = self._amended.get(record.path)
        return found.mark() if found is not None else ""

    def successors_for(self, record: DocumentRecord) -> list[DocumentRecord]:
        """The newest chat that amended ``record`` (empty when none)."""
        found = self._amended.get(record.path)
        return [found.by] if found is not None else []


def _passage(meta: Mapping[str, object], row: int) -> _Passage | None:
    """A record's decision (a chat's deciding exchange, a note's or ADR's first chunk)."""
    if meta.get("chunk_index") != 0:
        return None
    record = DocumentRecord.from_row(meta)
    if record.kind == "conversation":
        if not record.decided or not record.description:
            return None
        return _Passage(record, row, record.decided_on or record.date, record.decided_amends)
    return _Passage(record, row, record.date, False)


def _amended(passages: Sequence[_Passage], matrix: np.ndarray) -> dict[str, Amended]:
    """The amendments among one project's passages (newest amender of each record)."""
    revisions = [p for p in passages if p.revises and p.record.kind == "conversation" and p.day]
    if not revisions:
        return {}
    vectors = matrix[[p.row for p in passages]]
    later = matrix[[p.row for p in revisions]]
    sims = vectors @ later.T  # passages x revisions
    direct: dict[str, _Passage] = {}
    # Only the pairs close enough to matter are looked at (a store of 10k notes and
    # 50 revising chats has 500k pairs and a handful above the floor).
    for i, j in np.argwhere(sims >= min(SAME_TOPIC, SAME_DOCUMENT)).tolist():
        earlier, revision = passages[i], revisions[j]
        if revision.record.path == earlier.record.path:
            continue
        # A record without a day (a note with no date) is taken as older than a chat.
        if earlier.day and earlier.day >= revision.day:
            continue
        floor = SAME_TOPIC if earlier.record.kind == "conversation" else SAME_DOCUMENT
        if float(sims[i, j]) < floor:
            continue
        current = direct.get(earlier.record.path)
        # The closest in time wins the direct link; the chain reaches the newest.
        if current is None or revision.day < current.day:
            direct[earlier.record.path] = revision
    out: dict[str, Amended] = {}
    for path, revision in direct.items():
        end, steps = revision, 0
        while end.record.path in direct and steps < len(passages):
            end, steps = direct[end.record.path], steps + 1
        if end.record.path != path:  # a cycle of same-day edits cannot mark itself
            out[path] = Amended(end.record, end.day)
    return out
