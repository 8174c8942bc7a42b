"""The store's row types: what a document, a file and a search hit are.

Plain dataclasses with no Arrow in them, so the daemon, which reads the
store's vectors from an export file (:mod:`precedents.recall.exported`), never
imports pyarrow (28 MiB resident). The Arrow schemas live in :mod:`.schema`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from precedents.errors import StoreError
from precedents.kinds import Kind, is_kind


# Slots: the daemon holds one per scoped record (recall/files.py), 30,000 and more with
# an org index (recall/org.py): 0.7 KiB each with a __dict__, 0.2 KiB without.
@dataclass(frozen=True, slots=True)
class DocumentRecord:
    """What is known about one indexed document, the same on each of its chunks."""

    kind: Kind
    project: str
    path: str
    name: str
    description: str = ""
    date: str = ""
    adr_id: str = ""
    # The record's file scope as stored (precedents.rules.scope.Scope.to_json):
    # when a rule applies, which files a note or an ADR names. "" for none.
    scope: str = ""
    # "team": a note a team shares through its repository (ingest/team.py); "" otherwise.
    origin: str = ""
    author: str = ""  # a team note's front matter `author` (masked; rendered inert)
    # A conversation's decision passage (its description) was said in exchange N on
    # day D: "D#N", "D#N#amends" when that exchange revises an earlier rule
    # (ingest/decisions.py, issue #27); "" when it has none.
    decided: str = ""
    # An org record's (recall/org.py): its repository's name, and an ADR's mark as the
    # org build stored it from its repository's graph ('' live). "" for a local record.
    repo: str = ""
    org_mark: str = ""

    @property
    def org(self) -> bool:
        """Whether this record came from the organisation's index (marked ``(org, repo)``)."""
        return self.origin == "org"

    @property
    def team(self) -> bool:
        """Whether this is a team note (every channel marks it so)."""
        return self.origin == "team"

    @property
    def decided_on(self) -> str:
        """The day a conversation's decision passage was said ("" when unknown)."""
        return self.decided.partition("#")[0]

    @property
    def decided_exchange(self) -> int:
        """The 1-based exchange of a conversation's decision passage (0: none)."""
        number = self.decided.split("#")[1] if "#" in self.decided else ""
        return int(number) if number.isdigit() else 0

    @property
    def decided_amends(self) -> bool:
        """Whether a conversation's deciding exchange revises an earlier rule."""
        return self.decided.endswith("#amends")

    @property
    def doc_id(self) -> str:
        """A document is its source file."""
        return self.path

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> DocumentRecord:
        """The document a chunk row (from LanceDB or the daemon's copy) belongs to."""
        kind = row["kind"]
        if not is_kind(kind):
            raise StoreError(f"a row of {row['path']!r} has no known kind ({kind!r})")
        return cls(
            kind=kind,
            project=row["project"],
            path=row["path"],
            name=row["name"] or "",
            description=row["description"] or "",
            date=row["date"] or "",
            adr_id=row["adr_id"] or "",
            scope=row.get("scope") or "",
            origin=row.get("origin") or "",
            author=row.get("author") or "",
            decided=row.get("decided") or "",
            repo=row.get("repo") or "",
            org_mark=row.get("mark") or "",
        )


@dataclass(frozen=True)
class FileRecord:
    """One row of the file table: what was indexed from a source file, by content hash."""

    path: str
    kind: Kind
    project: str
    sha256: str
    size: int
    chunks: int
    indexed_at: float


@dataclass(frozen=True)
class DocumentHit:
    """A search result: one document, scored by its best chunk (cosine similarity)."""

    record: DocumentRecord
    score: float
    chunk_index: int
    # What it was ranked by (recall/vectors.py): the cosine, plus for a conversation its
    # words and date words. None: ranked by ``score`` alone.
    key: float | None = None
    # The learned relevance of a deciding chat's decision to the question
    # (recall/core.py, issue #27); None where it was not scored.
    relevance: float | None = None

    @property
    def rank_key(self) -> float:
        """The value it was ranked by."""
        return self.score if self.key is None else self.key

    def to_json(self) -> dict[str, object]:
        """The ``precedents query --json`` shape of one result."""
        r = self.record
        return {
            "kind": r.kind,
            "project": r.project,
            "path": r.path,
            "name": r.name,
            "description": r.description,
            "date": r.date,
            "adr_id": r.adr_id,
            "origin": r.origin,
            "author": r.author,
            "decided": r.decided,
            "score": round(self.score, 4),
        }
