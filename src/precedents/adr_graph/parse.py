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
from precedents.adr_graph.declaration import (
    ADR_TOKEN,
    Declaration,
    classify,
    opens_with_relation,
    status_line,
    status_units,
    status_word,
    text_relations,
    token_refs,
    unrecognised_warning,
)
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
from precedents.files import Refused, read_regular
from precedents.text import one_line

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
_REF = r"(?:" + tx.LINK_PATTERN + r"|(?P<tok>" + ADR_TOKEN + r"))"
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
# The clause before a prose "supersedes": another record named there is its subject.
_CLAUSE_BREAK_RE = re.compile(r"[,;:!?]|\.(?:\s|$)|\n\s*\n")
_OTHER_ADR_RE = re.compile(ADR_TOKEN + r"|\]\(", re.I)
_FIELD_RE = re.compile(
    r"^\s*(?:[-*+]\s+)?(?:\*\*|__)?(?P<key>status|statut|estado|date|component|deciders"
    r"|decision[- ]makers)"
    r"(?:\*\*|__)?\s*:(?:\*\*|__)?(?P<value>.*)$",
    re.I,
)
_MADR_HEADINGS = re.compile(
    r"^(?:context and problem statement|considered options|decision outcome"
    r"|decision drivers|pros and cons of the options)\b",
    re.I,
)
# Sections whose first paragraph may say what the record does to earlier ones.
_SECTION_RE = re.compile(r"^[\W\d_]*(context|decision)\b", re.I)
_TITLE_NUMBER_RE = re.compile(
    r"^(?:adr[-_ #]*(?:\d+|x+|n+)\s*[.:)\-–—]?\s*|adr\s*[:\-–—]\s+|\d+\s*[.:)\-–—]\s*)",
    re.I,
)
# A title wholly in emphasis ("# **ADR 12 “X”**"): the marks are not the title.
_TITLE_EMPHASIS_RE = re.compile(r"^(\*\*|__)(?P<t>.+)\1$")
# "#46. Generalize EventBus": a title line without the space CommonMark wants.
_LOOSE_H1_RE = re.compile(r"^#(?![#!\s])(?P<t>\S.*)$")
# A table row of metadata ("| Status | Approved |", ">| Status | `RFC` |"): NATS,
# Open Data Hub and NHS England write a record's fields as a table under its title.
_TABLE_FIELD_RE = re.compile(
    r"^\s*>?\s*\|\s*(?:\*\*|__)?(?P<key>status|statut|estado|date|component"
    r"|supersedes|superseded[ \t]+by|amends|amended[ \t]+by)(?:\*\*|__)?\s*:?\s*"
    r"(?:\*\*|__)?\s*\|(?P<value>[^|]*)\|",
    re.I,
)
_TABLE_RELATIONS = {
    "supersedes": SUPERSEDES,
    "superseded by": SUPERSEDED_BY,
    "amends": AMENDS,
    "amended by": AMENDED_BY,
}
_URL_RE = re.compile(r"^[a-z][a-z0-9+.-]*://\S+$", re.I)
# Table and field values that say "none".
_NONE_VALUES = {"", "n/a", "na", "none", "-", "—", "–", "nil", "null"}
# A file named as a template ("adr-template", "_template", "ADR-nnn_..._Template").
_TEMPLATE_NAME_RE = re.compile(r"(?:^|[-_. ])template$", re.I)
# Front matter keys a status is written under, in the languages read.
_FM_STATUS_KEYS = ("status", "adr_status", "state", "statut", "estado", "stato")


def _is_status_heading(text: str) -> tuple[bool, str]:
    """Whether a heading opens a Status section, and the value written in it
    (``## Status: Accepted``)."""
    bare = text.strip().strip("*_").strip()
    low = bare.lower()
    if low in ("status", "decision status", "current status", "statut", "estado"):
        return True, ""
    if low.startswith(("status:", "statut:", "estado:")):
        return True, bare.split(":", 1)[1].strip()
    return False, ""


def _strip_title(title: str, number: int | None = None) -> str:
    """Title without its number prefix ("3. ", "ADR031: ", "ADR: ", "10 " when the
    record is number 10), a bracketed status prefix, or emphasis around all of it."""
    t = title.strip()
    m = _TITLE_EMPHASIS_RE.match(t)
    if m and "**" not in m.group("t") and "__" not in m.group("t"):
        t = m.group("t").strip()
    if t.startswith("[") and status_word(t[1:40]) not in (None, UNRECOGNISED):
        depth = 0
        for i, ch in enumerate(t):
            depth += ch == "["
            depth -= ch == "]"
            if depth == 0:
                t = t[i + 1 :].strip()
                break
    bare = re.match(r"^0*(\d{1,6})\s+(?=\S)", t)
    if bare and number is not None and int(bare.group(1)) == number:
        return t[bare.end() :].strip() or t
    return _TITLE_NUMBER_RE.sub("", t, count=1).strip() or t


# Targets read from one front matter key (`supersedes: [...]`): real records name one
# to three. A hostile record's 2,000 (the front matter cap, precedents/text.py) in each
# of a thousand records would make millions of edges for every graph build (issue #28).
MAX_FM_VALUES = 32


def _fm_values(value: Any) -> list[str]:
    """A front matter value as a list of strings (a key may hold one value or a list),
    at most MAX_FM_VALUES of them."""
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v) for v in value[:MAX_FM_VALUES] if v is not None]
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
    try:  # a link out of its folder, a FIFO, a device, a huge file: never read (issue #28)
        data = read_regular(path, within=path.parent)
    except Refused as exc:
        return unreadable(rel_path, exc.reason)
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
    except RecursionError:  # pathological nesting (front matter); degrade, never crash
        return unreadable(rel_path, "too deeply nested to read")


@dataclass
class _Reading:
    """What the reading phases of :func:`_parse` gather from one record.

    Each phase reads one place a record can declare something (front matter,
    preamble lines, Status and Links sections, prose) and adds to this, in
    that order: the order decides which declaration is "the first as written".
    """

    rel_path: str
    rel_dir: str  # the file's folder, relative to the graph folder ("" at the top)
    decls: list[tuple[str, Declaration]] = field(default_factory=list)
    relations: list[RawRelation] = field(default_factory=list)
    fallback: list[Ref] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    date: str | None = None
    component: str | None = None
    is_madr: bool = False

    def declare(self, value: str) -> None:
        """Add a status value, unless the same words were already declared elsewhere."""
        if not any(d[0] == value for d in self.decls):
            self.decls.append((value, classify(value, self.rel_dir)))

    def links(self, value: str) -> list[Ref]:
        """Every Markdown link in ``value``, as references."""
        return [
            tx.make_ref(m.group("href"), m.group("ltext"), self.rel_dir)
            for m in tx.LINK_RE.finditer(value)
        ]


def _parse(text: str, rel_path: str) -> ParsedAdr | None:
    """Read one record in phases; see :func:`parse_file`."""
    reading = _Reading(rel_path, rel_path.rsplit("/", 1)[0] if "/" in rel_path else "")
    fm, body, fm_error = tx.read_front_matter(text)
    if fm_error:
        reading.warnings.append(f"{rel_path}: {fm_error}")
    rid, number = _identity(rel_path, fm)
    clean = tx.strip_comments(body)
    lines = clean.split("\n")
    headings, fenced = tx.scan(lines)
    title = _title(headings, lines, fenced, fm, rel_path, number)
    if fm:
        _read_front_matter(fm, reading)
    _read_preamble(lines, headings, fenced, reading)
    _read_sections(lines, headings, fenced, reading)
    _read_declared_relations(reading)
    low = clean.lower()
    _read_prose(clean, low, lines, fenced, reading)
    # Most records name no other ADR at all: then there is nothing to read.
    if "adr" in low or "](" in clean or _names_adr(title):
        stem = rel_path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        # The title as written (a file stem says nothing in words).
        title_src = "" if title == stem else title
        _read_text_relations(title_src, lines, headings, fenced, reading, number)
    cls, declared, implicit = _declared_class(reading, broken=fm_error is not None)
    if (number is None or number == 0) and _TEMPLATE_NAME_RE.search(_stem(rel_path)):
        # "0000-adr-template.md", "ADR-nnn_..._Template.md": a template, whatever
        # status it carries as an example ("Status: **Proposed**").
        if cls != TEMPLATE:
            reading.warnings.append(f"{rel_path}: a template (named so), not a decision")
        cls, implicit = TEMPLATE, False
    if cls == UNRECOGNISED and declared is not None:
        line = status_line(text, declared)
        reading.warnings.append(unrecognised_warning(rel_path, line, declared))
    if rid is None:
        # No number and no id: an ADR only if it declares a real status.
        # An unrecognised status word still makes it a record (``adr check``
        # reports the word): a file with a Status field is an ADR.
        if cls in (NO_STATUS, TEMPLATE, UNREADABLE) or implicit:
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
        relations=_dedupe(reading.relations),
        fallback_successors=reading.fallback,
        date=reading.date,
        component=reading.component,
        text=text,
        warnings=reading.warnings,
    )


def _stem(rel_path: str) -> str:
    """A file's name without its folder and extension."""
    return rel_path.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def _identity(rel_path: str, fm: dict[str, Any] | None) -> tuple[str | None, int | None]:
    """Id and number: from the file name, else from front matter ``id:``.

    The file name wins: it is what links to the record are written with.
    """
    rid, number = tx.file_id(rel_path)
    if fm and fm.get("id") is not None and rid is None:
        rid = str(fm["id"]).strip()
        number = tx.number_of(rid)
        if number is not None:
            rid = re.sub(r"^\D*", "", rid)
    return rid, number


def _title(
    headings: list[tx.Heading],
    lines: list[str],
    fenced: set[int],
    fm: dict[str, Any] | None,
    rel_path: str,
    number: int | None,
) -> str:
    """The first level-1 heading (number prefix dropped), else front matter ``title:``,
    else a first line ``#Title`` without the space, else the file's stem: a record
    always has something to be shown as.

    A level-1 heading that comes after a level-2 one is a section written one
    level too high (Docusaurus records keep their title in front matter and
    may use ``# Decision`` in the body): front matter ``title:`` wins over it.
    """
    h1 = next((h for h in headings if h.level == 1), None)
    fm_title = fm.get("title") if fm else None
    has_fm_title = isinstance(fm_title, str) and fm_title.strip() != ""
    late = has_fm_title and h1 is not None and headings[0].line < h1.line
    title = _strip_title(h1.text, number) if h1 and not late else ""
    if not title and isinstance(fm_title, str):
        title = _strip_title(one_line(fm_title), number)
    if not title:
        first = next((i for i, ln in enumerate(lines) if ln.strip() and i not in fenced), None)
        m = _LOOSE_H1_RE.match(lines[first].strip()) if first is not None else None
        if m:
            title = _strip_title(m.group("t"), number)
    return title or rel_path.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def _read_front_matter(fm: dict[str, Any], reading: _Reading) -> None:
    """MADR 3/4 and log4brains front matter: status, relation keys, date, component.

    Read first, so a front matter status is the one "as written" when the body
    says something else too.
    """
    for key in _FM_STATUS_KEYS:
        values = _fm_values(fm.get(key))
        if values:
            reading.decls.append((values[0], classify(values[0], reading.rel_dir)))
            break
    for key, value in fm.items():
        rel_type = _FM_RELATIONS.get(key.replace("-", "_"))
        if rel_type is None:
            continue
        for item in _fm_values(value):
            refs = reading.links(item) or token_refs(item)
            reading.relations.extend(RawRelation(rel_type, r, "front_matter") for r in refs)
    reading.date = tx.clean_date(fm.get("date"))
    comp = fm.get("component")
    reading.component = str(comp).strip() if comp not in (None, "") else None
    reading.is_madr = any(k in fm for k in ("deciders", "decision-makers", "decision_makers"))


def _read_preamble(
    lines: list[str], headings: list[tx.Heading], fenced: set[int], reading: _Reading
) -> None:
    """``Status: X`` / ``- Date: Y`` lines between the title and the first section.

    MADR 2 and log4brains write the status as such a bullet; a field under a later
    heading is prose, not a declaration, so only the preamble is read.
    """
    h1 = next((h for h in headings if h.level == 1), None)
    first_h2 = next((h.line for h in headings if h.level >= 2), len(lines))
    start = h1.line + 1 if h1 and h1.line < first_h2 else 0
    for i in range(start, first_h2):
        if i in fenced:
            continue
        line = lines[i]
        if "|" in line and _read_table_field(line, reading):
            continue
        m = _FIELD_RE.match(line)
        if not m:
            continue
        key, value = m.group("key").lower(), m.group("value").strip()
        if key == "status" and value:
            reading.declare(value)
        elif key == "date" and reading.date is None:
            reading.date = tx.clean_date(value)
        elif key == "component" and reading.component is None and value:
            reading.component = value
        elif key in ("deciders", "decision-makers", "decision makers"):
            reading.is_madr = True


def _read_table_field(line: str, reading: _Reading) -> bool:
    """One metadata table row (``| Status | Approved |``, ``| Superseded by | [X](x.md) |``);
    False when the line is not such a row."""
    m = _TABLE_FIELD_RE.match(line)
    if m is None:
        return False
    key = re.sub(r"\s+", " ", m.group("key").lower())
    value = m.group("value").strip()
    if value.strip("`*_ ").lower() in _NONE_VALUES:
        return True
    if key in ("status", "statut", "estado"):
        reading.declare(value)
    elif key == "date" and reading.date is None:
        reading.date = tx.clean_date(value.strip("`"))
    elif key == "component" and reading.component is None:
        reading.component = value.strip("`")
    elif key in _TABLE_RELATIONS:
        bare = value.strip("`<> ")
        refs = reading.links(value) or (
            [Ref("url", bare, bare)] if _URL_RE.match(bare) else token_refs(bare)
        )
        kind = _TABLE_RELATIONS[key]
        reading.relations.extend(RawRelation(kind, r, "status") for r in refs)
    return True


def _read_sections(
    lines: list[str], headings: list[tx.Heading], fenced: set[int], reading: _Reading
) -> None:
    """``## Status`` and ``## Links`` sections (Nygard, adr-tools, log4brains).

    Also notes MADR's own section names: a MADR record may leave out its status.
    """
    for n, h in enumerate(headings):
        is_status, inline = _is_status_heading(h.text)
        is_links = h.text.strip().lower() in ("links", "related decisions", "related adrs")
        if _MADR_HEADINGS.match(h.text.strip()):
            reading.is_madr = True
        if not (is_status or is_links) or h.level == 1:
            continue
        end = headings[n + 1].line if n + 1 < len(headings) else len(lines)
        section = [
            ln for i, ln in enumerate(lines[h.line + 1 : end], h.line + 1) if i not in fenced
        ]
        if is_status and any(ln.strip() and not ln.lstrip().startswith(">") for ln in section):
            # The template's instructions quoted above the value ("> A decision may be
            # 'proposed' if ...", cometbft, hermes): guidance, not the status.
            section = [ln for ln in section if not ln.lstrip().startswith(">")]
        units = ([inline] if inline else []) + status_units(section)
        if is_links:
            for unit in units:
                if not opens_with_relation(unit):
                    continue
                for rel_type, ref in classify(unit, reading.rel_dir).relations:
                    reading.relations.append(RawRelation(rel_type, ref, "links"))
        else:
            _read_status_section(units, reading)


def _read_status_section(units: list[str], reading: _Reading) -> None:
    """The first unit of a Status section is a declaration; later units may be too.

    adr-tools appends ``Superseded by ...`` under the old ``Accepted`` line, so a
    later unit that names a later stage of the lifecycle is a declaration of its
    own; any other later unit only carries relations (``Amended by ...``) and
    links that may name a successor.
    """
    if len(units) >= 4 and len(_classes(units, reading.rel_dir)) >= 4:
        # A list of every status word is a legend or a template, not a status.
        reading.decls.append(("\n".join(units), Declaration(TEMPLATE)))
        return
    if not units or any(d[0] == units[0] for d in reading.decls):
        return
    reading.declare(units[0])
    for unit in units[1:]:
        later = classify(unit, reading.rel_dir)
        if later.cls in (SUPERSEDED, PARTIAL, DEPRECATED):
            reading.decls.append((unit, later))
        else:
            reading.relations.extend(RawRelation(t, r, "status") for t, r in later.relations)
            reading.fallback.extend(reading.links(unit))


def _classes(units: list[str], rel_dir: str) -> set[str]:
    """The distinct status classes a list of status values names."""
    found = (classify(u, rel_dir).cls for u in units)
    return {c for c in found if c is not None and c != UNRECOGNISED}


def _read_declared_relations(reading: _Reading) -> None:
    """Relations named inside the status declarations, and links right after the word.

    ``⌛️ Superseded [0019](0019-x.md)`` has no "by": the link is the successor.
    """
    for _, decl in reading.decls:
        reading.relations.extend(RawRelation(t, r, "status") for t, r in decl.relations)
        if decl.loose_links:
            kind = PARTIALLY_SUPERSEDED_BY if decl.cls == PARTIAL else SUPERSEDED_BY
            reading.relations.extend(RawRelation(kind, r, "status") for r in decl.loose_links)


def _read_prose(
    clean: str, low: str, lines: list[str], fenced: set[int], reading: _Reading
) -> None:
    """Supersession in the body's own words ("This supersedes ADR-0008"), outside fences.

    The successor's own words count (if it is accepted: the rule decides); a
    "superseded by [X]" sentence is kept only as a fallback successor.
    """
    # str.find is far faster than a case-insensitive regex; most records never
    # mention supersession, so gate everything on a plain substring test.
    if "supersed" not in low and "superced" not in low:
        return
    prose = "\n".join(ln for i, ln in enumerate(lines) if i not in fenced) if fenced else clean
    hits = _SUPER_RE.finditer(prose)
    for hit in hits:
        at = hit.start()
        m = _PROSE_SUPERSEDES.match(prose, at)
        if m is not None:
            before = prose[max(0, at - 30) : at]
            if _NEGATION_RE.search(before):
                continue
            clause = _CLAUSE_BREAK_RE.split(prose[max(0, at - 200) : at])[-1]
            if _OTHER_ADR_RE.search(clause):
                continue  # "[ADR 35](...) also ... supersedes ADR 26": said of another record
            kind = PARTIALLY_SUPERSEDES if _PARTIAL_BEFORE.search(before) else SUPERSEDES
            reading.relations.append(RawRelation(kind, _prose_ref(m, reading.rel_dir), "prose"))
            continue
        m = _PROSE_SUPERSEDED_BY.match(prose, at)
        if m is not None:
            reading.fallback.append(_prose_ref(m, reading.rel_dir))


def _first_lines(lines: list[str], headings: list[tx.Heading], fenced: set[int]) -> list[str]:
    """Where a record says what it does to earlier ones: the lines between the title
    and the first section (not ``Status:``-like fields), and the first paragraph of
    its first Context section and of its first Decision section. Only the parts
    that name an ADR (an id or a link) are returned: most name none."""
    out: list[str] = []
    start, first_h2, n = 0, len(lines), len(headings)
    for k, h in enumerate(headings):
        if h.level >= 2:
            first_h2, n = h.line, k
            break
        if start == 0:
            start = h.line + 1
    preamble = lines[start:first_h2]
    if preamble and _names_adr("\n".join(preamble)):
        kept = (
            ln
            for i, ln in enumerate(preamble, start)
            if i not in fenced and not _FIELD_RE.match(ln)
        )
        out.append(" ".join(kept))
    seen = ""
    for k in range(n, len(headings)):
        h = headings[k]
        low = h.text.lower()
        kind = "c" if "context" in low else "d" if "decision" in low else ""
        if not kind or kind in seen or h.level < 2 or not _SECTION_RE.match(h.text):
            continue
        seen += kind
        end = headings[k + 1].line if k + 1 < len(headings) else len(lines)
        i = h.line + 1
        while i < end and (i in fenced or not lines[i].strip()):
            i += 1
        j = i
        while j < end and j not in fenced and lines[j].strip():
            j += 1
        if i < j:
            text = " ".join(lines[i:j])
            if _names_adr(text):
                out.append(text)
        if len(seen) == 2:
            break
    return out


def _names_adr(text: str) -> bool:
    """Cheap first pass: whether ``text`` may name an ADR (an id or a link)."""
    # Plain substring tests: far faster than a case-insensitive regex.
    return "](" in text or "adr" in text.lower()


def _read_text_relations(
    title: str,
    lines: list[str],
    headings: list[tx.Heading],
    fenced: set[int],
    reading: _Reading,
    number: int | None,
) -> None:
    """Relations the record's title or first lines state in words ("Partly undo ADR
    109", "This reverts ADR-0012.", "Amendment to ADR-0005"); see
    :func:`declaration.text_relations`. Read as the successor's own declaration, so
    the one rule applies (it counts once the record is accepted). A reference to
    the record itself, or to one it already relates to explicitly, is skipped."""
    segments = _first_lines(lines, headings, fenced)
    if _names_adr(title):
        segments.insert(0, title)
    found = [kr for segment in segments for kr in text_relations(segment, reading.rel_dir)]
    if not found:
        return
    taken = {_ref_number(r.ref) for r in reading.relations if r.origin != "prose"}
    taken.discard(None)
    for kind, ref in found:
        num = _ref_number(ref)
        if num is not None and (num == number or num in taken):
            continue
        reading.relations.append(RawRelation(kind, ref, "prose"))


def _ref_number(ref: Ref) -> int | None:
    """The ADR number a reference names, if it names one."""
    if ref.kind == "token":
        return tx.number_of(ref.value)
    return tx.href_number(ref.value)[0] if ref.kind == "path" else None


def _declared_class(reading: _Reading, broken: bool) -> tuple[str, str | None, bool]:
    """``(declared class, first declaration as written, implicit)``.

    A MADR record with no status is live by convention (implicit); broken front
    matter makes the whole record unreadable, since its status may be in it.
    """
    cls, declared = _merge(reading.decls, reading.rel_path, reading.warnings)
    implicit = False
    if cls == NO_STATUS and reading.is_madr:
        # MADR makes the status optional; a record without one is in force.
        cls, implicit = LIVE, True
    if broken:
        cls = UNREADABLE
    return cls, declared, implicit


def _prose_ref(m: re.Match[str], rel_dir: str) -> Ref:
    """The reference a prose pattern matched: a bare ADR token or a link."""
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
    if UNRECOGNISED in classes and len(classes) > 1 and TEMPLATE not in classes:
        # A Status section of prose ("While this is marked `accepted`, ...") under a
        # record whose status field says "Implemented": no contradiction, the
        # recognised declaration stands.
        classes.discard(UNRECOGNISED)
        declared = next(v.strip() for v, d in decls if d.cls in classes)
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
    return classes.pop(), declared  # an unrecognised word: warned with its line by _parse


def _dedupe(relations: list[RawRelation]) -> list[RawRelation]:
    """Each relation once (front matter and body often say the same), first kept."""
    seen: set[tuple[str, str, str]] = set()
    out: list[RawRelation] = []
    for r in relations:
        key = (r.type, r.ref.kind, r.ref.value.lower())
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


__all__ = ["Declaration", "classify", "parse_bytes", "parse_file", "parse_text", "unreadable"]
