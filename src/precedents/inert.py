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
  role label (``SYSTEM:`` becomes ``SYSTEM∶``), no code fence, no mark or line
  head of ours (``⚠️superseded →``, ``note (team, …``: issue #28), and a cap on
  its length.
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

import datetime as _dt
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
AUTHOR_CHARS = 32  # a team note's author: part of its line's head, which never shrinks
AUTHOR_WORDS = 3  # a first name, a particle or middle name, a last name
REPO_CHARS = 64  # an org record's repository name: part of its line's head

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
    """``text`` as one line of inert data, at most ``limit`` characters (see the module):
    a record's field, so nothing in it reads as the product's own marks or heads."""
    if _PLAIN.fullmatch(text) and not _TOUCHY.search(text) and not _has_head(text):
        return cut(" ".join(text.split()), limit)  # the common case: nothing to rewrite
    return cut(" ".join(_unforged(_defuse(_visible(text, " "))).split()), limit)


def inert_mark(text: str, limit: int = MARK_CHARS) -> str:
    """One of the product's own marks or labels (``⚠️superseded → ADR-0011``, ``(team,
    …)``) as one inert line: its glyphs kept. Whoever builds a mark renders the record
    text it quotes (a successor's label, a chat's title) with :func:`inert` first."""
    if _PLAIN.fullmatch(text) and not _TOUCHY.search(text):
        return cut(" ".join(text.split()), limit)
    return cut(" ".join(_defuse(_visible(text, " ")).split()), limit)


def inert_path(path: str) -> str:
    """A path as inert data: a control character shows as ``?`` (the path must still
    name its file as nearly as it can), markup and role labels as :func:`inert` does.
    Never cut: a cut path names no file, and the byte cap leaves out a line whose
    path does not fit."""
    if _PLAIN.fullmatch(path) and not _TOUCHY.search(path):
        return path
    return _defuse(_visible(path, "?"))


# ------------------------------------------------------- the product's own words

# A field may not read as the product's marks or line heads (recall/format.py):
# the marks' glyphs become words in brackets, a rightward arrow "-›" (what a typed
# "->" shows as), and a kind word with a label ("note (team, CTO", "(personal, you",
# "adr ADR-0009") loses the head's form. Neutralised, never flagged: "⚠️ Never
# force-push" and "A → B" are common in real rules and ADRs, and stay readable.
_GLYPHS = {"⚠": "warning", "🛆": "warning", "△": "triangle", "▵": "triangle"}
_GLYPHS |= dict.fromkeys("✅✓✔☑🗸", "ok")
_ARROW_BLOCKS = ((0x2190, 0x2200), (0x2794, 0x27C0), (0x27F0, 0x2980), (0x2B00, 0x2C00))


def _marks_table() -> dict[int, str]:
    table = {ord(glyph): f" [{word}] " for glyph, word in _GLYPHS.items()}
    for start, end in (*_ARROW_BLOCKS, (0x1F800, 0x1F900)):
        for code in range(start, end):
            name = unicodedata.name(chr(code), "")
            if "ARROW" in name and "RIGHT" in name and "LEFT" not in name:
                table[code] = " -› "
    return table


_MARKS = _marks_table()
_GLYPH_VS = re.compile(f"([{''.join(_GLYPHS)}])\ufe0f")  # its emoji form: one glyph
# A kind word and a parenthesis, a parenthesised "team"/"personal" label, a kind word
# before an id, a day or a sha, the file hook's "· later changed by": read on the
# text's skeleton (below), so full-width parentheses and look-alike letters match too.
# Our heads are lower case: "ADR 001: Title" and "Note (2024)" are a title and prose.
_HEAD = re.compile(
    r"\b(?-i:note|rule|adr|conversation|commit)\s*(\()|(\()\s*(?:team|personal|org)\b|"
    r"\b(?-i:(adr(?=\s+(?i:adr-?)?\d)|conversation(?=\s+\d{4}-\d\d-\d\d)|"
    r"commit(?=\s+(?=[a-f]*\d)[0-9a-f]{7,40}\b)))|(·)\s*later\s+changed\b",
    re.IGNORECASE,
)
_CLOSE = re.compile(r"[()（）﹙﹚⁽⁾₍₎]")
# Cyrillic, Greek and Armenian letters drawn like the Latin ones of the heads.
_LOOKALIKE = str.maketrans(
    "аАвВсСеЕіІјЈкКмМнНоОрРѕЅтТхХуԁпոսօαΑβΒεΕιΙκΚμΜνΝοΟρΡτΤυΥχΧ",
    "aAbBcCeEiIjJkKmMhHoOpPsStTxXydnnuoaAbBeEiIkKmMvNoOpPtTuYxX",
)


_HEAD_WORDS = ("note", "rule", "adr", "conversation", "commit", "team", "personal", "org", "·")


# The skeleton in one C pass, to tell whether the slow one (with positions) is needed.
def _fold_table() -> dict[int, str | None]:
    """Mathematical, small, full-width and super/subscript forms as NFKC folds them,
    look-alike letters Latin, the common combining marks dropped."""
    table: dict[int, str | None] = {}
    for start, end in ((0x1D400, 0x1D800), (0xFE50, 0xFF5F), (0x2070, 0x20A0)):
        table.update({c: unicodedata.normalize("NFKC", chr(c)) for c in range(start, end)})
    table.update(dict.fromkeys((*range(0x300, 0x370), *range(0x20D0, 0x2100))))
    table.update({k: chr(v) for k, v in _LOOKALIKE.items()})
    return table


_FOLD = _fold_table()


def _has_head(text: str) -> bool:
    """Whether ``text`` (a skeleton, or ASCII) holds one of our heads."""
    lower = text.lower()
    return any(w in lower for w in _HEAD_WORDS) and _HEAD.search(text) is not None


def _skeleton(text: str) -> tuple[str, list[int]]:
    """``text`` as its heads would be read (compatibility forms folded, look-alike letters
    Latin, combining marks dropped), and where each character of it came from."""
    chars: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        if not ch.isascii():
            if unicodedata.category(ch) in ("Mn", "Me"):
                continue
            ch = unicodedata.normalize("NFKC", ch).translate(_LOOKALIKE)
        chars.append(ch)
        where.extend([i] * len(ch))
    return "".join(chars), where


def _unforged(text: str) -> str:
    """``text`` with no mark glyph, no rightward arrow and no head of ours left in it."""
    if text.isascii():
        if not _has_head(text):
            return text
        skeleton, where = text, list(range(len(text)))
    else:
        text = _GLYPH_VS.sub(r"\1", text).translate(_MARKS)
        if not _has_head(text.translate(_FOLD)):
            return text
        skeleton, where = _skeleton(text)
    edits: dict[int, str] = {}
    for m in _HEAD.finditer(skeleton):
        if m.group(3):  # `"adr" ADR-0009`: a word quoted is no head
            first, last = where[m.start(3)], where[m.end(3) - 1]
            edits[first], edits[last] = '"' + text[first], edits.get(last, text[last]) + '"'
        elif m.group(4):
            edits[where[m.start(4)]] = "-"
        else:  # `note [team, CTO]`: the label in brackets, which the product never writes
            at = where[m.start(1) if m.group(1) else m.start(2)]
            edits[at] = "["
            close = _CLOSE.search(text, at + 1, at + 200)
            if close and text[close.start()] in ")）﹚⁾₎":
                edits[close.start()] = "]"
    return "".join(edits.get(i, ch) for i, ch in enumerate(text)) if edits else text


def name_key(name: str) -> str:
    """``name`` as two names are compared (case, spacing and look-alike letters aside)."""
    return " ".join(_skeleton(inert(name, 4 * AUTHOR_CHARS))[0].casefold().split())


# Authors that claim to be the reader: shown like the local user's own name.
_YOU = frozenset({"you", "yourself", "me", "myself", "user", "the user", "local user"})
AUTHOR_WITHHELD = "author withheld"
AUTHOR_UNVERIFIED = "unverified"


def _name_like(name: str) -> bool:
    """One to :data:`AUTHOR_WORDS` words of letters (digits, ``.-'’_`` inside), in
    :data:`AUTHOR_CHARS`: a name, and room for nothing else."""
    words = name.split(" ")
    if len(name) > AUTHOR_CHARS or not 1 <= len(words) <= AUTHOR_WORDS:
        return False
    return all(
        w[:1].isalpha()
        and all(c.isalnum() or c in ".-'’_" or unicodedata.category(c)[0] == "M" for c in w)
        for w in words
    )


def shown_author(author: str, *, you: bool = False) -> str:
    """A team note's author as every channel shows it: the name, inert; ``author
    withheld`` for anything but a short name (a head, a mark, a sentence); quoted and
    ``unverified`` when it is the local user's (``you``: the caller compared it, see
    ingest/team.py ``is_local_user``) or claims the reader: front matter proves nothing."""
    if not author.strip():
        return ""
    name = inert(author, 4 * AUTHOR_CHARS)
    if not _name_like(name):
        return AUTHOR_WITHHELD
    if you or name_key(name) in _YOU:
        return f'"{name}" {AUTHOR_UNVERIFIED}'
    return name


FUTURE_SLACK_DAYS = 1  # a record dated tomorrow is a time zone away, not the future


def is_future(day: str, today: _dt.date | None = None) -> bool:
    """Whether ``day`` (``YYYY-MM-DD…``) is after tomorrow: no record is written in the
    future, and a date in 2099 would sort a note first for ever."""
    if len(day) < DATE_CHARS or not day[:4].isdigit():
        return False
    limit = (today or _dt.date.today()) + _dt.timedelta(days=FUTURE_SLACK_DAYS)
    return day[:DATE_CHARS] > limit.isoformat()


def shown_day(value: str) -> str:
    """A record's day as shown: inert, ``YYYY-MM-DD`` at most, '' when in the future."""
    day = inert(value, ID_CHARS)[:DATE_CHARS]
    return "" if is_future(day) else day


def team_label(author: str = "", date: str = "", *, you: bool = False) -> str:
    """A team note's mark, the same in every channel: ``(team, author, date)`` with
    :func:`shown_author` and :func:`shown_day`; ``(team)`` alone for a suspect note
    (its words are withheld)."""
    return team_head(shown_author(author, you=you), shown_day(date))


def team_head(author: str, day: str) -> str:
    """``(team, author, day)`` from parts already shown (a `query --json` row's)."""
    parts = [inert_mark(p, MARK_CHARS) for p in (author, day) if p]
    return f"({', '.join(['team', *parts])})"


# A repository name as an org record's mark shows it: letters, digits and ``._-/``
# (what a forge allows in owner/name), anything else one ``-``.
_NOT_REPO = re.compile(r"[^\w.\-/]+")
_DASHES = re.compile(r"-{2,}")


def shown_repo(repo: str) -> str:
    """An org record's repository name as every channel shows it: no space, parenthesis,
    comma, glyph or arrow (it cannot close its label or forge a mark), at most
    :data:`REPO_CHARS` characters; ``repository withheld`` when nothing is left."""
    name = _DASHES.sub("-", _NOT_REPO.sub("-", inert(repo, 4 * REPO_CHARS))).strip("-")
    return cut(name, REPO_CHARS) or "repository withheld"


def org_label(repo: str) -> str:
    """An org record's mark, the same in every channel: ``(org, repository)``."""
    return f"(org, {shown_repo(repo)})"


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
