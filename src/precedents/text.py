"""Text helpers shared by every layer that reads text: Markdown and index terms.

Standard library and PyYAML only, below ``ingest/``, ``adr_graph/``, ``check/``
and ``store/``, so none of them imports another for its reading of text (the ADR
graph no ingest code, ``check`` no store code: tests/test_layout.py). Two parts,
one module (together well under 500 lines, so not worth a package):

* Markdown: note chunking, the ADR graph and ``check`` all read Markdown files
  with YAML front matter, and must agree on what front matter, a code fence and
  a date are. Each caller keeps its own policy on top (which loader, what a
  warning says, what the body is when the front matter is broken); the reading
  itself happens here, once.
* Words: the tokenizer of the BM25 word index (:mod:`precedents.store.lexical`),
  which ``check`` also uses to find near-duplicate team notes without numpy.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml

__all__ = [
    "FAST_LOADER",
    "ISO_DATE",
    "MAX_FRONT_MATTER_CHARS",
    "MAX_FRONT_MATTER_DEPTH",
    "MAX_FRONT_MATTER_VALUES",
    "SAFE_LOADER",
    "STOP_WORDS",
    "FrontMatter",
    "UnsafeFrontMatter",
    "fence_marker",
    "find_iso_date",
    "iso_date",
    "normalize",
    "one_line",
    "plain_pairs",
    "split_front_matter",
    "stem",
    "tokens",
    "unfenced",
    "yaml_day",
]

# ----------------------------------------------------------------- front matter

# Front matter comes from repositories the user does not control (issue #28),
# so what a block may hold is capped before any value is used. An alias (`*a`)
# is refused outright: eight nested ones make a 400-byte block a 43-million-item
# list for whoever walks it (`str(value)`), and no rule, note or ADR format needs
# one. The other caps are 10-25x what the 597 real rule files and 425 real ADRs
# of tests/fixtures hold (at most 625 characters, 15 values, 3 levels), and low
# enough that 1,000 ADRs at the caps still build in seconds (docs/rules.md).
MAX_FRONT_MATTER_CHARS = 16 * 1024
MAX_FRONT_MATTER_VALUES = 256  # YAML nodes: each key, each value, each list item
MAX_FRONT_MATTER_DEPTH = 32


class UnsafeFrontMatter(yaml.MarkedYAMLError):
    """Front matter refused before any value is used: an alias, too many values, too deep.

    A YAML error, so every reader reports it as the block's ``invalid_yaml``
    problem and keeps the body; never read as Cursor's plain pairs instead.
    """


class _Capped:
    """A safe loader that checks the composed node graph before building any value.

    Composition shares an aliased node instead of copying it, so the check costs
    one visit per distinct node whatever an alias would expand to; a node met
    twice is an alias. The same mixin serves the pure and the C loader: the C one
    composes in C, where no Python hook can see an alias event.
    """

    def get_single_node(self) -> Any:
        node = super().get_single_node()  # type: ignore[misc]
        if node is not None:
            _check_nodes(node)
        return node


def _check_nodes(root: yaml.Node) -> None:
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            raise UnsafeFrontMatter(
                problem="an anchor read again by an alias (`&name` ... `*name`), "
                "which front matter may not use",
                problem_mark=node.start_mark,
            )
        seen.add(id(node))
        if len(seen) > MAX_FRONT_MATTER_VALUES:
            raise UnsafeFrontMatter(
                problem=f"more than {MAX_FRONT_MATTER_VALUES:,} values",
                problem_mark=node.start_mark,
            )
        if depth > MAX_FRONT_MATTER_DEPTH:
            raise UnsafeFrontMatter(
                problem=f"nested more than {MAX_FRONT_MATTER_DEPTH} levels deep",
                problem_mark=node.start_mark,
            )
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend((part, depth + 1) for pair in node.value for part in pair)


class _SafeCapped(_Capped, yaml.SafeLoader):
    pass


# Both are safe loaders (no arbitrary objects), both capped as above. The C one
# is ~10x faster and is what the ADR graph uses to build 1,000 records inside
# its time budget; notes keep the pure one, whose error messages their warnings
# quote.
SAFE_LOADER: Any = _SafeCapped
try:

    class _FastCapped(_Capped, yaml.CSafeLoader):
        pass

    FAST_LOADER: Any = _FastCapped
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    FAST_LOADER = _SafeCapped

# Front matter is a block that opens on the very first line with "---" and
# closes at the next "---" (or YAML's "...") line; trailing blanks are allowed
# on both, as Jekyll allows them.
_OPEN = re.compile(r"---[ \t]*\n")
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)

Problem = Literal["unclosed", "invalid_yaml", "not_a_mapping"]


@dataclass(frozen=True)
class FrontMatter:
    """What :func:`split_front_matter` found at the top of a text.

    ``data`` is the mapping (``{}`` for an empty block), or None when there is no
    block or the block is broken. ``body`` is the text after the closing line,
    or the whole text when there is no closed block. ``raw`` is the YAML between
    the two lines (None when there is no closed block). A broken block has a
    ``problem`` kind, a one-line ``error`` that says what is wrong (line numbers
    count from the top of the file), and the ``exception`` the loader raised.
    """

    data: dict[str, Any] | None
    body: str
    raw: str | None = None
    problem: Problem | None = None
    error: str | None = None
    exception: Exception | None = field(default=None, compare=False)


def normalize(text: str) -> str:
    """Drop a leading BOM and turn every line ending into ``\\n``.

    A BOM would hide the opening ``---`` of front matter; CR or CRLF would leave
    ``\\r`` in every YAML value and heading. Every function here expects this form.
    """
    text = text.removeprefix("\ufeff")
    if "\r" in text:  # the common case (LF files) skips two full copies
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) made one space, trimmed.

    Names, descriptions and titles are shown on one line; a YAML folded value or
    a wrapped paragraph must not break it.
    """
    return " ".join(text.split())


def split_front_matter(
    text: str, *, loader: Any = SAFE_LOADER, lenient: bool = False
) -> FrontMatter:
    """Split ``text`` (see :func:`normalize`) into its YAML front matter and body. Never raises.

    Anything wrong with the block (no closing line, invalid YAML, deep nesting,
    YAML that is not a mapping) comes back as a ``problem``, never as an
    exception: one bad file must not stop a folder from being indexed.
    ``loader`` is a PyYAML safe loader class (:data:`SAFE_LOADER`,
    :data:`FAST_LOADER`). With ``lenient``, a block that is not valid YAML but
    is made of plain ``key: value`` lines is read the way Cursor reads ``.mdc``
    rules (see :func:`plain_pairs`).
    """
    opening = _OPEN.match(text)
    if opening is None:
        return FrontMatter(None, text)
    close = _CLOSE.search(text, opening.end())
    if close is None:
        return FrontMatter(None, text, problem="unclosed", error="no closing '---' line")
    raw = text[opening.end() : close.start()]
    body = text[close.end() + 1 :]  # after the closing line and its newline
    try:
        data = _load(raw, loader)
    except Exception as exc:  # YAMLError, RecursionError, a date that is no date...
        refused = isinstance(exc, UnsafeFrontMatter)  # not YAML gone wrong: no pairs
        pairs = plain_pairs(raw) if lenient and not refused else None
        if pairs is not None:
            return FrontMatter(pairs, body, raw)
        return FrontMatter(None, body, raw, "invalid_yaml", _error_summary(exc), exc)
    if data is None:  # "---\n---": an empty block is valid, it just says nothing
        return FrontMatter({}, body, raw)
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else "a scalar"
        return FrontMatter(None, body, raw, "not_a_mapping", f"YAML is {kind}, not a mapping")
    return FrontMatter(data, body, raw)


_PAIR = re.compile(r"([A-Za-z_][\w.-]*)[ \t]*:(?:[ \t]+(.*?))?[ \t]*")


def plain_pairs(raw: str) -> dict[str, Any] | None:
    """A front matter block read as Cursor reads ``.mdc`` rules: one ``key: value``
    per line, the value taken literally; None when a line is anything else.

    Cursor writes ``globs: **/*.ts, src/**`` unquoted, which is not YAML (``*``
    starts an alias); so is ``description: Use X: never Y``. A YAML loader
    refuses both and the rule would lose its description. Values in matching
    quotes are unquoted, ``true``/``false`` are booleans, an empty value is ''.
    A value opening YAML structure (``[``, ``{``, ``|``...) was meant as YAML:
    its error stands.
    """
    out: dict[str, Any] = {}
    for line in raw.split("\n"):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        found = _PAIR.fullmatch(line)
        if found is None:
            return None
        value = found.group(2) or ""
        if value[:1] in ("[", "{", "|", ">", "&", "!"):
            return None  # YAML structure that went wrong: a real error, not a Cursor glob
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out[found.group(1)] = {"true": True, "false": False}.get(value.lower(), value)
    return out or None


def _load(raw: str, loader: Any) -> Any:
    """Parse the YAML of one front matter block: the one place front matter is read.

    What YAML refuses but Cursor accepts is read by :func:`plain_pairs` (asked
    for with ``lenient``), after the loader said no.
    """
    if len(raw) > MAX_FRONT_MATTER_CHARS:  # before the parser spends time on it
        raise UnsafeFrontMatter(problem=f"longer than {MAX_FRONT_MATTER_CHARS:,} characters")
    if loader is yaml.SafeLoader or loader is getattr(yaml, "CSafeLoader", None):
        loader = SAFE_LOADER if loader is yaml.SafeLoader else FAST_LOADER  # always capped
    return yaml.load(raw, Loader=loader)  # only ever a safe loader (see SAFE_LOADER)


def _error_summary(exc: Exception) -> str:
    """``problem (line N)`` for a YAML error; the exception's type name otherwise.

    Other exceptions come from deep nesting (RecursionError) or from a value
    YAML cannot build (``date: 2024-02-30`` raises ValueError); the caller has
    the exception itself when it wants more than the name.
    """
    if not isinstance(exc, yaml.YAMLError):
        return type(exc).__name__
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if problem and mark is not None:
        # +2: the mark counts from 0 inside the block, and the block starts after "---".
        return f"{problem} (line {mark.line + 2})"
    return _first_line(exc)


def _first_line(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


# ------------------------------------------------------------------ code fences

# A fence is three or more backticks or tildes; the marker is the whole run, so a
# closing fence can be checked to be at least as long (CommonMark).
_FENCE = re.compile(r"`{3,}|~{3,}")


def fence_marker(line: str, max_indent: int | None = None) -> str | None:
    """The backtick or tilde run (3+) that opens or closes a code fence on ``line``.

    None when the line is no fence. With ``max_indent``, a line indented further is
    no fence (CommonMark: four spaces make an indented code block instead).
    """
    stripped = line.lstrip()
    if stripped[:1] not in ("`", "~"):  # most lines: no regex (ADR builds are timed)
        return None
    if max_indent is not None and len(line) - len(stripped) > max_indent:
        return None
    found = _FENCE.match(stripped)
    return found.group(0) if found else None


def unfenced(lines: Sequence[str]) -> Iterator[tuple[int, str, bool]]:
    """``(index, stripped line, opens_fence)`` for each line that is not inside a code fence.

    A line that opens a fence is yielded (with ``opens_fence`` True, so a caller
    can end a paragraph there); the lines inside and the closing fence are not.
    A fence closes at a line that starts with the same marker, so a ``~~~`` inside
    a backtick fence stays inside. A ``# comment`` in a shell snippet is thereby
    never taken for a heading.
    """
    fence = ""
    for i, line in enumerate(lines):
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence):
                fence = ""
            continue
        marker = fence_marker(stripped)
        if marker:
            fence = marker
        yield i, stripped, marker is not None


# ------------------------------------------------------------------------ dates

# YYYY-MM-DD as written; whether it is a real day is checked apart (iso_date).
ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def yaml_day(value: object) -> str | None:
    """``YYYY-MM-DD`` of a date or datetime, else None.

    YAML turns an unquoted ``2024-01-05`` into a date, and one with a time into a
    datetime; either names a day.
    """
    if isinstance(value, _dt.datetime):
        return value.date().isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    return None


def iso_date(value: object) -> str | None:
    """``YYYY-MM-DD`` of a front matter date value, strictly; None when it is none.

    A date or datetime, or text that starts with a real calendar day
    (``'2024-01-05 10:20'``). ``'2024-13-45'``, ``yesterday`` or a list give None,
    so the caller can warn instead of storing a date that sorts wrong.
    """
    day = yaml_day(value)
    if day is not None:
        return day
    found = ISO_DATE.match(str(value).strip())
    if found is None:
        return None
    try:
        return _dt.date(*(int(g) for g in found.groups())).isoformat()
    except ValueError:
        return None


def find_iso_date(text: str) -> str | None:
    """The first ``YYYY-MM-DD``-shaped run anywhere in ``text``, not checked against a calendar.

    Lenient on purpose, for ``Date: 2024-05-06 (revised 2024-07-01)`` lines in
    ADRs, where a date is shown to a person, never computed with.
    """
    found = ISO_DATE.search(text)
    return found.group(0) if found else None


# ------------------------------------------------------------------------ words

# The index terms of the word index (store/lexical.py) and of `check`'s
# near-duplicate notes: measured on LoCoMo (docs/locomo.md, issue #19).
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP_TEXT = (
    "a an the and or but if of to in on at by for with from as is are was were be been "
    "being it its this that these those i you he she we they me him her us them my your "
    "his our their what which who whom when where why how do does did done have has had "
    "not no yes so than then there here about into over after before up down out just "
    "also can could would should will shall may might must very too more most some any "
    "all each other such only own same don doesn didn isn wasn ll re ve"
)
STOP_WORDS = frozenset(_STOP_TEXT.split())
_SUFFIXES = ("ing", "ed")


def stem(word: str) -> str:
    """A light stem: a plural ``s``/``es``, then ``ing`` or ``ed`` (``meetings``,
    ``meeting`` and ``meet`` meet); ``class``, ``bus``, ``this`` and short words stay whole."""
    if len(word) > 4 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        plural_es = word.endswith(("ches", "shes", "sses", "xes", "zes"))
        word = word[:-2] if plural_es else word[:-1]
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def tokens(text: str) -> list[str]:
    """The index terms of ``text``: lower-cased words and numbers, stop words out, stemmed."""
    return [stem(w) for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in STOP_WORDS]
