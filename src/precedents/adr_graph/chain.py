"""Chains: from a record, follow replacements to the record in force.

The packet keeps the current policy and the history apart, so an agent reads
what applies now first and the replaced records only as background. A cycle, a
link to a missing record or a chain that ends in no accepted record is an
error with a clear message, never a guess.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from precedents.adr_graph.model import (
    LIVE,
    PARTIAL,
    PROPOSED,
    SUPERSEDED,
    UNKNOWN,
    AdrRecord,
)
from precedents.errors import PrecedentsError

# Statuses a chain can pass through or end at: accepted at some point.
_FOLLOWABLE = (LIVE, SUPERSEDED, PARTIAL)


class AdrChainError(PrecedentsError):
    """A chain that cannot name a current record (cycle, missing record, no accepted end)."""


def _source(rec: AdrRecord) -> dict[str, Any]:
    """What a chain packet says of one record: enough to read it without the folder."""
    return {
        "path": rec.path,
        "title": rec.title,
        "status": rec.status,
        "mark": rec.mark,
        "date": rec.date,
        "component": rec.component,
        "text": rec.text,
    }


def _describe(rec: AdrRecord) -> str:
    """A record's status in words, for an error message."""
    return {
        PROPOSED: "only proposed (not approved)",
        UNKNOWN: f"of unknown status ({rec.reason})",
    }.get(rec.status, rec.status.replace("_", " "))


@dataclass
class _Walk:
    """What following the replacements from one record found."""

    current: list[str] = field(default_factory=list)
    history: list[str] = field(default_factory=list)
    crossings: list[dict[str, str]] = field(default_factory=list)


def chain(records: Mapping[str, AdrRecord], start: AdrRecord) -> dict[str, Any]:
    """``{"current", "history", "sources"}`` from ``start`` to the record in force.

    ``records`` is every record of the folder by id (successors are looked up
    there). ``current`` is the id of the record in force (a list when the
    decision was split across several), ``history`` the replaced ids, oldest
    first, ``sources`` each one's path, title, status, mark, date, component
    and text. Raises :class:`AdrChainError` when no accepted record is current.
    """
    _check_start(start)
    walk = _follow(records, start)
    current, history = walk.current, walk.history
    packet: dict[str, Any] = {
        "current": current[0] if len(current) == 1 else current,
        "history": history,
        "sources": {rid: _source(records[rid]) for rid in dict.fromkeys([*current, *history])},
    }
    if start.status == PARTIAL:
        packet["note"] = (
            f"{start.label} is only partially superseded: what its successors do not "
            "replace still applies."
        )
    if walk.crossings:
        packet["cross_component"] = walk.crossings
    return packet


def _check_start(start: AdrRecord) -> None:
    """A chain starts only at a record that was accepted: anything else has no
    current record to name, and guessing one would mislead the agent."""
    if start.status == UNKNOWN:
        raise AdrChainError(f"{start.label} has no known status ({start.reason}); no chain")
    if start.status not in _FOLLOWABLE:
        raise AdrChainError(
            f"{start.label} is {_describe(start)} and nothing replaces it: "
            "no accepted record is current"
        )


def _follow(records: Mapping[str, AdrRecord], start: AdrRecord) -> _Walk:
    """Breadth-first through the successors until every branch reaches a record in force.

    A record replaced by two (a split decision) has two current ends; each record
    is visited once, so a cycle is an error rather than an endless walk.
    """
    walk = _Walk()
    queue = [start]
    seen = {start.id}
    while queue:
        rec = queue.pop(0)
        if rec.status == LIVE or (rec.status == PARTIAL and rec is not start):
            walk.current.append(rec.id)
            continue
        # A partially superseded start is still partly in force: current, not history.
        (walk.current if rec.status == PARTIAL else walk.history).append(rec.id)
        for nxt in _successors(records, start, rec):
            if nxt.id in seen:
                raise AdrChainError(f"replacement cycle through {nxt.label}")
            seen.add(nxt.id)
            if rec.component and nxt.component and rec.component != nxt.component:
                walk.crossings.append(
                    {
                        "from": rec.id,
                        "to": nxt.id,
                        "components": f"{rec.component} -> {nxt.component}",
                    }
                )
            queue.append(nxt)
    return walk


def _successors(
    records: Mapping[str, AdrRecord], start: AdrRecord, rec: AdrRecord
) -> Iterator[AdrRecord]:
    """The records that replace ``rec``, each one a record the chain may pass through.

    Raises :class:`AdrChainError` at the first successor that is not: a link to
    nothing, something outside the repository, or a record never accepted. Lazy,
    so the caller's own check (a cycle) on one successor comes before the next
    successor is looked at: the first problem in link order is the one reported.
    """
    if not rec.successor_refs:
        raise AdrChainError(f"{rec.label} is {rec.status.replace('_', ' ')} but names no successor")
    for ref in rec.successor_refs:
        if ref["kind"] == "missing":
            raise AdrChainError(
                f"the chain of {start.label} reaches {ref['target']}, "
                "which is not a record of the folder (dangling link)"
            )
        if ref["kind"] == "external":
            raise AdrChainError(
                f"{rec.label} was replaced by something outside the repository: {ref['target']}"
            )
        nxt = records[ref["id"]]
        if nxt.status not in _FOLLOWABLE:
            raise AdrChainError(
                f"the chain of {start.label} ends at {nxt.label}, which is {_describe(nxt)}: "
                "no accepted record is current"
            )
        yield nxt
