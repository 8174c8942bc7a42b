"""Plain data the ADR graph is made of: what the parser reads, what the rule decides.

Everything here is a small dataclass of strings, so a built graph pickles into
the cache and travels to the daemon unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Effective statuses (SPEC §4). Exactly one of these per record.
LIVE = "live"
SUPERSEDED = "superseded"
PARTIAL = "partially_superseded"
PROPOSED = "proposed"
REJECTED = "rejected"
DEPRECATED = "deprecated"
UNKNOWN = "unknown"
STATUSES = (LIVE, SUPERSEDED, PARTIAL, PROPOSED, REJECTED, DEPRECATED, UNKNOWN)

# Declared classes the parser may produce besides the statuses above. Each ends
# as `unknown`; they are kept apart so warnings and `adr check` can say why.
NO_STATUS = "no_status"
TEMPLATE = "template"
CONTRADICTORY = "contradictory"
UNREADABLE = "unreadable"
UNRECOGNISED = "unrecognised"

# Relation types, as stored (snake case, from the declaring record's side).
SUPERSEDED_BY = "superseded_by"
PARTIALLY_SUPERSEDED_BY = "partially_superseded_by"
SUPERSEDES = "supersedes"
PARTIALLY_SUPERSEDES = "partially_supersedes"
AMENDS = "amends"
AMENDED_BY = "amended_by"
SUPPLEMENTS = "supplements"
SUPPLEMENTED_BY = "supplemented_by"

# The inverse of each relation, used to list on a record what others say of it.
INVERSE = {
    SUPERSEDED_BY: SUPERSEDES,
    SUPERSEDES: SUPERSEDED_BY,
    PARTIALLY_SUPERSEDED_BY: PARTIALLY_SUPERSEDES,
    PARTIALLY_SUPERSEDES: PARTIALLY_SUPERSEDED_BY,
    AMENDS: AMENDED_BY,
    AMENDED_BY: AMENDS,
    SUPPLEMENTS: SUPPLEMENTED_BY,
    SUPPLEMENTED_BY: SUPPLEMENTS,
}


@dataclass(frozen=True)
class Ref:
    """A reference as written in a record, before it is resolved against the folder.

    ``kind`` is ``path`` (a relative link, normalised to the folder root),
    ``outside`` (a relative link that leaves the folder), ``url`` (an absolute
    URL) or ``token`` (a bare id, number or title such as ``ADR-0005``).
    """

    kind: str
    value: str
    text: str = ""


@dataclass(frozen=True)
class RawRelation:
    """One declared relation: ``type`` from the declaring record's side."""

    type: str
    ref: Ref
    origin: str  # "front_matter" | "status" | "links" | "prose"


@dataclass
class ParsedAdr:
    """What the parser reads from one ADR file; no knowledge of other files."""

    path: str  # relative to the graph folder, POSIX separators
    id: str
    number: int | None
    title: str
    declared_status: str | None  # as written (first declaration)
    declared_class: str  # a status above, or one of NO_STATUS/TEMPLATE/...
    implicit: bool = False  # MADR record without a status: live by convention
    relations: list[RawRelation] = field(default_factory=list)
    # References that name a successor outside a relation ("Superseded" followed by
    # a paragraph of links, or "superseded by [X]" in the body); used only when the
    # record declares itself superseded without saying by what.
    fallback_successors: list[Ref] = field(default_factory=list)
    date: str | None = None
    component: str | None = None
    text: str = ""
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Target:
    """A resolved reference: a record of the folder, something outside, or nothing."""

    kind: str  # "record" | "external" | "missing"
    display: str  # path as written (relative to the folder), URL, or token
    id: str | None = None  # the record's id when kind == "record"
    by_number: bool = False  # the link's file is missing; resolved by its number
    label: str = ""  # how a mark names it: ADR-0024, external, ADR-0028


@dataclass
class AdrRecord:
    """One ADR with its effective status, as the rule decided it."""

    path: str
    id: str
    number: int | None
    title: str
    declared_status: str | None
    status: str
    successors: list[str]
    current: str | list[str] | None
    mark: str
    relations: list[dict[str, Any]]
    component: str | None
    date: str | None
    implicit: bool
    reason: str  # why the status is what it is (one short phrase)
    warnings: list[str]
    text: str
    # Immediate successors resolved: {"target", "id", "kind"} (kind record/external/missing).
    successor_refs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def label(self) -> str:
        """How marks and chains name this record (``ADR-0024`` or the slug)."""
        return label_for(self.id, self.number)

    def as_dict(self, with_text: bool = False) -> dict[str, Any]:
        """The record as JSON-ready data (the `adr list --json` shape)."""
        out: dict[str, Any] = {
            "path": self.path,
            "id": self.id,
            "title": self.title,
            "declared_status": self.declared_status,
            "status": self.status,
            "successors": list(self.successors),
            "current": self.current,
            "mark": self.mark,
            "relations": [dict(r) for r in self.relations],
            "component": self.component,
            "date": self.date,
        }
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if with_text:
            out["text"] = self.text
        return out


@dataclass(frozen=True)
class NonAdr:
    """A file in the folder that is not an ADR (an index, a template, a readme)."""

    path: str
    reason: str


@dataclass(frozen=True)
class Finding:
    """One problem `adr check` reports; ``severity`` ``error`` fails the check."""

    kind: str
    path: str
    message: str
    severity: str = "error"

    def as_dict(self) -> dict[str, str]:
        """JSON-ready form."""
        return {
            "kind": self.kind,
            "path": self.path,
            "message": self.message,
            "severity": self.severity,
        }


def label_for(record_id: str, number: int | None) -> str:
    """``ADR-0024`` for a numbered record, the id itself (a slug) otherwise."""
    if number is not None and record_id.isdigit():
        return f"ADR-{record_id}"
    return record_id
