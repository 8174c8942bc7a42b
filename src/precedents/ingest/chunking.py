"""Turn notes, rules and ADRs into chunks; turn parsed conversations into chunks.

Pure logic: standard library and PyYAML only (through :mod:`precedents.text`,
which reads front matter, fences and dates for the ADR graph too), no model, no store.

Chunk rule for documents (SPEC §2), made exact here:

* ``head`` is ``name``, ``description`` and ``body`` joined with ``"\\n"``, leaving out
  the empty ones (so an empty description does not leave a blank line).
* Chunk 0 is ``head[:CHUNK_CHARS]``.
* "The rest of the body" is the body text that chunk 0 did not cover: chunk 0 covers
  ``covered = max(0, CHUNK_CHARS - offset_of_body_in_head)`` characters of the body.
  The rest is cut into pieces of exactly ``CHUNK_CHARS`` characters whose starts are
  ``CHUNK_CHARS - CHUNK_OVERLAP`` apart. The first piece starts ``CHUNK_OVERLAP``
  characters before the end of what chunk 0 covered (clamped to the start of the
  body), so the boundary between chunk 0 and chunk 1 overlaps like every other
  boundary: a sentence cut there is whole in one of the two.
* Each piece is stored as ``name + "\\n" + piece``; the 700 counts the piece only.
* Pieces stop at the first one that reaches the end of the body, so the last piece
  always holds at least one character that no earlier piece had.
* At most ``MAX_CHUNKS`` chunks (chunk 0 plus five pieces); body text past that is
  not indexed (a document scores by its best chunk, and its start says what it is).
* Cuts are exact character offsets, not word boundaries: the rule stays exactly
  testable, and embedding models do not care about a split word at the edge.

Conversation parsing lives in :mod:`precedents.ingest.conversations` (re-exported here);
:func:`conversation_chunks` is here because it is chunking.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precedents.ingest.conversations import Conversation, Exchange, parse_conversation
from precedents.text import (
    FAST_LOADER,
    iso_date,
    normalize,
    one_line,
    split_front_matter,
    unfenced,
)

__all__ = [
    "CHUNK_CHARS",
    "CHUNK_OVERLAP",
    "DERIVED_DESCRIPTION_CHARS",
    "MAX_CHUNKS",
    "MAX_CONVERSATION_CHUNKS",
    "Conversation",
    "Exchange",
    "NoteMeta",
    "chunk_document",
    "conversation_chunks",
    "is_memory_index",
    "parse_conversation",
    "parse_note",
    "split_pieces",
]

CHUNK_CHARS = 700
CHUNK_OVERLAP = 100
MAX_CHUNKS = 6
# Per conversation, across all its exchanges (see conversation_chunks for why the
# newest are kept).
MAX_CONVERSATION_CHUNKS = 200
# A description derived from the first paragraph is cut here: an unbounded first
# paragraph would fill chunk 0 twice over (it is in the body too) and bloat every
# line the agent is shown. Front matter descriptions are the author's and stay whole.
DERIVED_DESCRIPTION_CHARS = 300

_STEP = CHUNK_CHARS - CHUNK_OVERLAP


@dataclass(frozen=True)
class NoteMeta:
    """What :func:`parse_note` found in one note, rule or ADR file."""

    name: str
    description: str
    body: str
    date: str
    warnings: tuple[str, ...]
    # The front matter as read (empty when there is none or it is broken): a
    # rule's scope keys (`globs`, `paths`, `applyTo`...) are read from it.
    front: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- notes


def is_memory_index(path: Path) -> bool:
    """Tell whether ``path`` is Claude Code's ``MEMORY.md`` index rather than a note.

    Compared without case: on macOS and Windows ``memory.md`` is the same file.
    """
    return path.name.lower() == "memory.md"


def _split_front_matter(text: str) -> tuple[dict[str, Any] | None, str, list[str]]:
    """Return (front matter mapping or None, body, warnings).

    Any problem with the front matter gives a warning and the whole text as body,
    so nothing the author wrote is lost.
    """
    # Lenient: notes and rules are read as Cursor reads `.mdc` front matter. LibYAML's
    # parser (capped like the other): a third of a note's reading time with the pure
    # Python one (issue #28: 5,000 notes in one pull).
    found = split_front_matter(text, loader=FAST_LOADER, lenient=True)
    if found.error is not None:
        return None, text, [f"broken front matter: {found.error}"]
    return found.data, found.body, []


def _field(meta: dict[str, Any], key: str, warnings: list[str]) -> str:
    """A text field from the front matter, falling back to ``metadata:`` nesting."""
    for source in (meta, meta.get("metadata")):
        if not isinstance(source, dict) or source.get(key) is None:
            continue
        value = source[key]
        if isinstance(value, (dict, list)):
            warnings.append(f"front matter {key!r} is not text; ignored")
            continue
        text = one_line(str(value))
        if text:
            return text
    return ""


def _date_field(meta: dict[str, Any], warnings: list[str]) -> str:
    """The first of ``date``, ``created``, ``updated`` (top level, then ``metadata:``).

    A value that is no calendar day is a warning, not a date: a wrong date would
    sort the note wrongly with no sign of why.
    """
    for key in ("date", "created", "updated"):
        for source in (meta, meta.get("metadata")):
            if not isinstance(source, dict) or source.get(key) is None:
                continue
            value = source[key]
            day = iso_date(value)
            if day is not None:
                return day
            warnings.append(f"front matter {key!r} is not a YYYY-MM-DD date: {str(value)[:40]!r}")
    return ""


_HEADING = re.compile(r"#\s+(.*?)(?:\s+#+)?\s*$")
_RULE = re.compile(r"(?:[-*_][ \t]*){3,}$")


def _heading_and_paragraph(body: str) -> tuple[str, str]:
    """First ``# heading`` and the first plain paragraph after it (or after the start).

    Lines inside code fences never count: a ``# comment`` in a shell snippet is not a
    title. Other headings, HTML comments and horizontal rules are not paragraphs.
    """
    lines = body.split("\n")
    # Without a heading the description is the body's first paragraph; with one, the
    # first paragraph after it. Two passes keep that rule simple to read.
    heading, heading_at = _first_heading(lines)
    description = one_line(" ".join(_first_paragraph(lines[heading_at + 1 :])))
    if len(description) > DERIVED_DESCRIPTION_CHARS:
        description = description[: DERIVED_DESCRIPTION_CHARS - 1].rstrip() + "…"
    return heading, description


def _first_heading(lines: list[str]) -> tuple[str, int]:
    """The first level-1 heading outside code fences, one line, and its index; ``("", -1)``."""
    for i, stripped, opens_fence in unfenced(lines):
        if opens_fence:
            continue
        found = _HEADING.fullmatch(stripped)
        if found and found.group(1):
            return one_line(found.group(1)), i
    return "", -1


def _first_paragraph(lines: list[str]) -> list[str]:
    """The stripped lines of the first plain paragraph: up to a blank line or a non-paragraph.

    A heading, an HTML comment, a horizontal rule or a code fence ends the paragraph
    (or is skipped before it starts): none of them reads as a description.
    """
    paragraph: list[str] = []
    for _, stripped, opens_fence in unfenced(lines):
        if not stripped:
            if paragraph:
                break
            continue
        if opens_fence or stripped.startswith(("#", "<!--")) or _RULE.match(stripped):
            if paragraph:
                break
            continue
        paragraph.append(stripped)
    return paragraph


_ADR_SECTION = re.compile(
    r"#{2,6}\s+(?:\d+\.\s*)?(decision outcome|decision|context(?: and problem statement)?)\s*:?",
    re.IGNORECASE,
)


def adr_summary(body: str) -> str:
    """The first paragraph of an ADR's Decision section (else its Context), one line.

    An ADR's first paragraph is usually ``Date: ...`` or its status, which says
    nothing to a reader scanning headlines; the decision does.
    """
    lines = body.split("\n")
    found: dict[str, int] = {}
    for i, line in enumerate(lines):
        match = _ADR_SECTION.fullmatch(line.strip())
        if match:
            found.setdefault(match.group(1).split()[0].lower(), i)
    for key in ("decision", "context"):
        if key in found:
            return _heading_and_paragraph("\n".join(lines[found[key] + 1 :]))[1]
    return ""


def parse_note(text: str, stem: str) -> NoteMeta:
    """Read name, description, body and date of a note, rule or ADR. Never raises.

    Name: front matter ``name:`` (top level, then under ``metadata:``), else the first
    ``# heading``, else ``stem``. Description: front matter ``description:`` (same
    places), else the first paragraph after that heading (after the start when there
    is no heading) as one line, cut to ``DERIVED_DESCRIPTION_CHARS``, else ``""``.
    Date: front matter ``date:``, ``created:`` or ``updated:`` (first present) as
    ``YYYY-MM-DD``, else ``""``. Body: the text without front matter, stripped.
    Broken front matter (unterminated, invalid YAML, not a mapping) is a warning, and
    the whole text is then the body.
    """
    meta, body, warnings = _split_front_matter(normalize(text))
    body = body.strip()
    name = description = date = ""
    if meta:
        name = _field(meta, "name", warnings)
        description = _field(meta, "description", warnings)
        date = _date_field(meta, warnings)
    if not name or not description:
        heading, paragraph = _heading_and_paragraph(body)
        name = name or heading
        description = description or paragraph
    return NoteMeta(
        name=name or stem,
        description=description,
        body=body,
        date=date,
        warnings=tuple(warnings),
        front=meta or {},
    )


# ------------------------------------------------------------------------ chunking


def split_pieces(text: str, start: int = 0) -> list[str]:
    """Cut ``text[start:]`` into ``CHUNK_CHARS`` pieces whose starts are 600 apart.

    The last piece is the first that reaches the end of the text, so it always adds
    at least one character no earlier piece had. Empty input gives no pieces.
    """
    pieces: list[str] = []
    position = max(0, start)
    while position < len(text):
        pieces.append(text[position : position + CHUNK_CHARS])
        if position + CHUNK_CHARS >= len(text):
            break
        position += _STEP
    return pieces


def _prefixed(prefix: str, piece: str) -> str:
    return f"{prefix}\n{piece}" if prefix else piece


def chunk_document(name: str, description: str, body: str) -> list[str]:
    """Chunks of a note, rule or ADR by the 700/100/6 rule in the module docstring.

    Returns ``[]`` only when name, description and body are all empty.
    """
    parts = [p for p in (name, description) if p]
    body_offset = sum(len(p) + 1 for p in parts)  # each part is followed by "\n"
    head = "\n".join([*parts, body] if body else parts)
    if not head:
        return []
    chunks = [head[:CHUNK_CHARS]]
    covered = max(0, CHUNK_CHARS - body_offset)
    if covered < len(body):
        rest = split_pieces(body, covered - CHUNK_OVERLAP)
        chunks.extend(_prefixed(name, piece) for piece in rest[: MAX_CHUNKS - 1])
    return chunks


def conversation_chunks(conv: Conversation, decided: int = 0) -> list[str]:
    """Chunks of a conversation: each exchange as ``prompt\\n\\nanswer`` in pieces,
    after a first chunk that is the deciding exchange's first piece when the
    conversation has a decision passage in exchange ``decided`` (1-based,
    :mod:`precedents.ingest.decisions`): its vector is what amendments across chats
    are found by (:mod:`precedents.recall.amendments`), and it stays even when the
    exchange is older than the newest ``MAX_CONVERSATION_CHUNKS``.

    An exchange's first piece has no prefix (it starts with the prompt, which says
    what it is about); later pieces are prefixed with the title and a newline. At most
    ``MAX_CONVERSATION_CHUNKS`` in all, keeping the newest exchanges: the log only ever
    grows at the end, later turns hold the decisions the session arrived at (early
    ones are often exploration the session moved past), and the title still names
    what the whole session was about. If the oldest kept exchange does not fit whole,
    its leading pieces (the prompt first) are kept. Chunks come back oldest first.
    """
    per_exchange: list[list[str]] = []
    room = MAX_CONVERSATION_CHUNKS
    for exchange in reversed(conv.exchanges):
        if room <= 0:
            break
        pieces = split_pieces(_exchange_text(exchange))[:room]
        chunks = pieces[:1] + [_prefixed(conv.title, piece) for piece in pieces[1:]]
        per_exchange.append(chunks)
        room -= len(chunks)
    head: list[str] = []
    if 0 < decided <= len(conv.exchanges):
        head = split_pieces(_exchange_text(conv.exchanges[decided - 1]))[:1]
    return head + [chunk for chunks in reversed(per_exchange) for chunk in chunks]


def _exchange_text(exchange: Exchange) -> str:
    text = exchange.prompt
    if exchange.answer:
        text = f"{text}\n\n{exchange.answer}" if text else exchange.answer
    return text
