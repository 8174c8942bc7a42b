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
from precedents.inert import ID_CHARS, inert

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
    """Apply the rule to a whole parsed folder (records by id).

    Each step below is one rule of the module docstring, applied to the whole
    folder before the next: a supersession declared by a successor (rule 2)
    must be known before fallbacks (rule 3) and cycles (rule 4) are looked for.
    """
    work = _declared(parsed)  # rule 1, and every reference resolved once
    _named_successors(work)  # rule 3: successors a superseded record names
    _replacements(work)  # rule 2: declared only by the successor
    _fallback_successors(work)  # rule 3: successor named outside a relation
    cycles = _break_cycles(work)  # rule 4
    decisions = {rid: _decision(work, rid) for rid in work.order}  # rule 5
    _relations(work.order, parsed, work.resolved, decisions)
    return FolderVerdict(decisions, work.resolved, cycles)


@dataclass
class _Work:
    """The rule's working state for one folder, filled in rule by rule."""

    parsed: Mapping[str, ParsedAdr]
    resolver: Resolver
    order: list[str]  # ids in path order: every step visits records in this order
    base: dict[str, str]  # status from the record's own declaration (rule 1)
    status: dict[str, str]  # effective status, as the rules change it
    reason: dict[str, str]
    resolved: dict[str, list[tuple[RawRelation, Target]]]
    edges: dict[str, list[Target]] = field(default_factory=lambda: defaultdict(list))
    # What each record's edges hold, by id and as written: a set, so that a record
    # naming hundreds of successors is not quadratic (issue #28).
    _held: dict[str, set[tuple[str, str | None]]] = field(default_factory=lambda: defaultdict(set))

    def add_edge(self, rid: str, target: Target) -> None:
        """Record ``target`` as a successor of ``rid``, once (by id, else as written)."""
        held = self._held[rid]
        if target.kind == "record" and ("id", target.id) in held:
            return
        if ("display", target.display) in held:
            return
        self.edges[rid].append(target)
        held.update({("id", target.id), ("display", target.display)})


def _declared(parsed: Mapping[str, ParsedAdr]) -> _Work:
    """Rule 1: each record's base status from its own declaration, and its references
    resolved against the folder (once: every later rule reads them)."""
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
    return _Work(parsed, resolver, order, base, dict(base), reason, resolved)


def _named_successors(work: _Work) -> None:
    """Rule 3: a record that declares itself superseded names its successors."""
    for rid in work.order:
        if work.base[rid] in (SUPERSEDED, PARTIAL):
            for rel, target in work.resolved[rid]:
                if rel.type in (SUPERSEDED_BY, PARTIALLY_SUPERSEDED_BY):
                    work.add_edge(rid, target)


def _replacements(work: _Work) -> None:
    """Rule 2: an accepted record that says it supersedes another replaces it.

    Only a record that was accepted at some point counts: a proposal does not
    replace anything yet.
    """
    for rid in work.order:
        if work.base[rid] not in _WAS_ACCEPTED:
            continue
        for rel, target in work.resolved[rid]:
            if rel.type not in (SUPERSEDES, PARTIALLY_SUPERSEDES) or target.kind != "record":
                continue
            if target.id is not None and target.id != rid:
                _replace(work, rid, target.id, partial=rel.type == PARTIALLY_SUPERSEDES)


def _replace(work: _Work, rid: str, old: str, partial: bool) -> None:
    """``rid`` (accepted) replaces ``old``, fully or in part.

    A full replacement wins over a partial one; a record that was never
    replaceable (rejected, unknown) keeps its status, but still gets the edge
    when it is superseded anyway, so its mark names the successor.
    """
    new = PARTIAL if partial else SUPERSEDED
    status = work.status
    upgrade = status[old] in _REPLACEABLE or (status[old] == PARTIAL and new == SUPERSEDED)
    if work.base[old] in _REPLACEABLE and upgrade:
        status[old] = new
        work.reason[old] = f"{new.replace('_', ' ')} by accepted {work.parsed[rid].path}"
    if status[old] in (SUPERSEDED, PARTIAL):
        work.add_edge(old, work.resolver.record(rid, work.parsed[rid].path))


def _fallback_successors(work: _Work) -> None:
    """Rule 3: a superseded record with no successor yet takes its first fallback link
    (``Superseded`` and a paragraph, or "superseded by [X]" in the body)."""
    for rid in work.order:
        if work.status[rid] in (SUPERSEDED, PARTIAL) and not work.edges[rid]:
            for ref in work.parsed[rid].fallback_successors:
                target = work.resolver.resolve(ref)
                if target.id != rid:
                    work.add_edge(rid, target)
                    break


def _break_cycles(work: _Work) -> list[list[str]]:
    """Rule 4: records on a replacement cycle are unknown, and lose their successors.

    Every cycle is marked before any edge is dropped, so a record on two cycles
    is named in both.
    """
    cycles = _cycles(work.order, work.edges)
    for cycle in cycles:
        for rid in cycle:
            work.status[rid] = UNKNOWN
            work.reason[rid] = "replacement cycle: " + " -> ".join(
                label_for(c, work.parsed[c].number) for c in cycle
            )
    for cycle in cycles:
        for rid in cycle:
            work.edges[rid] = []
            work._held[rid] = set()
    return cycles


def _decision(work: _Work, rid: str) -> Decision:
    """Rule 5: the verdict on one record, with the live end of its chain and its mark."""
    status = work.status
    d = Decision(status[rid], work.reason[rid])
    if status[rid] in (SUPERSEDED, PARTIAL):
        d.successors = list(work.edges[rid])
        d.ends = _ends(rid, work.edges, status)
        d.end_status = {t.id: status[t.id] for t in d.ends if t.id is not None}
        d.current = [t.id for t in d.ends if t.id is not None and status[t.id] in (LIVE, PARTIAL)]
        if status[rid] == PARTIAL:
            d.current.insert(0, rid)  # still partly in force
    elif status[rid] == LIVE:
        d.current = [rid]
    d.mark = _mark(d)
    return d


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
        # A successor the folder does not hold is never named: the agent could not
        # open it. The record stays superseded; `adr check` reports the broken link.
        names = []
        missing = False
        for t in d.ends:
            if t.kind == "missing":
                missing = True
            elif t.kind == "external":
                names.append("external")
            else:
                note = _END_NOTE.get(d.end_status.get(t.id or "", LIVE), "")
                names.append(inert(t.label, ID_CHARS) + note)  # a label may not forge a mark
        head = "⚠️superseded" if d.status == SUPERSEDED else "△partially superseded"
        if names:
            more = " (another successor missing)" if missing else ""
            return f"{head} → {', '.join(dict.fromkeys(names))}{more}"
        return f"{head} (successor missing)" if missing else f"{head} (successor not named)"
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

    succs: dict[str, list[str]] = {}

    def succ(v: str) -> list[str]:  # once per record: it is asked at every step
        if v not in succs:
            succs[v] = [t.id for t in edges.get(v, []) if t.kind == "record" and t.id is not None]
        return succs[v]

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
    # (type, id) of each record's listed relations: a set, so that a record that
    # hundreds of records name is not quadratic (issue #28).
    listed: dict[str, set[tuple[str, str | None]]] = {}

    def of(rid: str) -> set[tuple[str, str | None]]:
        if rid not in listed:
            listed[rid] = {(r["type"], r["id"]) for r in decisions[rid].relations}
        return listed[rid]

    for rid in order:
        for rel, target in resolved[rid]:
            if target.id is not None and (rel.type, target.id) in of(rid):
                continue  # said twice (front matter and body): listed once
            of(rid).add((rel.type, target.id))
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
            if (inverse, rid) not in of(other):
                of(other).add((inverse, rid))
                rels.append(
                    {
                        "type": inverse,
                        "target": parsed[rid].path,
                        "id": rid,
                        "declared_by": parsed[rid].path,
                    }
                )
