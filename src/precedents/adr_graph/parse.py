"""One ADR file -> :class:`ParsedAdr`: id, title, declared status, date, component, links.

Formats read, in one folder or mixed: Nygard / adr-tools (``## Status`` section
with ``Superseded by [5. X](0005-x.md)``, ``Supersedes``, ``Amends`` lines),
MADR 2 (``- Status:`` bullet), MADR 3/4 (front matter ``status:``, optional),
log4brains (``- Status:`` bullet, ``## Links`` section), plain ``Status: X``
lines. The parser knows nothing of other files; :mod:`status` decides.
Nothing here raises on bad input: an unreadable file is a record with status
`unreadable` and a warning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precedents.adr_graph import text as tx
from precedents.adr_graph.model import (
    AMENDED_BY,
    AMENDS,
    CONTRADICTORY,
    DEPRECATED,
    LIVE,
    NO_STATUS,
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
    UNREADABLE,
    UNRECOGNISED,
    ParsedAdr,
    RawRelation,
    Ref,
)

# Status words, checked in this order at the start of a status value.
_WORDS: list[tuple[str, str]] = [
    (PARTIAL, r"(?:partially|partly)\s+super[sc]eded|super[sc]eded\s+in\s+part"),
    (REJECTED, r"not\s+accepted|rejected|declined|refused|withdrawn|abandoned|dropped"),
    (SUPERSEDED, r"super[sc]eded|superseeded|replaced|obsoleted\s+by"),
    (DEPRECATED, r"deprecated|obsolete|retired|outdated|sunset"),
    (
        LIVE,
        r"accepted|approved|implemented|adopted|agreed|decided|amended|active|done"
        r"|completed?|in\s+effect|enacted|valid|current|supplemented",
    ),
    (
        PROPOSED,
        r"proposed|proposal|draft(?:ed)?|in\s+review|under\s+review|reviewing|review"
        r"|in\s+progress|pending|open|wip|under\s+discussion|discussing|suggested"
        r"|planned|rfc|new",
    ),
]
_WORD_RE = re.compile("|".join(f"(?P<w{i}>{p})" for i, (_, p) in enumerate(_WORDS)), re.I)
_WORD_CLASS = [cls for cls, _ in _WORDS]

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
_FM_RELATIONS = {
    "supersedes": SUPERSEDES,
    "superseded_by": SUPERSEDED_BY,
    "partially_supersedes": PARTIALLY_SUPERSEDES,
    "partially_superseded_by": PARTIALLY_SUPERSEDED_BY,
    "amends": AMENDS,
    "amended_by": AMENDED_BY,
    "supplements": SUPPLEMENTS,
    "supplemented_by": SUPPLEMENTED_BY,
}
_ADR_TOKEN = r"\badr[-_ #]*\d{1,6}\b"
_TOKEN_RE = re.compile(_ADR_TOKEN + r"|#\d{1,6}\b", re.I)
_REF = r"(?:" + tx.LINK_PATTERN + r"|(?P<tok>" + _ADR_TOKEN + r"))"
# "This supersedes adr0008", "We decided to supersede [ADR-0011](...)": the
# successor's own words. Counted by the rule only if that successor is accepted.
_PROSE_SUPERSEDES = re.compile(r"super[sc]ed(?:es|e)\b[ \t*_]*" + _REF, re.I)
_PROSE_SUPERSEDED_BY = re.compile(
    r"super[sc]eded\s+(?:in\s+part\s+)?by\b[ \t*_:]*" + _REF,
    re.I,
)
# Cheap first pass: the full patterns above are tried only where this matches.
_SUPER_RE = re.compile(r"\bsuper[sc]ed", re.I)
_PARTIAL_BEFORE = re.compile(r"\b(?:partially|partly|in\s+part)\s+$", re.I)
_NEGATION_RE = re.compile(r"\b(?:not|never|no\s+longer)\b|n't\b", re.I)
_FIELD_RE = re.compile(
    r"^\s*(?:[-*+]\s+)?(?:\*\*|__)?(?P<key>status|date|component|deciders|decision[- ]makers)"
    r"(?:\*\*|__)?\s*:(?:\*\*|__)?(?P<value>.*)$",
    re.I,
)
_MADR_HEADINGS = re.compile(
    r"^(?:context and problem statement|considered options|decision outcome"
    r"|decision drivers|pros and cons of the options)\b",
    re.I,
)
_TITLE_NUMBER_RE = re.compile(
    r"^(?:adr[-_ #]*(?:\d+|x+|n+)\s*[.:)\-–—]?\s*|\d+\s*[.:)\-–—]\s*)",
    re.I,
)
_PLACEHOLDER = "\ue000"
_TRIM = " \t*_`.,;:()\"'!?"


@dataclass
class Declaration:
    """What one status value says: a status word, relations, links after the word."""

    cls: str | None
    relations: list[tuple[str, Ref]] = field(default_factory=list)
    loose_links: list[Ref] = field(default_factory=list)


def _status_word(plain: str) -> str | None:
    """Class of the status word that opens ``plain``, UNRECOGNISED, or None if empty."""
    lead = re.sub(r"^[\W\d_]+", "", plain)
    if not lead:
        return None
    m = _WORD_RE.match(lead)
    if m and (m.end() == len(lead) or not lead[m.end()].isalnum()):
        return _WORD_CLASS[int((m.lastgroup or "w0")[1:])]
    return UNRECOGNISED


def _token_refs(segment: str) -> list[Ref]:
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
        links.append(tx.make_ref(m.group("href"), m.group("ltext"), rel_dir))
        return f" {_PLACEHOLDER}{len(links) - 1}{_PLACEHOLDER} "

    plain = tx.LINK_RE.sub(_hold, value)
    # An unfilled template lists the choices: "Accepted | Pending | Superseded by".
    if (
        "|" in plain
        and sum(_status_word(p) not in (None, UNRECOGNISED) for p in plain.split("|")) > 1
    ):
        return Declaration(TEMPLATE)
    matches = list(_REL_RE.finditer(plain))
    head = plain[: matches[0].start()] if matches else plain
    cls = _status_word(head)
    decl = Declaration(cls)
    if cls is None and matches:
        kind = matches[0].lastgroup
        decl.cls = SUPERSEDED if kind == "sb" else PARTIAL if kind == "psb" else None
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(plain)
        segment = plain[m.end() : end]
        refs = [links[int(n)] for n in re.findall(f"{_PLACEHOLDER}(\\d+){_PLACEHOLDER}", segment)]
        if not refs:
            refs = _token_refs(re.sub(f"{_PLACEHOLDER}\\d+{_PLACEHOLDER}", " ", segment))
        decl.relations.extend((_REL_TYPE[m.lastgroup or "sb"], r) for r in refs)
    if cls in (SUPERSEDED, PARTIAL):
        # "⌛️ Superseded [0019](0019-x.md)": a link right after the word, no "by".
        decl.loose_links = [
            links[int(n)] for n in re.findall(f"{_PLACEHOLDER}(\\d+){_PLACEHOLDER}", head)
        ]
    return decl


def _units(lines: list[str]) -> list[str]:
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
        opens = _REL_RE.match(re.sub(r"^[\W\d_]+", "", line)) is not None or _status_word(
            line
        ) not in (None, UNRECOGNISED)
        if fresh or opens or not units:
            units.append(line)
        else:
            units[-1] += " " + line
        fresh = False
    return units


def _is_status_heading(text: str) -> tuple[bool, str]:
    bare = text.strip().strip("*_").strip()
    low = bare.lower()
    if low in ("status", "decision status", "current status"):
        return True, ""
    if low.startswith("status:"):
        return True, bare.split(":", 1)[1].strip()
    return False, ""


def _strip_title(title: str) -> str:
    """Title without its number prefix ("3. ", "ADR031: ") or a bracketed status prefix."""
    t = title.strip()
    if t.startswith("[") and _status_word(t[1:40]) not in (None, UNRECOGNISED):
        depth = 0
        for i, ch in enumerate(t):
            depth += ch == "["
            depth -= ch == "]"
            if depth == 0:
                t = t[i + 1 :].strip()
                break
    return _TITLE_NUMBER_RE.sub("", t, count=1).strip() or t


def _fm_values(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v) for v in value if v is not None]
    return [str(value)]


def unreadable(rel_path: str, reason: str) -> ParsedAdr:
    """A record the parser could not read: status unknown, with the reason as a warning."""
    rid, number = tx.file_id(rel_path)
    stem = rel_path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return ParsedAdr(
        path=rel_path,
        id=rid or stem,
        number=number,
        title=stem,
        declared_status=None,
        declared_class=UNREADABLE,
        warnings=[f"{rel_path}: {reason}"],
    )


def parse_file(path: Path, rel_path: str) -> ParsedAdr | None:
    """Parse one file; None when it is not an ADR (no number, no id, no status)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return unreadable(rel_path, f"cannot read ({exc.strerror or exc})")
    return parse_bytes(data, rel_path)


def parse_bytes(data: bytes, rel_path: str) -> ParsedAdr | None:
    """Parse a file's bytes (UTF-8, BOM and CRLF allowed); see :func:`parse_file`."""
    try:
        text = tx.decode(data)
    except UnicodeDecodeError:
        return unreadable(rel_path, "not valid UTF-8")
    return parse_text(text, rel_path)


def parse_text(text: str, rel_path: str) -> ParsedAdr | None:
    """Parse the text of one file (already decoded); see :func:`parse_file`."""
    try:
        return _parse(text, rel_path)
    except RecursionError:  # pathological nesting; degrade, never crash
        return unreadable(rel_path, "too deeply nested to read")


def _parse(text: str, rel_path: str) -> ParsedAdr | None:
    rel_dir = rel_path.rsplit("/", 1)[0] if "/" in rel_path else ""
    warnings: list[str] = []
    fm, body, fm_error = tx.split_front_matter(text)
    if fm_error:
        warnings.append(f"{rel_path}: {fm_error}")
    rid, number = tx.file_id(rel_path)
    if fm and fm.get("id") is not None and rid is None:
        rid = str(fm["id"]).strip()
        number = tx.number_of(rid)
        if number is not None:
            rid = re.sub(r"^\D*", "", rid)

    clean = tx.strip_comments(body)
    lines = clean.split("\n")
    headings, fenced = tx.scan(lines)

    h1 = next((h for h in headings if h.level == 1), None)
    title = _strip_title(h1.text) if h1 else ""
    if not title and fm and isinstance(fm.get("title"), str):
        title = fm["title"].strip()
    if not title:
        title = rel_path.rsplit("/", 1)[-1].rsplit(".", 1)[0]

    # Declarations, each a source of its own: front matter, preamble line, section.
    decls: list[tuple[str, Declaration]] = []
    fallback: list[Ref] = []
    relations: list[RawRelation] = []
    date = component = None
    is_madr = False
    if fm:
        for key in ("status", "adr_status", "state"):
            values = _fm_values(fm.get(key))
            if values:
                decls.append((values[0], classify(values[0], rel_dir)))
                break
        for key, value in fm.items():
            rel_type = _FM_RELATIONS.get(key.replace("-", "_"))
            if rel_type is None:
                continue
            for item in _fm_values(value):
                refs = [
                    tx.make_ref(m.group("href"), m.group("ltext"), rel_dir)
                    for m in tx.LINK_RE.finditer(item)
                ] or _token_refs(item)
                relations.extend(RawRelation(rel_type, r, "front_matter") for r in refs)
        date = tx.clean_date(fm.get("date"))
        comp = fm.get("component")
        component = str(comp).strip() if comp not in (None, "") else None
        is_madr = any(k in fm for k in ("deciders", "decision-makers", "decision_makers"))

    first_h2 = next((h.line for h in headings if h.level >= 2), len(lines))
    start = h1.line + 1 if h1 and h1.line < first_h2 else 0
    for i in range(start, first_h2):
        if i in fenced:
            continue
        m = _FIELD_RE.match(lines[i])
        if not m:
            continue
        key, value = m.group("key").lower(), m.group("value").strip()
        if key == "status" and value and not any(d[0] == value for d in decls):
            decls.append((value, classify(value, rel_dir)))
        elif key == "date" and date is None:
            date = tx.clean_date(value)
        elif key == "component" and component is None and value:
            component = value
        elif key in ("deciders", "decision-makers", "decision makers"):
            is_madr = True

    for n, h in enumerate(headings):
        is_status, inline = _is_status_heading(h.text)
        is_links = h.text.strip().lower() in ("links", "related decisions", "related adrs")
        if _MADR_HEADINGS.match(h.text.strip()):
            is_madr = True
        if not (is_status or is_links) or h.level == 1:
            continue
        end = headings[n + 1].line if n + 1 < len(headings) else len(lines)
        section = [
            ln for i, ln in enumerate(lines[h.line + 1 : end], h.line + 1) if i not in fenced
        ]
        units = ([inline] if inline else []) + _units(section)
        if is_links:
            for unit in units:
                for rel_type, ref in classify(unit, rel_dir).relations:
                    relations.append(RawRelation(rel_type, ref, "links"))
            continue
        if (
            is_status
            and len(units) >= 4
            and len({classify(u, rel_dir).cls for u in units} - {None, UNRECOGNISED}) >= 4
        ):
            # A list of every status word is a legend or a template, not a status.
            decls.append(("\n".join(units), Declaration(TEMPLATE)))
        elif is_status and units and not any(d[0] == units[0] for d in decls):
            decls.append((units[0], classify(units[0], rel_dir)))
            for unit in units[1:]:
                later = classify(unit, rel_dir)
                # Later lines carry relations ("Amended by ...") and a later stage of
                # the lifecycle ("Superseded by ..." under an old "Accepted").
                if later.cls in (SUPERSEDED, PARTIAL, DEPRECATED):
                    decls.append((unit, later))
                else:
                    relations.extend(RawRelation(t, r, "status") for t, r in later.relations)
                    fallback.extend(
                        tx.make_ref(m.group("href"), m.group("ltext"), rel_dir)
                        for m in tx.LINK_RE.finditer(unit)
                    )

    for _, decl in decls:
        relations.extend(RawRelation(t, r, "status") for t, r in decl.relations)
        if decl.loose_links:
            kind = PARTIALLY_SUPERSEDED_BY if decl.cls == PARTIAL else SUPERSEDED_BY
            relations.extend(RawRelation(kind, r, "status") for r in decl.loose_links)

    prose = "\n".join(ln for i, ln in enumerate(lines) if i not in fenced) if fenced else clean
    low = prose.lower()
    # str.find is far faster than a case-insensitive regex; most records never
    # mention supersession, so gate the regex on a plain substring test.
    hits = _SUPER_RE.finditer(prose) if "supersed" in low or "superced" in low else ()
    for hit in hits:
        at = hit.start()
        m = _PROSE_SUPERSEDES.match(prose, at)
        if m is not None:
            before = prose[max(0, at - 30) : at]
            if _NEGATION_RE.search(before):
                continue
            kind = PARTIALLY_SUPERSEDES if _PARTIAL_BEFORE.search(before) else SUPERSEDES
            relations.append(RawRelation(kind, _prose_ref(m, rel_dir), "prose"))
            continue
        m = _PROSE_SUPERSEDED_BY.match(prose, at)
        if m is not None:
            fallback.append(_prose_ref(m, rel_dir))

    cls, declared = _merge(decls, rel_path, warnings)
    implicit = False
    if cls == NO_STATUS and is_madr:
        # MADR makes the status optional; a record without one is in force.
        cls, implicit = LIVE, True
    if fm_error:
        cls = UNREADABLE
    if rid is None:
        # No number and no id: an ADR only if it declares a real status.
        if cls in (NO_STATUS, TEMPLATE, UNRECOGNISED, UNREADABLE) or implicit:
            return None
        rid = rel_path.rsplit(".", 1)[0]
    return ParsedAdr(
        path=rel_path,
        id=rid,
        number=number,
        title=title,
        declared_status=declared,
        declared_class=cls,
        implicit=implicit,
        relations=_dedupe(relations),
        fallback_successors=fallback,
        date=date,
        component=component,
        text=text,
        warnings=warnings,
    )


def _prose_ref(m: re.Match[str], rel_dir: str) -> Ref:
    if m.group("tok"):
        return Ref("token", m.group("tok"), m.group("tok"))
    return tx.make_ref(m.group("href"), m.group("ltext"), rel_dir)


def _merge(
    decls: list[tuple[str, Declaration]], rel_path: str, warnings: list[str]
) -> tuple[str, str | None]:
    """One declared class from every declaration of the record, and the first as written."""
    if not decls:
        return NO_STATUS, None
    declared = decls[0][0].strip()
    classes = {d.cls for _, d in decls if d.cls is not None}
    if TEMPLATE in classes:
        warnings.append(f"{rel_path}: status is an unfilled template ({declared!r})")
        return TEMPLATE, declared
    # A later stage of the lifecycle wins over "Accepted": adr-tools keeps both lines.
    for stage in (SUPERSEDED, PARTIAL, DEPRECATED):
        if stage in classes:
            return stage, declared
    if not classes:
        return NO_STATUS, declared
    if len(classes) > 1:
        words = ", ".join(repr(v.strip()) for v, _ in decls)
        warnings.append(f"{rel_path}: contradictory status declarations ({words})")
        return CONTRADICTORY, declared
    cls = classes.pop()
    if cls == UNRECOGNISED:
        warnings.append(f"{rel_path}: unrecognised status {declared!r}")
    return cls, declared


def _dedupe(relations: list[RawRelation]) -> list[RawRelation]:
    seen: set[tuple[str, str, str]] = set()
    out: list[RawRelation] = []
    for r in relations:
        key = (r.type, r.ref.kind, r.ref.value.lower())
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


__all__ = ["Declaration", "classify", "parse_bytes", "parse_file", "parse_text", "unreadable"]
