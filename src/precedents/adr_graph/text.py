"""Low-level Markdown helpers for the ADR parser: front matter, headings, links, ids.

Regular expressions only, no Markdown library: ADRs use a small, well-known
subset, and a cold build of 1,000 records has to fit in 300 ms.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import yaml

from precedents.adr_graph.model import Ref

try:  # the C loader is ~10x faster; PyYAML without libyaml still works
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.SafeLoader

# A Markdown inline link; the text may hold one level of nested brackets, as in
# elastisys' "[Superseded by [ADR-0019](0019-x.md)]" title prefix. The href stops
# at brackets and parentheses so that "[a]([a]([a](..." fails in linear time.
LINK_PATTERN = (
    r"\[(?P<ltext>(?:[^\[\]]|\[[^\[\]]*\])*)\]"
    r"\(\s*<?(?P<href>[^()\[\]\s>]*)>?(?:\s+[\"'][^()]*[\"'])?\s*\)"
)
LINK_RE = re.compile(LINK_PATTERN)
_FENCE_RE = re.compile(r"^\s{0,3}(```|~~~)")
_ATX_RE = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT_H1_RE = re.compile(r"^\s{0,3}=+\s*$")
_SCHEME_RE = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)
_DATE_PREFIX_RE = re.compile(r"^(?:19|20)\d\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])(?=[-_])")
_NUM_PREFIX_RE = re.compile(r"^(?:adr[-_ ]?)?(\d{1,6})(?=$|[-_. ])", re.I)
_TOKEN_NUM_RE = re.compile(r"^(?:adr)?[-_ #]*0*(\d{1,6})$", re.I)
_ISO_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")


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
    text = data.decode("utf-8-sig")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def split_front_matter(text: str) -> tuple[dict[str, Any] | None, str, str | None]:
    """``(front matter, body, error)``; front matter is None when the file has none."""
    if not text.startswith("---\n"):
        return None, text, None
    end = re.search(r"^(?:---|\.\.\.)\s*$", text[4:], re.M)
    if end is None:
        return None, text, "front matter is not closed (no second '---' line)"
    raw = text[4 : 4 + end.start()]
    body = text[4 + end.end() :].lstrip("\n")
    try:
        data = yaml.load(raw, Loader=_Loader)  # a safe loader (C or pure)
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "invalid YAML"
        return None, body, f"front matter is not valid YAML ({first})"
    if data is None:
        return {}, body, None
    if not isinstance(data, dict):
        return None, body, "front matter is not a mapping"
    return {str(k).lower(): v for k, v in data.items()}, body, None


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
        if _FENCE_RE.match(line):
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
    for the ``packages/<name>/`` folders of a monorepo, as log4brains does.
    Returns ``(None, None)`` for a name without a number.
    """
    parts = rel_path.split("/")
    stem = parts[-1].rsplit(".", 1)[0]
    if _DATE_PREFIX_RE.match(stem):
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
    if _DATE_PREFIX_RE.match(stem):
        return None, None
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
    """An ISO date from a front matter value or a ``Date:`` line, else the text (short)."""
    if value is None:
        return None
    if hasattr(value, "isoformat"):
        return str(value.isoformat())[:10]
    text = str(value).strip()
    m = _ISO_DATE_RE.search(text)
    if m:
        return m.group(0)
    return text[:40] or None
