"""`adr check`: what a repository's CI should fail on, and what it should only mention.

Errors: replacement cycles, dangling links (a successor that resolves to
nothing), both-direction disagreements, replacements across components,
records with no usable status (an unrecognised status word is named with its
file and line, for someone to fix), duplicate ids. Warnings (exit code unaffected):
links to renamed files that resolve by their number, superseded records that
name no successor, supersessions declared by records not yet accepted, and
any warning of the build (what `adr list` prints as ``warning:``) that no
finding already reports, so that check shows, and its summary counts, every
warning there is. A build warning about a record whose status is unknown is
the cause its status finding reports (an error), so it is not counted twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from precedents.adr_graph.declaration import unrecognised_line
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
    AdrRecord,
    Finding,
)

_REPLACED_BY = (SUPERSEDED_BY, PARTIALLY_SUPERSEDED_BY)
_REPLACES = (SUPERSEDES, PARTIALLY_SUPERSEDES)
_ACCEPTED = (LIVE, SUPERSEDED, PARTIAL, DEPRECATED)
_UNKNOWN_KINDS = {
    "no status": "no_status",
    "contradictory status declarations": "contradictory",
    "unreadable": "unreadable",
}


def check(
    records: Mapping[str, AdrRecord],
    warnings: Sequence[str],
    cycles: Sequence[Sequence[str]],
) -> list[Finding]:
    """Every finding for the folder, errors and warnings: folder-wide ones first,
    then each record's, in path order.

    ``records`` is every record by id, ``warnings`` and ``cycles`` what the
    build found (a graph's attributes of the same names).
    """
    out = _cycle_findings(records, cycles)
    out.extend(
        Finding("duplicate_id", warning.split(":", 1)[0], warning)
        for warning in warnings
        if " is also " in warning  # the build's wording for two files with one id
    )
    out.extend(_build_warnings(records, warnings))
    for rec in sorted(records.values(), key=lambda r: r.path):
        out.extend(_status_findings(rec))
        out.extend(_link_findings(records, rec))
        out.extend(_disagreements(records, rec))
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


def _build_warnings(records: Mapping[str, AdrRecord], warnings: Sequence[str]) -> list[Finding]:
    """The build's warnings that no other finding reports, as ``warning`` findings."""
    reported = tuple(f"{r.path}:" for r in records.values() if r.status == UNKNOWN)
    out: list[Finding] = []
    for warning in warnings:
        if " is also " in warning or warning.startswith(reported):
            continue  # a duplicate_id error, or the cause of a status error
        path, _, message = warning.partition(": ")
        path, _, line = path.partition(":")  # "file.md:12: ..." names its line
        where = f"line {line}: " if line.isdigit() else ""
        out.append(Finding("build_warning", path, f"{where}{message}", "warning"))
    return out


def _cycle_findings(
    records: Mapping[str, AdrRecord], cycles: Sequence[Sequence[str]]
) -> list[Finding]:
    """One error per replacement cycle, reported on its first record."""
    out: list[Finding] = []
    for cycle in cycles:
        recs = [records[c] for c in cycle]
        out.append(
            Finding(
                "cycle",
                recs[0].path,
                "replacement cycle: " + " -> ".join(r.label for r in [*recs, recs[0]]),
            )
        )
    return out


def _status_findings(rec: AdrRecord) -> list[Finding]:
    """A record with no usable status: CI should make someone write one.

    Records on a cycle are left out: the cycle finding already names them.
    """
    if rec.status != UNKNOWN or rec.reason.startswith("replacement cycle"):
        return []
    if rec.reason == "unrecognised status":
        line = unrecognised_line(rec.path, rec.warnings)
        where = f"line {line}: " if line is not None else ""
        return [
            Finding(
                "unrecognised_status",
                rec.path,
                f"{where}{rec.label} has the status {rec.declared_status!r}, which is not "
                "a known status word (status unknown); see 'Status words' in docs/adr-graph.md",
            )
        ]
    kind = _UNKNOWN_KINDS.get(rec.reason, "no_status")
    return [Finding(kind, rec.path, f"{rec.label}: status unknown ({rec.reason})")]


def _line_of(text: str, target: str) -> int | None:
    """The 1-based line of ``text`` where a link to ``target`` is written (its file
    name, or the whole target for a bare id), outside front matter first."""
    needle = target.rsplit("/", 1)[-1].lower()
    if not needle:
        return None
    lines = text.split("\n")
    for i, ln in enumerate(lines):
        if needle in ln.lower():
            return i + 1
    return None


def _link_findings(records: Mapping[str, AdrRecord], rec: AdrRecord) -> list[Finding]:
    """What is wrong with the links a record declares itself.

    Dangling links fail the check; a renamed file resolved by its number, or a
    supersession that counts only once its author is accepted, is worth knowing
    but is no error.
    """
    out: list[Finding] = []
    for rel in _own(rec.relations):
        if rel.get("link") == "missing":
            line = _line_of(rec.text, rel["target"])
            where = f"line {line}: " if line is not None else ""
            out.append(
                Finding(
                    "dangling_link",
                    rec.path,
                    f"{where}{rec.label} {rel['type'].replace('_', ' ')} {rel['target']}, "
                    "which is not a record of the folder",
                )
            )
        elif rel.get("link") == "renamed":
            target = records[rel["id"]]
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
    return out


def _disagreements(records: Mapping[str, AdrRecord], rec: AdrRecord) -> list[Finding]:
    """Where a record and its successor tell different stories."""
    out: list[Finding] = []
    if rec.status in (SUPERSEDED, PARTIAL):
        for ref in rec.successor_refs:
            if ref["kind"] == "record":
                out.extend(_successor_disagreements(rec, records[ref["id"]]))
    out.extend(_claimant_disagreements(records, rec))
    return out


def _successor_disagreements(rec: AdrRecord, succ: AdrRecord) -> list[Finding]:
    """A superseded record against one successor it resolved to.

    The successor must be accepted, in the same component, and, where it speaks
    of the record too, agree on whether the replacement is full or partial.
    """
    out: list[Finding] = []
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
                f"{rec.label} ({rec.component}) is replaced by {succ.label} ({succ.component})",
            )
        )
    back = [
        r["type"]
        for r in succ.relations
        if r["declared_by"] == "self" and r["id"] == rec.id and r["type"] in _REPLACES
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
    return out


def _claimant_disagreements(records: Mapping[str, AdrRecord], rec: AdrRecord) -> list[Finding]:
    """An accepted record claims to supersede ``rec``, while ``rec`` names someone else."""
    named = {r["id"] for r in _own(rec.relations) if r["type"] in _REPLACED_BY and r["id"]}
    if not named:
        return []
    out: list[Finding] = []
    for r in rec.relations:
        if r["declared_by"] == "self" or r["type"] not in _REPLACED_BY or r["id"] in named:
            continue
        claimant = records.get(r["id"] or "")
        if claimant is not None and claimant.status in _ACCEPTED:
            names = ", ".join(records[n].label for n in sorted(named))
            out.append(
                Finding(
                    "disagreement",
                    rec.path,
                    f"{claimant.label} declares it supersedes {rec.label}, "
                    f"but {rec.label} names {names} as its successor",
                )
            )
    return out


def _own(relations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The relations a record declares itself (not what others declare of it)."""
    return [r for r in relations if r["declared_by"] == "self"]
