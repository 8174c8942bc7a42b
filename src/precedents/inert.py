"""Stored text is data: record fields rendered inert, and records that read as orders.

Every field that comes from a record (a note's name and description, a rule's,
an ADR's id and title, a conversation's title, a path) reaches the agent inside
our own framing: the hook's header and one line per record (SPEC §2, §5), or a
JSON value (`query --json`, MCP `recall`). Two things keep a record's text from
escaping that framing (docs/daemon.md, "Stored text is data"):

* :func:`inert` makes a field one line of plain text: no newline or control
  character (so a field cannot start a line of its own), no invisible or bidi
  character, no ``<`` or ``>`` (so it cannot open or close a tag such as
  ``</system-reminder>``: they become ``‹`` ``›``), no chat-template token, no
  role label (``SYSTEM:`` becomes ``SYSTEM∶``), no code fence, and a cap on its
  length.
* :func:`suspect_reason` says when a record's text reads as orders to the agent
  rather than as guidance: overriding or escaping the framing ("ignore previous
  instructions", a ``</system>`` tag, "you are now ..."), leaking the prompt,
  sending data out, or running something fetched from the network
  (``curl … | sh``). Rules *are* instructions to the agent by design ("Always
  use pnpm"), so ordinary imperatives are never enough: only these patterns.
  A suspect record is shown as its path with :data:`SUSPECT_MARK`, never its text.

Pure functions over strings, standard library only: the daemon runs them for
every record it shows (about 17 µs a field or a record, measured: a pattern
runs only when its anchor words are in the text, and most text has none).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

SUSPECT_MARK = "⚠️suspect"
ELLIPSIS = "…"

# Caps in characters. A name never shrinks to fit the byte cap (it is the line's
# head), so it gets the tightest cap; a description or title shrinks to fit anyway.
NAME_CHARS = 160
TEXT_CHARS = 500
ID_CHARS = 40
DATE_CHARS = 10
MARK_CHARS = 160
AUTHOR_CHARS = 40  # a team note's author: part of its line's head, which never shrinks

# `<` and `>` and their full-width and small forms (a model may read those as the
# same tag); they become single guillemets, which no markup language uses.
_ANGLES = str.maketrans({"<": "‹", ">": "›", "＜": "‹", "＞": "›", "﹤": "‹", "﹥": "›"})
# Full-width Latin letters read as their ASCII selves ("ＳＹＳＴＥＭ："): folded, so the
# role labels below are found in them too. Other full-width forms (CJK punctuation) stay.
_WIDE_LETTERS = str.maketrans(
    {c: c - 0xFEE0 for c in [*range(0xFF21, 0xFF3B), *range(0xFF41, 0xFF5B)]}
)
# The colon after a role label ("Human:", "SYSTEM:", "System Notice:") becomes U+2236
# RATIO: it no longer reads as a turn of a chat transcript, and the words stay readable.
_RATIO = "∶"
_ROLE = re.compile(
    r"\b(system|assistant|user|human|developer|ai|bot|model|tool|function|instructions?|"
    r"response)(\s+[A-Za-z]+)?(\s*)[:：﹕]",
    re.IGNORECASE,
)
# Chat-template tokens that do not use angle brackets.
_TEMPLATE = re.compile(r"\[\s*/?\s*(INST|SYS|SYSTEM)\s*\]", re.IGNORECASE)
_FENCE = re.compile(r"`{3,}|~{3,}")
# What the fast path must not see: anything but printable ASCII, and the few
# ASCII sequences the slow path rewrites.
_PLAIN = re.compile(r"[\x20-\x7e]*")
_TOUCHY = re.compile(r"[<>:\[`~]")


def _dropped(ch: str) -> bool:
    """Characters a reader cannot see, or that reorder what is seen: format (Cf: bidi
    controls, zero-width characters, Unicode tag characters), private use, surrogates,
    unassigned, and variation selectors other than U+FE0F (emoji presentation)."""
    cat = unicodedata.category(ch)
    if cat in ("Cf", "Co", "Cs", "Cn"):
        return True
    code = ord(ch)
    return 0xFE00 <= code <= 0xFE0E or 0xE0100 <= code <= 0xE01EF


def _visible(text: str, control: str) -> str:
    """``text`` with line and paragraph breaks and other controls made ``control``
    (a space in prose, ``?`` in a path) and invisible characters dropped."""
    out = []
    for ch in text:
        if ch.isascii():
            out.append(control if ch < " " or ch == "\x7f" else ch)
            continue
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Zl", "Zp"):
            out.append(control)
        elif not _dropped(ch):
            out.append(ch)
    return "".join(out)


def _defuse(text: str) -> str:
    """No tag, template token, role label or code fence left in ``text``."""
    text = text.translate(_ANGLES).translate(_WIDE_LETTERS)
    text = _TEMPLATE.sub(lambda m: f"({m.group(1)})", text)
    text = _ROLE.sub(lambda m: m.group(1) + (m.group(2) or "") + m.group(3) + _RATIO, text)
    return _FENCE.sub("`", text)


def cut(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, ``…`` marking a cut."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ""
    return text[: limit - 1].rstrip() + ELLIPSIS


def inert(text: str, limit: int = TEXT_CHARS) -> str:
    """``text`` as one line of inert data, at most ``limit`` characters (see the module)."""
    if _PLAIN.fullmatch(text) and not _TOUCHY.search(text):
        return cut(" ".join(text.split()), limit)  # the common case: nothing to rewrite
    return cut(" ".join(_defuse(_visible(text, " ")).split()), limit)


def inert_path(path: str) -> str:
    """A path as inert data: a control character shows as ``?`` (the path must still
    name its file as nearly as it can), markup and role labels as :func:`inert` does.
    Never cut: a cut path names no file, and the byte cap leaves out a line whose
    path does not fit."""
    if _PLAIN.fullmatch(path) and not _TOUCHY.search(path):
        return path
    return _defuse(_visible(path, "?"))


def team_label(author: str = "", date: str = "") -> str:
    """A team note's mark, the same in every channel: ``(team, author, date)``, each
    part inert and capped; ``(team)`` alone for a suspect note (its words are withheld)."""
    parts = [p for p in (inert(author, AUTHOR_CHARS), inert(date, ID_CHARS)[:DATE_CHARS]) if p]
    return f"({', '.join(['team', *parts])})"


# ----------------------------------------------------------------------- suspects

# The check lives in precedents.suspect (its patterns, the Unicode tables, the corpus it
# was grown from outgrew this module); every reader imports it from here.
from precedents.suspect import suspect_reason as suspect_reason  # noqa: E402


def decided_label(stamp: str) -> str:
    """Where a conversation's decision passage was said, for people: ``exchange 3,
    2026-04-12`` from the stored ``2026-04-12#3`` (store/rows.py ``decided``)."""
    day, _, rest = stamp.partition("#")
    number = rest.partition("#")[0]
    label = f"exchange {inert(number, ID_CHARS)}" if number else "exchange ?"
    return f"{label}, {inert(day, ID_CHARS)[:DATE_CHARS]}" if day else label


def path_words(path: str) -> str:
    """A path's file name as words (``ignore-previous-instructions.md`` reads as orders too)."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return re.sub(r"[-_.+]+", " ", name)


def suspect_summary(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``status``'s account of the suspect records among document ``rows`` (dicts with
    kind, path, name, description, adr_id: one per document): how many, and which."""
    found: dict[str, dict[str, str]] = {}
    for row in rows:
        path = str(row.get("path") or "")
        if not path or path in found:
            continue
        name, description = str(row.get("name") or ""), str(row.get("description") or "")
        author = str(row.get("author") or "")  # a team note's (ingest/team.py)
        reason = suspect_reason(
            name, description, str(row.get("adr_id") or ""), author, path_words(path)
        )
        if reason:
            found[path] = {"path": inert_path(path), "kind": str(row.get("kind")), "reason": reason}
    records = [found[p] for p in sorted(found)]
    return {"count": len(records), "records": records}
