"""Chains: from a record, follow replacements to the record in force.

The packet keeps the current policy and the history apart, so an agent reads
what applies now first and the replaced records only as background. A cycle, a
link to a missing record or a chain that ends in no accepted record is an
error with a clear message, never a guess.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from precedents.adr_graph.model import (
    LIVE,
    PARTIAL,
    PROPOSED,
    SUPERSEDED,
    UNKNOWN,
    AdrRecord,
)
from precedents.errors import PrecedentsError

if TYPE_CHECKING:
    from precedents.adr_graph.graph import AdrGraph


class AdrChainError(PrecedentsError):
    """A chain that cannot name a current record (cycle, missing record, no accepted end)."""


def _source(rec: AdrRecord) -> dict[str, Any]:
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
    return {
        PROPOSED: "only proposed (not approved)",
        UNKNOWN: f"of unknown status ({rec.reason})",
    }.get(rec.status, rec.status.replace("_", " "))


def chain(graph: AdrGraph, ref: str) -> dict[str, Any]:
    """``{"current", "history", "sources"}`` for the record ``ref`` names.

    ``current`` is the id of the record in force (a list when the decision was
    split across several), ``history`` the replaced ids, oldest first,
    ``sources`` each one's path, title, status, mark, date, component and text.
    Raises :class:`AdrChainError` when no accepted record is current, and
    :class:`precedents.errors.UsageError` when ``ref`` names no record.
    """
    start = graph.get(ref)
    if start.status == UNKNOWN:
        raise AdrChainError(f"{start.label} has no known status ({start.reason}); no chain")
    if start.status not in (LIVE, SUPERSEDED, PARTIAL):
        raise AdrChainError(
            f"{start.label} is {_describe(start)} and nothing replaces it: "
            "no accepted record is current"
        )
    history: list[str] = []
    current: list[str] = []
    crossings: list[dict[str, str]] = []
    queue = [start]
    seen = {start.id}
    while queue:
        rec = queue.pop(0)
        if rec.status == LIVE or (rec.status == PARTIAL and rec is not start):
            current.append(rec.id)
            continue
        # A partially superseded start is still partly in force: current, not history.
        (current if rec.status == PARTIAL else history).append(rec.id)
        if not rec.successor_refs:
            raise AdrChainError(
                f"{rec.label} is {rec.status.replace('_', ' ')} but names no successor"
            )
        for ref_ in rec.successor_refs:
            if ref_["kind"] == "missing":
                raise AdrChainError(
                    f"the chain of {start.label} reaches {ref_['target']}, "
                    "which is not a record of the folder (dangling link)"
                )
            if ref_["kind"] == "external":
                raise AdrChainError(
                    f"{rec.label} was replaced by something outside the repository: "
                    f"{ref_['target']}"
                )
            nxt = graph.records[ref_["id"]]
            if nxt.id in seen:
                raise AdrChainError(f"replacement cycle through {nxt.label}")
            seen.add(nxt.id)
            if rec.component and nxt.component and rec.component != nxt.component:
                crossings.append(
                    {
                        "from": rec.id,
                        "to": nxt.id,
                        "components": f"{rec.component} -> {nxt.component}",
                    }
                )
            if nxt.status not in (LIVE, SUPERSEDED, PARTIAL):
                raise AdrChainError(
                    f"the chain of {start.label} ends at {nxt.label}, which is {_describe(nxt)}: "
                    "no accepted record is current"
                )
            queue.append(nxt)
    packet: dict[str, Any] = {
        "current": current[0] if len(current) == 1 else current,
        "history": history,
        "sources": {
            rid: _source(graph.records[rid]) for rid in dict.fromkeys([*current, *history])
        },
    }
    if start.status == PARTIAL:
        packet["note"] = (
            f"{start.label} is only partially superseded: what its successors do not "
            "replace still applies."
        )
    if crossings:
        packet["cross_component"] = crossings
    return packet
