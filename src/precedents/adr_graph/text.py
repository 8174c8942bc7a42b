"""Low-level Markdown helpers for the ADR parser: front matter, headings, links, ids.

Regular expressions only, no Markdown library: ADRs use a small, well-known
subset, and a cold build of 1,000 records has to fit in 300 ms. What notes and
ADRs share (front matter, fences, dates) is read by :mod:`precedents.text`;
this module adds the ADR graph's own policy on top.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from precedents.adr_graph.model import Ref
from precedents.text import (
    FAST_LOADER,
    fence_marker,
    find_iso_date,
    normalize,
    split_front_matter,
    yaml_day,
)

# A Markdown inline link; the text may hold one level of nested brackets, as in
# elastisys' "[Superseded by [ADR-0019](0019-x.md)]" title prefix. The href stops
# at brackets and parentheses so that "[a]([a]([a](..." fails in linear time.
LINK_PATTERN = (
    r"\[(?P<ltext>(?:[^\[\]]|\[[^\[\]]*\])*)\]"
    r"\(\s*<?(?P<href>[^()\[\]\s>]*)>?(?:\s+[\"'][^()]*[\"'])?\s*\)"
)
LINK_RE = re.compile(LINK_PATTERN)
_ATX_RE = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT_H1_RE = re.compile(r"^\s{0,3}=+\s*$")
_SCHEME_RE = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)
# A date (or timestamp) a file name opens with: log4brains' ``20200924-slug``,
# ``2021-06-05_001-slug`` (Docusaurus), ``2020_03_03_topic`` (Sylius),
# ``20240516132303-slug`` (a MADR tool's timestamp). It is not an ADR number.
_DATE_PREFIX_RE = re.compile(
    r"^(?:19|20)\d\d(?P<sep>[-_]?)(?:0[1-9]|1[0-2])(?P=sep)(?:0[1-9]|[12]\d|3[01])"
    r"(?:[T_-]?\d{4}(?:\d\d)?)??(?=[-_])"
)
# After such a date, a number of its own: ``2021-06-05_001-slug`` is ADR 001.
_NUM_AFTER_DATE_RE = re.compile(r"[-_](\d{1,6})(?=[-_.]|$)")
_NUM_PREFIX_RE = re.compile(r"^(?:adr[-_ ]?)?(\d{1,6})(?=$|[-_. ])", re.I)
_TOKEN_NUM_RE = re.compile(r"^(?:adr)?[-_ #]*0*(\d{1,6})$", re.I)


@dataclass(frozen=True)
class Heading:
    """A Markdown heading outside code fences: its line index, level and text."""

    line: int
    level: int
    text: str


def decode(data: bytes) -> str:
    """UTF-8 (a BOM is dropped) with every line ending turned into ``\\n``.

    Raises UnicodeDecodeError for text that is not UTF-8: the caller degrades
    the record to `unknown` rather than guessing an encoding.
    """
    return normalize(data.decode("utf-8"))


def read_front_matter(text: str) -> tuple[dict[str, Any] | None, str, str | None]:
    """``(front matter, body, error)``; front matter is None when the file has none.

    The ADR graph's reading of :func:`precedents.text.split_front_matter`:
    a bare ``---`` opening line, keys lower-cased (``Status:`` is ``status:``),
    the C loader (speed), the body after a broken block still read (its status
    section may be fine), and errors worded for `adr list`. Re-raises the
    loader's RecursionError (nesting too deep to load): the parser makes the
    whole file an unreadable record.
    """
    if not text.startswith("---\n"):
        # Stricter than notes ("--- " with a trailing blank opens no block here):
        # kept so every record reads exactly as the labelled corpora were checked.
        return None, text, None
    found = split_front_matter(text, loader=FAST_LOADER)
    # Without a closed block the body is the whole text, as written.
    body = found.body if found.raw is None else found.body.lstrip("\n")
    if found.problem == "unclosed":
        return None, body, "front matter is not closed (no second '---' line)"
    if found.problem == "not_a_mapping":
        return None, body, "front matter is not a mapping"
    if found.exception is not None:
        if isinstance(found.exception, RecursionError):
            raise found.exception
        message = str(found.exception)
        first = message.splitlines()[0] if message else "invalid YAML"
        return None, body, f"front matter is not valid YAML ({first})"
    if found.data is None:
        return None, body, None
    return {str(k).lower(): v for k, v in found.data.items()}, body, None


def strip_comments(text: str) -> str:
    """Drop HTML comments (templates park placeholders and lint pragmas in them).

    A plain scan rather than a regex: a lazy ``<!--.*?-->`` is quadratic on
    many unclosed openers. An unclosed comment keeps the rest of the text.
    """
    if "<!--" not in text:
        return text
    out: list[str] = []
    i = 0
    while True:
        j = text.find("<!--", i)
        k = text.find("-->", j + 4) if j >= 0 else -1
        if j < 0 or k < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        i = k + 3


def scan(lines: list[str]) -> tuple[list[Heading], set[int]]:
    """Headings outside code fences, and the indexes of the lines inside fences."""
    headings: list[Heading] = []
    fenced: set[int] = set()
    in_fence = False
    for i, line in enumerate(lines):
        # Only lines opening with one of these can be a heading or a fence; the
        # test keeps a 1,000-record build well inside its time budget.
        if not line or line[0] not in "#`~= ":
            if in_fence:
                fenced.add(i)
            continue
        # Any fence marker toggles, whatever opened the fence: records are simple,
        # and this is what the labelled corpora were checked against.
        if fence_marker(line, max_indent=3):
            in_fence = not in_fence
            fenced.add(i)
            continue
        if in_fence:
            fenced.add(i)
            continue
        m = _ATX_RE.match(line)
        if m:
            headings.append(Heading(i, len(m.group(1)), m.group(2)))
        elif i > 0 and _SETEXT_H1_RE.match(line) and lines[i - 1].strip() and i - 1 not in fenced:
            headings.append(Heading(i - 1, 1, lines[i - 1].strip()))
    return headings, fenced


def file_id(rel_path: str) -> tuple[str | None, int | None]:
    """Id and number from a file's name: ``0005-x.md``, ``ADR-0005-x``, ``adr-5``, ``ADR005-x``.

    log4brains names files ``YYYYMMDD-slug.md``: the date is not a number (two
    records share one), so the id is the slug, prefixed with the package name
    for the ``packages/<name>/`` folders of a monorepo, as log4brains does. The
    same holds for ``YYYY_MM_DD_topic`` and timestamps; a number right after the
    date (``2021-06-05_001-slug``) is the record's number.
    Returns ``(None, None)`` for a name without a number.
    """
    parts = rel_path.split("/")
    stem = parts[-1].rsplit(".", 1)[0]
    date = _DATE_PREFIX_RE.match(stem)
    if date:
        after = _NUM_AFTER_DATE_RE.match(stem, date.end())
        if after:
            return after.group(1), int(after.group(1))
        dirs = parts[:-1]
        if "packages" in dirs:
            i = dirs.index("packages")
            if i + 1 < len(dirs):
                return f"{dirs[i + 1]}/{stem}", None
        return stem, None
    m = _NUM_PREFIX_RE.match(stem)
    if m:
        return m.group(1), int(m.group(1))
    return None, None


def number_of(token: str) -> int | None:
    """The ADR number a reference names: ``ADR-0005``, ``adr0008``, ``#12``, ``5``."""
    m = _TOKEN_NUM_RE.match(token.strip())
    return int(m.group(1)) if m else None


def href_number(value: str) -> tuple[int | None, str | None]:
    """Number and its digits as written from a link's file name (``ADR028-docker-tools.md``)."""
    stem = value.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    date = _DATE_PREFIX_RE.match(stem)
    if date:
        after = _NUM_AFTER_DATE_RE.match(stem, date.end())
        return (int(after.group(1)), after.group(1)) if after else (None, None)
    m = _NUM_PREFIX_RE.match(stem)
    return (int(m.group(1)), m.group(1)) if m else (None, None)


def make_ref(href: str, text: str, rel_dir: str) -> Ref:
    """A link's target normalised against the folder root (``rel_dir`` is the file's folder)."""
    href = href.strip()
    if _SCHEME_RE.match(href) and not re.match(r"^[a-z]:[\\/]", href, re.I):
        return Ref("url", href, text)
    path = unquote(href.split("#", 1)[0].split("?", 1)[0]).replace("\\", "/")
    if not path:
        # A same-page anchor: only its text can say what it means.
        return Ref("token", text.strip(), text)
    # A root-absolute link ("/000-template.md") is read from the folder root:
    # the site generators these folders are written for serve them that way.
    joined = path.lstrip("/") if path.startswith("/") else posixpath.join(rel_dir, path)
    norm = posixpath.normpath(joined)
    if norm == ".." or norm.startswith("../"):
        return Ref("outside", norm, text)
    return Ref("path", norm, text)


def clean_date(value: Any) -> str | None:
    """An ISO date from a front matter value or a ``Date:`` line, else the text (short).

    Lenient: a ``Date:`` line is shown, never computed with, so a date-shaped run
    anywhere in it is kept as written, and anything else is kept cut to 40 chars.
    """
    if value is None:
        return None
    day = yaml_day(value)
    if day is not None:
        return day
    text = str(value).strip()
    return find_iso_date(text) or text[:40] or None
