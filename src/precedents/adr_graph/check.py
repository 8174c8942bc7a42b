"""`adr check`: what a repository's CI should fail on, and what it should only mention.

Errors: replacement cycles, dangling links (a successor that resolves to
nothing), both-direction disagreements, replacements across components,
records with no usable status, duplicate ids. Warnings (exit code unaffected):
links to renamed files that resolve by their number, superseded records that
name no successor, supersessions declared by records not yet accepted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from precedents.adr_graph.model import (
    DEPRECATED,
    LIVE,
    PARTIAL,
    PARTIALLY_SUPERSEDED_BY,
    PARTIALLY_SUPERSEDES,
    SUPERSEDED,
    SUPERSEDED_BY,
    SUPERSEDES,
    UNKNOWN,
    Finding,
)

if TYPE_CHECKING:
    from precedents.adr_graph.graph import AdrGraph

_REPLACED_BY = (SUPERSEDED_BY, PARTIALLY_SUPERSEDED_BY)
_REPLACES = (SUPERSEDES, PARTIALLY_SUPERSEDES)
_ACCEPTED = (LIVE, SUPERSEDED, PARTIAL, DEPRECATED)


def check(graph: AdrGraph) -> list[Finding]:
    """Every finding for the folder, errors and warnings, in path order."""
    out: list[Finding] = []
    for cycle in graph.cycles:
        recs = [graph.records[c] for c in cycle]
        out.append(
            Finding(
                "cycle",
                recs[0].path,
                "replacement cycle: " + " -> ".join(r.label for r in [*recs, recs[0]]),
            )
        )
    for warning in graph.warnings:
        if " is also " in warning:
            out.append(Finding("duplicate_id", warning.split(":", 1)[0], warning))
    for rec in graph:
        if rec.status == UNKNOWN and not rec.reason.startswith("replacement cycle"):
            kind = {
                "no status": "no_status",
                "contradictory status declarations": "contradictory",
                "unreadable": "unreadable",
            }.get(rec.reason, "no_status")
            out.append(Finding(kind, rec.path, f"{rec.label}: status unknown ({rec.reason})"))
        own = [r for r in rec.relations if r["declared_by"] == "self"]
        for rel in own:
            if rel.get("link") == "missing":
                out.append(
                    Finding(
                        "dangling_link",
                        rec.path,
                        f"{rec.label} {rel['type'].replace('_', ' ')} {rel['target']}, "
                        "which is not a record of the folder",
                    )
                )
            elif rel.get("link") == "renamed":
                target = graph.records[rel["id"]]
                out.append(
                    Finding(
                        "renamed_link",
                        rec.path,
                        f"{rec.label} links {rel['target']}, which does not exist; "
                        f"resolved by its number to {target.path}",
                        "warning",
                    )
                )
            if rel["type"] in _REPLACES and rel["id"] and rec.status not in _ACCEPTED:
                out.append(
                    Finding(
                        "pending_supersession",
                        rec.path,
                        f"{rec.label} ({rec.status}) declares it {rel['type'].replace('_', ' ')} "
                        f"{rel['target']}; it counts once {rec.label} is accepted",
                        "warning",
                    )
                )
        out.extend(_disagreements(graph, rec.id))
        if rec.status in (SUPERSEDED, PARTIAL) and not rec.successor_refs:
            out.append(
                Finding(
                    "no_successor",
                    rec.path,
                    f"{rec.label} is superseded but names no successor",
                    "warning",
                )
            )
    return out


def _disagreements(graph: AdrGraph, rid: str) -> list[Finding]:
    """Where a record and its successor tell different stories."""
    rec = graph.records[rid]
    out: list[Finding] = []
    if rec.status in (SUPERSEDED, PARTIAL):
        for ref in rec.successor_refs:
            if ref["kind"] != "record":
                continue
            succ = graph.records[ref["id"]]
            if succ.status not in _ACCEPTED:
                out.append(
                    Finding(
                        "disagreement",
                        rec.path,
                        f"{rec.label} is {rec.status.replace('_', ' ')} by {succ.label}, "
                        f"but {succ.label} is {succ.status} (not accepted)",
                    )
                )
            if rec.component and succ.component and rec.component != succ.component:
                out.append(
                    Finding(
                        "cross_component",
                        rec.path,
                        f"{rec.label} ({rec.component}) is replaced by {succ.label} "
                        f"({succ.component})",
                    )
                )
            back = [
                r["type"]
                for r in succ.relations
                if r["declared_by"] == "self" and r["id"] == rid and r["type"] in _REPLACES
            ]
            partial_here = rec.status == PARTIAL
            if back and (PARTIALLY_SUPERSEDES in back) != partial_here and succ.status in _ACCEPTED:
                out.append(
                    Finding(
                        "disagreement",
                        rec.path,
                        f"{rec.label} says it is {rec.status.replace('_', ' ')}, but "
                        f"{succ.label} says it {back[0].replace('_', ' ')} it",
                    )
                )
    # A successor claims this record, while the record names someone else.
    named = {
        r["id"]
        for r in rec.relations
        if r["declared_by"] == "self" and r["type"] in _REPLACED_BY and r["id"]
    }
    if named:
        for r in rec.relations:
            if r["declared_by"] == "self" or r["type"] not in _REPLACED_BY or r["id"] in named:
                continue
            claimant = graph.records.get(r["id"] or "")
            if claimant is not None and claimant.status in _ACCEPTED:
                names = ", ".join(graph.records[n].label for n in sorted(named))
                out.append(
                    Finding(
                        "disagreement",
                        rec.path,
                        f"{claimant.label} declares it supersedes {rec.label}, "
                        f"but {rec.label} names {names} as its successor",
                    )
                )
    return out
