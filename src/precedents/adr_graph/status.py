"""THE status rule (SPEC §4): one function from a parsed folder to every record's
effective status, successors, live end and mark. Nothing else decides a status.

The rule, in order:

1. A record's own declaration gives its base status: accepted / approved /
   implemented / amended -> live; proposed / draft / pending -> proposed;
   rejected / declined -> rejected; deprecated; superseded; partially
   superseded. A MADR record without a status is live (MADR makes it
   optional); any other record without one, an unfilled template, an
   unreadable file or contradictory declarations -> unknown.
2. A record that was accepted (live, or since superseded or deprecated) and
   declares that it supersedes another replaces that other one, if it was live,
   deprecated or only proposed. A proposed, rejected or unknown record
   supersedes nothing: a proposal does not replace anything yet.
3. A superseded record's successors are the ones it names, plus those that
   declare they replace it; when it names none (``Superseded`` and a paragraph,
   or the successor only in its body) the first link of its status section or
   of a "superseded by [X]" sentence stands in.
4. Records on a replacement cycle are unknown: the folder contradicts itself.
5. The successor shown is the live end of the chain: replacements are followed
   through superseded records to the first record that is not superseded.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from precedents.adr_graph.model import (
    CONTRADICTORY,
    DEPRECATED,
    INVERSE,
    LIVE,
    NO_STATUS,
    PARTIAL,
    PARTIALLY_SUPERSEDED_BY,
    PARTIALLY_SUPERSEDES,
    PROPOSED,
    REJECTED,
    STATUSES,
    SUPERSEDED,
    SUPERSEDED_BY,
    SUPERSEDES,
    TEMPLATE,
    UNKNOWN,
    UNREADABLE,
    UNRECOGNISED,
    ParsedAdr,
    RawRelation,
    Target,
    label_for,
)
from precedents.adr_graph.resolve import Resolver

# Base statuses of a record that was accepted at some point: only such a record
# can replace another.
_WAS_ACCEPTED = (LIVE, SUPERSEDED, PARTIAL, DEPRECATED)
# Statuses a declaration by an accepted successor turns into superseded.
_REPLACEABLE = (LIVE, DEPRECATED, PROPOSED)
_UNKNOWN_REASONS = {
    NO_STATUS: "no status",
    TEMPLATE: "unfilled template",
    CONTRADICTORY: "contradictory status declarations",
    UNREADABLE: "unreadable",
    UNRECOGNISED: "unrecognised status",
}
_END_NOTE = {
    PROPOSED: " (proposed)",
    REJECTED: " (rejected)",
    DEPRECATED: " (deprecated)",
    UNKNOWN: " (status unknown)",
    SUPERSEDED: " (superseded, successor not named)",
}


@dataclass
class Decision:
    """The rule's verdict on one record."""

    status: str
    reason: str
    successors: list[Target] = field(default_factory=list)
    ends: list[Target] = field(default_factory=list)  # live ends of the chain
    end_status: dict[str, str] = field(default_factory=dict)  # end id -> its status
    current: list[str] = field(default_factory=list)
    mark: str = ""
    relations: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class FolderVerdict:
    """Every decision, plus what `adr check` and chains need to explain them."""

    decisions: dict[str, Decision]
    resolved: dict[str, list[tuple[RawRelation, Target]]]
    cycles: list[list[str]]


def decide(parsed: Mapping[str, ParsedAdr]) -> FolderVerdict:
    """Apply the rule to a whole parsed folder (records by id)."""
    resolver = Resolver(parsed)
    order = sorted(parsed, key=lambda rid: parsed[rid].path)
    base: dict[str, str] = {}
    reason: dict[str, str] = {}
    resolved: dict[str, list[tuple[RawRelation, Target]]] = {}
    for rid in order:
        p = parsed[rid]
        cls = p.declared_class
        base[rid] = cls if cls in STATUSES else UNKNOWN
        reason[rid] = _UNKNOWN_REASONS.get(cls, f"declared {cls.replace('_', ' ')}")
        if p.implicit:
            reason[rid] = "MADR record without a status (live by convention)"
        # A template's placeholder links are not declarations.
        rels = [] if cls == TEMPLATE else p.relations
        resolved[rid] = [(r, resolver.resolve(r.ref)) for r in rels]

    status = dict(base)
    edges: dict[str, list[Target]] = defaultdict(list)

    def add_edge(rid: str, target: Target) -> None:
        if target.kind == "record" and any(t.id == target.id for t in edges[rid]):
            return
        if any(t.display == target.display for t in edges[rid]):
            return
        edges[rid].append(target)

    for rid in order:
        if base[rid] in (SUPERSEDED, PARTIAL):
            for rel, target in resolved[rid]:
                if rel.type in (SUPERSEDED_BY, PARTIALLY_SUPERSEDED_BY):
                    add_edge(rid, target)

    for rid in order:  # rule 2: declared only by the successor
        if base[rid] not in _WAS_ACCEPTED:
            continue
        for rel, target in resolved[rid]:
            if rel.type not in (SUPERSEDES, PARTIALLY_SUPERSEDES) or target.kind != "record":
                continue
            old = target.id
            if old is None or old == rid:
                continue
            new = PARTIAL if rel.type == PARTIALLY_SUPERSEDES else SUPERSEDED
            upgrade = status[old] in _REPLACEABLE or (status[old] == PARTIAL and new == SUPERSEDED)
            if base[old] in _REPLACEABLE and upgrade:
                status[old] = new
                reason[old] = f"{new.replace('_', ' ')} by accepted {parsed[rid].path}"
            if status[old] in (SUPERSEDED, PARTIAL):
                add_edge(old, resolver._record(rid, parsed[rid].path))

    for rid in order:  # rule 3: successor named outside a relation
        if status[rid] in (SUPERSEDED, PARTIAL) and not edges[rid]:
            for ref in parsed[rid].fallback_successors:
                target = resolver.resolve(ref)
                if target.id != rid:
                    add_edge(rid, target)
                    break

    cycles = _cycles(order, edges)
    for cycle in cycles:  # rule 4
        for rid in cycle:
            status[rid] = UNKNOWN
            reason[rid] = "replacement cycle: " + " -> ".join(
                label_for(c, parsed[c].number) for c in cycle
            )
    for cycle in cycles:
        for rid in cycle:
            edges[rid] = []

    decisions: dict[str, Decision] = {}
    for rid in order:
        d = Decision(status[rid], reason[rid])
        if status[rid] in (SUPERSEDED, PARTIAL):
            d.successors = list(edges[rid])
            d.ends = _ends(rid, edges, status)
            d.end_status = {t.id: status[t.id] for t in d.ends if t.id is not None}
            d.current = [
                t.id for t in d.ends if t.id is not None and status[t.id] in (LIVE, PARTIAL)
            ]
            if status[rid] == PARTIAL:
                d.current.insert(0, rid)  # still partly in force
        elif status[rid] == LIVE:
            d.current = [rid]
        d.mark = _mark(d)
        decisions[rid] = d
    _relations(order, parsed, resolved, decisions)
    return FolderVerdict(decisions, resolved, cycles)


def _ends(rid: str, edges: Mapping[str, list[Target]], status: Mapping[str, str]) -> list[Target]:
    """Follow replacements from ``rid`` to the first records that are not superseded."""
    out: list[Target] = []
    seen = {rid}
    stack = list(reversed(edges.get(rid, [])))
    while stack:
        t = stack.pop()
        nxt = edges.get(t.id, []) if t.id is not None else []
        if t.kind == "record" and t.id is not None and status[t.id] == SUPERSEDED and nxt:
            if t.id not in seen:
                seen.add(t.id)
                stack.extend(reversed(nxt))
            continue
        same = (o.id == t.id if t.kind == "record" else o.display == t.display for o in out)
        if not any(same):
            out.append(t)
    return out


def _mark(d: Decision) -> str:
    """The mark the agent sees (SPEC §4 table); '' for a live record."""
    if d.status in (SUPERSEDED, PARTIAL):
        names = []
        for t in d.ends:
            if t.kind == "missing":
                names.append(f"{t.label} (missing)")
            elif t.kind == "external":
                names.append("external")
            else:
                names.append(t.label + _END_NOTE.get(d.end_status.get(t.id or "", LIVE), ""))
        head = "⚠️superseded" if d.status == SUPERSEDED else "△partially superseded"
        return (
            f"{head} → {', '.join(dict.fromkeys(names))}"
            if names
            else f"{head} (successor not named)"
        )
    return {
        LIVE: "",
        PROPOSED: "△proposed (not approved)",
        REJECTED: "⚠️rejected",
        DEPRECATED: "⚠️deprecated",
    }.get(d.status, "status unknown")


def _cycles(order: list[str], edges: Mapping[str, list[Target]]) -> list[list[str]]:
    """Strongly connected sets of records that replace each other (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []

    def succ(v: str) -> list[str]:
        return [t.id for t in edges.get(v, []) if t.kind == "record" and t.id is not None]

    for root in order:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on_stack.add(v)
            nxt = succ(v)
            if i < len(nxt):
                work.append((v, i + 1))
                w = nxt[i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp: list[str] = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in succ(v):
                    found.append(sorted(comp, key=order.index))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return found


def _relations(
    order: list[str],
    parsed: Mapping[str, ParsedAdr],
    resolved: Mapping[str, list[tuple[RawRelation, Target]]],
    decisions: Mapping[str, Decision],
) -> None:
    """List on each record its own relations and what other records declare of it."""
    for rid in order:
        for rel, target in resolved[rid]:
            if target.id is not None and any(
                r["type"] == rel.type and r["id"] == target.id for r in decisions[rid].relations
            ):
                continue  # said twice (front matter and body): listed once
            link = "renamed" if target.by_number else target.kind
            decisions[rid].relations.append(
                {
                    "type": rel.type,
                    "target": target.display,
                    "id": target.id,
                    "declared_by": "self",
                    "link": "ok" if link == "record" else link,
                }
            )
    for rid in order:
        for rel, target in resolved[rid]:
            other = target.id
            if other is None or other == rid or other not in decisions:
                continue
            inverse = INVERSE[rel.type]
            rels = decisions[other].relations
            if not any(r["type"] == inverse and r["id"] == rid for r in rels):
                rels.append(
                    {
                        "type": inverse,
                        "target": parsed[rid].path,
                        "id": rid,
                        "declared_by": parsed[rid].path,
                    }
                )
