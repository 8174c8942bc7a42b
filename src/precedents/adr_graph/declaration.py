"""One status value -> :class:`Declaration`: the status word and the relations it names.

``Accepted, amended by [X](x.md)``, ``⌛️ Superseded [0019](0019-x.md)``,
``superseded by ADR-0005``, ``Accepted | Pending | Superseded by`` (a template):
the words ADRs write their status in, in every format :mod:`parse` reads.
Kept apart from the parser, which decides *where* a status is written; this
module decides *what* a status value says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from precedents.adr_graph import text as tx
from precedents.adr_graph.model import (
    AMENDED_BY,
    AMENDS,
    DEPRECATED,
    LIVE,
    PARTIAL,
    PARTIALLY_SUPERSEDED_BY,
    PARTIALLY_SUPERSEDES,
    PROPOSED,
    REJECTED,
    SUPERSEDED,
    SUPERSEDED_BY,
    SUPERSEDES,
    SUPPLEMENTED_BY,
    SUPPLEMENTS,
    TEMPLATE,
    UNRECOGNISED,
    Ref,
)

# The status words: ONE table, word -> declared class, one row per class, as
# documented in docs/adr-graph.md ("Status words"; a test compares the two).
# Matched case-insensitively at the start of a status value, after emoji,
# emphasis and numbers, as a whole word (longest first: "partially accepted"
# before "accepted"); a space in a word matches any run of spaces or hyphens,
# an apostrophe either ' or ’. Only words that say the status alone: a link
# after "superseded by" / "replaced by" / "amended by" is a relation (below).
STATUS_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        LIVE,
        (
            "accepted",
            "accept",
            "accepts",
            "accepting",
            "partially accepted",
            "partially implemented",
            "partly implemented",
            "approved",
            "approve",
            "approves",
            "approving",
            "agreed",
            "adopted",
            "implemented",
            "done",
            "decided",
            "active",
            "current",
            "in effect",
            "enacted",
            "valid",
            "complete",
            "completed",
            "amended",
            "supplemented",
            "merged",
            "akzeptiert",
            "angenommen",
            "accepté",
            "acceptée",
            "aceptado",
            "aceptada",
            "aceito",
            "aceita",
        ),
    ),
    (
        PROPOSED,
        (
            "proposed",
            "propose",
            "proposal",
            "draft",
            "drafted",
            "wip",
            "work in progress",
            "in progress",
            "incomplete",
            "under review",
            "in review",
            "review",
            "reviewing",
            "on hold",
            "pending",
            "open",
            "under discussion",
            "in discussion",
            "discussing",
            "suggested",
            "planned",
            "rfc",
            "tbd",
            "new",
            "vorgeschlagen",
            "proposé",
            "proposée",
            "propuesto",
            "propuesta",
            "proposto",
            "proposta",
        ),
    ),
    (
        REJECTED,
        (
            "rejected",
            "reject",
            "declined",
            "denied",
            "refused",
            "not accepted",
            "won't do",
            "wont do",
            "abgelehnt",
            "rejeté",
            "rejetée",
            "rechazado",
            "rechazada",
            "rejeitado",
            "rejeitada",
        ),
    ),
    (
        DEPRECATED,
        (
            "deprecated",
            "deprecate",
            "obsolete",
            "retired",
            "outdated",
            "sunset",
            "reverted",
            "withdrawn",
            "abandoned",
            "archived",
            "dropped",
            "veraltet",
            "obsolète",
            "obsoleto",
            "obsoleta",
        ),
    ),
    (
        SUPERSEDED,
        (
            "superseded",
            "superceded",
            "superseeded",
            "replaced",
            "obsoleted",
            "obsoleted by",
            "ersetzt",
            "remplacé",
            "remplacée",
            "reemplazado",
            "reemplazada",
        ),
    ),
    (
        PARTIAL,
        (
            "partially superseded",
            "partly superseded",
            "superseded in part",
            "partially superceded",
            "partly superceded",
            "superceded in part",
        ),
    ),
)


def _norm(word: str) -> str:
    """A status word as the table keys it: lower case, one space, a plain apostrophe."""
    return re.sub(r"[\s\-]+", " ", word.lower()).replace("\u2019", "'")


_STATUS_OF: dict[str, str] = {_norm(word): cls for cls, words in STATUS_WORDS for word in words}
_WORD_RE = re.compile(
    "(?:"
    + "|".join(
        re.escape(w).replace("\\ ", r"[\s\-]+").replace("'", "['\u2019]")
        for w in sorted(_STATUS_OF, key=len, reverse=True)
    )
    + r")(?![^\W_])",
    re.I,
)

# Relation keywords inside a status value or a Links line.
_REL_RE = re.compile(
    r"\b(?:"
    r"(?P<psb>(?:partially|partly)\s+super[sc]eded\s+by|super[sc]eded\s+in\s+part\s+by)"
    r"|(?P<sb>super[sc]eded\s+by|replaced\s+by|obsoleted\s+by)"
    r"|(?P<ps>(?:partially|partly|in\s+part)\s+super[sc]edes?)"
    r"|(?P<s>super[sc]edes|replaces|obsoletes)"
    r"|(?P<ab>amended\s+by)|(?P<a>amends)"
    r"|(?P<lb>supplemented\s+by)|(?P<l>supplements)"
    r")\b",
    re.I,
)
_REL_TYPE = {
    "psb": PARTIALLY_SUPERSEDED_BY,
    "sb": SUPERSEDED_BY,
    "ps": PARTIALLY_SUPERSEDES,
    "s": SUPERSEDES,
    "ab": AMENDED_BY,
    "a": AMENDS,
    "lb": SUPPLEMENTED_BY,
    "l": SUPPLEMENTS,
}
# A bare ADR id in prose or a status value: ADR-0005, adr0008, ADR 12.
ADR_TOKEN = r"\badr[-_ #]*\d{1,6}\b"
_TOKEN_RE = re.compile(ADR_TOKEN + r"|#\d{1,6}\b", re.I)

# "Parts of this ADR were superseded by [X]": a "superseded by" with a word of
# part earlier in its sentence is a partial supersession.
_PART_BEFORE_RE = re.compile(
    r"\b(?:parts?|portions?|sections?|partially|partly|in\s+part)\b(?![^.;]*[.;]\s)", re.I
)

_PLACEHOLDER = "\ue000"
_PLACEHOLDER_RE = re.compile(f"{_PLACEHOLDER}(\\d+){_PLACEHOLDER}")
_TRIM = " \t*_`.,;:()\"'!?"


@dataclass
class Declaration:
    """What one status value says: a status word, relations, links after the word."""

    cls: str | None
    relations: list[tuple[str, Ref]] = field(default_factory=list)
    loose_links: list[Ref] = field(default_factory=list)


def status_word(plain: str) -> str | None:
    """Class of the status word that opens ``plain``, UNRECOGNISED, or None if empty."""
    lead = re.sub(r"^[\W\d_]+", "", plain)
    if not lead:
        return None
    m = _WORD_RE.match(lead)
    return _STATUS_OF[_norm(m.group(0))] if m else UNRECOGNISED


def status_line(text: str, value: str) -> int:
    """The 1-based line of ``text`` (a whole file) where status ``value`` is written.

    The first line naming the value at or after the first line that says
    "status" (front matter key, ``Status:`` line, ``## Status`` heading), else
    anywhere, else that "status" line itself; 1 when the file names neither.
    """
    lines = text.split("\n")
    needle = value.strip().split("\n")[0][:60].lower()
    start = next((i for i, ln in enumerate(lines) if "status" in ln.lower()), 0)
    for lo in (start, 0):
        for i in range(lo, len(lines)):
            if needle and needle in lines[i].lower():
                return i + 1
    return start + 1


def unrecognised_warning(path: str, line: int, value: str) -> str:
    """The parser's warning for a status word not in :data:`STATUS_WORDS`."""
    return f"{path}:{line}: unrecognised status {value.strip()!r}"


def unrecognised_line(path: str, warnings: list[str]) -> int | None:
    """The line number :func:`unrecognised_warning` put in one of ``warnings``."""
    prefix = f"{path}:"
    for w in warnings:
        head, sep, _ = w[len(prefix) :].partition(": unrecognised status ")
        if w.startswith(prefix) and sep and head.isdigit():
            return int(head)
    return None


def token_refs(segment: str) -> list[Ref]:
    """Bare references in text with no link: ``ADR-0005``, ``adr0008``, else the text itself."""
    found = [Ref("token", m.group(0), m.group(0)) for m in _TOKEN_RE.finditer(segment)]
    if found:
        return found
    cleaned = re.sub(r"^(?:and|&|or)\s+|\s+(?:and|&|or)$", "", segment.strip(_TRIM)).strip(_TRIM)
    if cleaned and len(cleaned) <= 120:
        return [Ref("token", cleaned, cleaned)]
    return []


def classify(value: str, rel_dir: str) -> Declaration:
    """Read one status value: ``Accepted, amended by [X](x.md)``, ``superseded by ADR-5``..."""
    links: list[Ref] = []

    def _hold(m: re.Match[str]) -> str:
        # Links are parked behind placeholders so that words in their text
        # ("[Superseded ADR](x.md)") are not read as the status.
        links.append(tx.make_ref(m.group("href"), m.group("ltext"), rel_dir))
        return f" {_PLACEHOLDER}{len(links) - 1}{_PLACEHOLDER} "

    plain = tx.LINK_RE.sub(_hold, value)
    if _is_template(plain):
        return Declaration(TEMPLATE)
    matches = list(_REL_RE.finditer(plain))
    head = plain[: matches[0].start()] if matches else plain
    cls = status_word(head)
    decl = Declaration(cls)
    kinds = [_kind(plain, m, matches[i - 1].end() if i else 0) for i, m in enumerate(matches)]
    if matches and (cls is None or cls in (LIVE, DEPRECATED)):
        # "superseded by X" alone, or after an earlier stage in the same value
        # ("Implemented. Superseded by [ADR-013]"): a later stage of the lifecycle wins.
        later = next((k for k in kinds if k in ("sb", "psb")), None)
        if later is not None:
            decl.cls = SUPERSEDED if later == "sb" else PARTIAL
        elif cls is None:
            decl.cls = None
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(plain)
        segment = plain[m.end() : end]
        refs = [links[int(n)] for n in _PLACEHOLDER_RE.findall(segment)]
        if not refs:
            refs = token_refs(_PLACEHOLDER_RE.sub(" ", segment))
        decl.relations.extend((_REL_TYPE[kinds[i]], r) for r in refs)
    if cls in (SUPERSEDED, PARTIAL):
        # "⌛️ Superseded [0019](0019-x.md)": a link right after the word, no "by".
        decl.loose_links = [links[int(n)] for n in _PLACEHOLDER_RE.findall(head)]
    return decl


def _kind(plain: str, m: re.Match[str], start: int) -> str:
    """The relation group ``m`` matched; a plain "superseded by" counts as partial
    when its sentence says so before it ("Parts of this ADR were superseded by")."""
    kind = m.lastgroup or "sb"
    if kind == "sb" and _PART_BEFORE_RE.search(plain, max(start, m.start() - 120), m.start()):
        return "psb"
    return kind


def _is_template(plain: str) -> bool:
    """An unfilled template lists the choices: ``Accepted | Pending | Superseded by``, or
    ``RFC by dd/mm/YYYY, Proposed, In Discussion, ..., Accepted, Deprecated`` (three
    or more different statuses in a comma list)."""
    if (
        "|" in plain
        and sum(status_word(p) not in (None, UNRECOGNISED) for p in plain.split("|")) > 1
    ):
        return True
    if plain.count(",") < 2:
        return False
    classes = {status_word(p) for p in plain.split(",")}
    return len(classes - {None, UNRECOGNISED}) >= 3


def opens_with_relation(unit: str) -> bool:
    """Whether a line opens with a relation word (``Supersedes [X](x.md)``): how a
    log4brains ``## Links`` item declares one; a sentence that only mentions one
    further on ("[X](x.md) also ... supersedes ADR 26") declares nothing."""
    return _REL_RE.match(re.sub(r"^[\W\d_]+", "", unit)) is not None


def status_units(lines: list[str]) -> list[str]:
    """Status-section lines grouped: a line that opens with a status word or relation
    starts a new unit; any other line continues the one before; blank lines split."""
    units: list[str] = []
    fresh = True
    for raw in lines:
        line = raw.strip()
        if not line:
            fresh = True
            continue
        line = re.sub(r"^[-*+]\s+", "", line)
        opens = _REL_RE.match(re.sub(r"^[\W\d_]+", "", line)) is not None or status_word(
            line
        ) not in (None, UNRECOGNISED)
        if fresh or opens or not units:
            units.append(line)
        else:
            units[-1] += " " + line
        fresh = False
    return units


# Relations read from text: a record that says in its title or first lines that
# it undoes, reverts, replaces, amends or extends an earlier one ("Partly undo
# ADR 109", "Revert ADR-12: use Postgres again", "Amendment to ADR-0005"). Only
# active forms followed directly by the reference (after a few fixed words such
# as "the part of"): "replaced by", "revert to ADR 3", "see ADR 3" say nothing.
# Documented in docs/adr-graph.md ("Relations read from text").
_TEXT_VERB_RE = re.compile(
    r"\b(?:"
    r"(?P<sup>undo(?:es|ing)?|revert(?:s|ing)?|revers(?:e|es|ing)"
    r"|roll(?:s|ing)?[ \t]+back|replac(?:e|es|ing)"
    r"|(?:revert|reversal|replacement|undoing)[ \t]+(?:of|for))"
    r"|(?P<amd>amend(?:s|ing)?|extend(?:s|ing)?|(?:amendment|extension)[ \t]+(?:to|of))"
    r")(?![^\W_])",
    re.I,
)
# Right after the verb: optional fixed words, then the reference (a link or an id).
_TEXT_OBJECT_RE = re.compile(
    r"[ \t*_]+(?:(?P<part>(?:the[ \t]+|a[ \t]+|some[ \t]+)?(?:parts?|portions?|sections?|pieces?)"
    r"[ \t]+of[ \t]+)|the[ \t]+(?:decisions?|choices?)[ \t]+(?:of|in|from|made[ \t]+in)[ \t]+)?"
    r"(?:the[ \t]+)?[*_]*(?:" + tx.LINK_PATTERN + r"|(?P<tok>" + ADR_TOKEN + r"))",
    re.I,
)
# "ADR 7 and ADR 8", ", [ADR 9](0009-x.md)": further references of one list.
_TEXT_MORE_RE = re.compile(
    r"[ \t*_]*(?:,|&|\band\b)[ \t*_]*(?:(?:the[ \t]+)?(?:" + tx.LINK_PATTERN + r"|(?P<tok>"
    r"" + ADR_TOKEN + r")))",
    re.I,
)
_TEXT_PARTIAL_BEFORE = re.compile(r"\b(?:partially|partly|in[ \t]+part|partial)[ \t]+$", re.I)
_TEXT_PARTIAL_AFTER = re.compile(r"[ \t*_,]*(?:in[ \t]+part|partially|partly)\b", re.I)
# Words in the clause before the verb that undo it: "does not replace ADR 3",
# "unlike ADR 3", "instead of reverting", "whether to amend".
_TEXT_NEGATION_RE = re.compile(
    r"\b(?:not|never|no[ \t]+longer|without|unlike|rather[ \t]+than|instead[ \t]+of|whether"
    r"|if|consider(?:s|ed|ing)?|could|would|might|should)\b|n't\b",
    re.I,
)
_CLAUSE_BREAK_RE = re.compile(r"[,;:!?]|\.(?:\s|$)")
_ADR_MENTION_RE = re.compile(ADR_TOKEN + r"|\]\(", re.I)
# Only the first lines are read: a cap keeps the scan short whatever the input.
TEXT_SCAN_CHARS = 1500


def text_relations(segment: str, rel_dir: str) -> list[tuple[str, Ref]]:
    """Supersession and amendment the record's own words declare in ``segment``
    (its title or first lines): ``(relation type, reference)`` pairs.

    ``Partly undo ADR 109`` -> partially supersedes; ``This reverts ADR-0012.``,
    ``Replace ADR-0007 with X`` -> supersedes; ``Replaces the part of ADR 7
    about caching`` -> partially supersedes; ``Amendment to ADR-0005``,
    ``Extends ADR 5`` -> amends. Not when negated in the same clause ("does not
    replace ADR 3"), nor when another ADR is the subject ("ADR 3 replaces ADR 2").
    """
    segment = segment[:TEXT_SCAN_CHARS]
    out: list[tuple[str, Ref]] = []
    for verb in _TEXT_VERB_RE.finditer(segment):
        m = _TEXT_OBJECT_RE.match(segment, verb.end())
        if m is None:
            continue
        at = verb.start()
        before = segment[max(0, at - 60) : at]
        clause = _CLAUSE_BREAK_RE.split(before)[-1]
        if _TEXT_NEGATION_RE.search(clause) or _ADR_MENTION_RE.search(clause):
            continue
        refs: list[Ref] = []
        ref = _text_ref(m, rel_dir)
        if ref is not None:
            refs.append(ref)
        end = m.end()
        more = _TEXT_MORE_RE.match(segment, end)
        while more is not None and len(refs) < 10:
            ref = _text_ref(more, rel_dir)
            if ref is not None:
                refs.append(ref)
            end = more.end()
            more = _TEXT_MORE_RE.match(segment, end)
        if verb.group("amd"):
            kind = AMENDS
        elif (
            m.group("part")
            or _TEXT_PARTIAL_BEFORE.search(before)
            or _TEXT_PARTIAL_AFTER.match(segment, end)
        ):
            kind = PARTIALLY_SUPERSEDES
        else:
            kind = SUPERSEDES
        out.extend((kind, r) for r in refs)
    return out


def _text_ref(m: re.Match[str], rel_dir: str) -> Ref | None:
    """The reference a text pattern matched; a link counts only if it names a record
    (a Markdown file of the repository, or an ADR id in its text), not a product page."""
    if m.group("tok"):
        return Ref("token", m.group("tok"), m.group("tok"))
    ref = tx.make_ref(m.group("href"), m.group("ltext"), rel_dir)
    if re.search(ADR_TOKEN, ref.text, re.I):
        return ref
    if ref.kind in ("path", "outside") and ref.value.lower().endswith((".md", ".markdown")):
        return ref
    return None
