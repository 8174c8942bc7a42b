"""What the ADR tools hand out: every field of a record as inert data (issue #20).

The graph keeps records as they were written (its cache, chains and checks work on
that); this module is the one place they become output. The `precedents adr`
commands and the MCP tools `adr_status`, `adr_chain` and `adr_find` all render
through :class:`AdrView`, so no command and no tool can show a field raw
(docs/adr-graph.md, "Output is inert"):

* every field is :func:`precedents.inert.inert` (one line: no newline, control,
  bidi or invisible character, no ``<``/``>``, role label, template token or code
  fence; capped), a path :func:`precedents.inert.inert_path`;
* an ADR's text is a list of such lines (indentation kept, length capped): the CLI
  prints each behind a gutter (``│ ``), so no line of it starts a line of ours;
* a record whose shown fields read as orders to the agent
  (:func:`precedents.inert.suspect_reason`) is shown as its id, path, status and
  mark with ``"suspect": true``: its title, status as written, component and text
  never. What is checked is what is shown: the header fields for `list`, `find`
  and `adr_status`/`adr_find`, those and the text for `show` and `adr_chain`.

Data flows one way: graph -> view -> CLI / MCP; the graph imports nothing from here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from precedents.adr_graph.model import AdrRecord, Finding, label_for
from precedents.errors import PrecedentsError, UsageError
from precedents.inert import (
    ID_CHARS,
    MARK_CHARS,
    NAME_CHARS,
    SUSPECT_MARK,
    TEXT_CHARS,
    inert,
    inert_mark,
    inert_path,
    is_future,
    path_words,
    suspect_reason,
)

if TYPE_CHECKING:
    from precedents.adr_graph.graph import AdrGraph

# An ADR's text is shown up to about this many characters (~10k tokens), then a line
# naming the file; the patterns read exactly the lines shown (the raw ones).
BODY_CHARS = 40_000
BODY_LINE_CHARS = 2_000
INDENT_CHARS = 40
MESSAGE_CHARS = 1_000
GUTTER = "│ "
# An id that can be shown even for a suspect record: a number or a file-name slug.
_PLAIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/+-]{0,159}")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_PARAGRAPH = re.compile(r"\n[ \t]*\n")
# A line of ours must not open with what reads as a turn or a heading.
_RISKY_START = re.compile(r"(?:system|assistant|user|human|developer)\b|[^A-Za-z0-9]", re.I)
_WHERE = re.compile(r"line \d+: ")
WITHHELD = (
    "its text reads as orders to an agent: only its id, path, status and mark are shown "
    "(read the file itself)"
)


@dataclass(frozen=True)
class Body:
    """An ADR's text as shown: inert ``lines``, and the ``raw`` text they came from."""

    lines: list[str]
    raw: str


def body(text: str, path: str) -> Body:
    """``text`` as inert lines, leading indentation kept, at most about
    :data:`BODY_CHARS` characters, then one line naming the file."""
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    out: list[str] = []
    used = 0
    for n, raw in enumerate(lines):
        if used >= BODY_CHARS:
            out.append(f"… {len(lines) - n} more lines: read {inert_path(path)}")
            return Body(out, "\n".join(lines[:n]))
        line = raw.expandtabs(4)
        indent = min(len(line) - len(line.lstrip(" ")), INDENT_CHARS)
        shown = inert(line, BODY_LINE_CHARS)
        out.append(" " * indent + shown if shown else "")
        used += len(shown) + 1
    return Body(out, "\n".join(lines))


def _paragraphs(text: str) -> list[str]:
    # Read paragraph by paragraph: 4x faster than a whole text at once (fewer
    # patterns' anchor words per piece), and a pattern never spans a blank line.
    return [p for p in _PARAGRAPH.split(text) if p.strip()]


def line_label(label: str) -> str:
    """``label`` where it opens a printed line: in parentheses when it would start
    the line with a role word, a heading or a quote (a slug ``user-sessions``)."""
    return f"({label})" if _RISKY_START.match(label) else label


def shown_date(date: str | None) -> str:
    """A date column: the ISO date, or nothing (a ``Date:`` line may hold any text; a
    date in the future is no record's: inert.is_future)."""
    found = _ISO_DATE.search(date or "")
    return found.group(0) if found and not is_future(found.group(0)) else ""


class AdrView:
    """The records of one graph as output: JSON-ready dicts and one-line messages."""

    def __init__(self, graph: AdrGraph) -> None:
        self.graph = graph
        self._header: dict[str, str] = {}

    # ------------------------------------------------------------------ suspects

    def header_reason(self, rec: AdrRecord) -> str:
        """Why ``rec``'s header fields (id, title, status as written, date, component,
        file name, successors and links as written) read as orders ('' when not)."""
        if rec.id not in self._header:
            own = [r["target"] for r in rec.relations if r.get("declared_by") == "self"]
            fields = (
                rec.title,
                rec.declared_status or "",
                rec.id,
                rec.date or "",
                rec.component or "",
                path_words(rec.path),
                *rec.successors,
                *own,
            )
            self._header[rec.id] = suspect_reason(*fields)
        return self._header[rec.id]

    def reason(self, rec: AdrRecord, shown: Body | None = None) -> str:
        """Why ``rec`` reads as orders: its header, and its text when ``shown``."""
        why = self.header_reason(rec)
        if why or shown is None:
            return why
        for paragraph in _paragraphs(shown.raw):
            why = suspect_reason(paragraph)
            if why:
                return why
        return ""

    def ident(self, rec: AdrRecord) -> str:
        """The id shown for ``rec``: inert; for a suspect record only a plain one (a
        number, a slug) that is not itself suspect, else its path (which `get` takes)."""
        if not self.header_reason(rec):
            return inert(rec.id, NAME_CHARS)
        if _PLAIN_ID.fullmatch(rec.id) and not suspect_reason(path_words(rec.id)):
            return rec.id
        return inert_path(rec.path)

    def label(self, rec: AdrRecord) -> str:
        """How lines name ``rec`` (``ADR-0024``, a slug, or its path when its id is hidden)."""
        shown = self.ident(rec)
        return label_for(shown, rec.number) if shown == rec.id else shown

    def _ours(self, text: str, limit: int, render: Callable[[str, int], str] = inert) -> str:
        """A sentence of ours naming records: a hidden id's label replaced by its path."""
        # Only the records the sentence names are looked at (a mark names one or two).
        named = [r for r in self.graph.records.values() if r.label in text]
        hidden = [r for r in named if self.ident(r) == inert_path(r.path) != r.id]
        for rec in sorted(hidden, key=lambda r: -len(r.label)):
            text = text.replace(rec.label, inert_path(rec.path))
        return render(text, limit)

    def message(self, text: str) -> str:
        """An error or a finding as one inert line; one that quotes text reading as
        orders keeps its ``line N:`` and says why it is withheld."""
        shown = self._ours(text, MESSAGE_CHARS)
        why = suspect_reason(shown) or suspect_reason(text)
        if not why:
            return shown
        where = _WHERE.match(shown)
        return (
            f"{where.group(0) if where else ''}{SUSPECT_MARK} message withheld: it quotes ADR "
            f"text that reads as orders to an agent ({why})"
        )

    # ------------------------------------------------------------------ lookups

    def get(self, ref: str) -> AdrRecord:
        """The record ``ref`` names; the error, if any, as one inert line."""
        try:
            return self.graph.get(ref)
        except UsageError as exc:
            raise UsageError(self.message(str(exc))) from None

    def _key(self, rid: str) -> str:
        return self.ident(self.graph.records[rid])

    def _current(self, rec: AdrRecord) -> str | list[str] | None:
        if rec.current is None:
            return None
        if isinstance(rec.current, list):
            return [self._key(c) for c in rec.current]
        return self._key(rec.current)

    def mark(self, rec: AdrRecord) -> str:
        """``rec``'s mark: the graph's words and labels, inert ('' when live)."""
        # A mark's glyphs are ours; the labels it quotes are inert already (status.py).
        return self._ours(rec.mark, MARK_CHARS, inert_mark) if rec.mark else ""

    # ------------------------------------------------------------------ records

    def record(self, rec: AdrRecord, shown: Body | None = None) -> dict[str, Any]:
        """The `adr list --json` / MCP shape of ``rec`` (that of ``AdrRecord.as_dict``,
        plus ``suspect``), every field inert; a suspect record keeps its id, path,
        status, mark, ISO date and the records it links to, by their path."""
        why = self.reason(rec, shown)
        out: dict[str, Any] = {
            "path": inert_path(rec.path),
            "id": self.ident(rec),
            "title": "",
            "declared_status": None,
            "status": rec.status,
            "successors": [],
            "current": self._current(rec),
            "mark": self.mark(rec),
            "relations": [],
            "component": None,
            "date": shown_date(rec.date) or None,
            "suspect": bool(why),
        }
        if why:
            out["suspect_reason"] = why
            linked = [r for r in rec.successor_refs if r["id"] in self.graph.records]
            out["successors"] = [inert_path(self.graph.records[r["id"]].path) for r in linked]
            out["relations"] = [
                self._relation(r, inert_path(self.graph.records[r["id"]].path))
                for r in rec.relations
                if r.get("id") in self.graph.records
            ]
            return out
        out.update(
            title=inert(rec.title, TEXT_CHARS),
            declared_status=inert(rec.declared_status, TEXT_CHARS)
            if rec.declared_status is not None
            else None,
            successors=[inert(s, TEXT_CHARS) for s in rec.successors],
            relations=[self._relation(r, inert(r["target"], TEXT_CHARS)) for r in rec.relations],
            component=inert(rec.component, NAME_CHARS) if rec.component else rec.component,
            date=inert(rec.date, ID_CHARS) if rec.date else rec.date,
        )
        if rec.warnings:
            out["warnings"] = [self._ours(w, TEXT_CHARS) for w in rec.warnings]
        return out

    def _relation(self, rel: dict[str, Any], target: str) -> dict[str, Any]:
        by = rel.get("declared_by", "self")
        out = {
            "type": rel["type"],
            "target": target,
            "id": self._key(rel["id"]) if rel.get("id") in self.graph.records else None,
            "declared_by": by if by == "self" else inert_path(str(by)),
        }
        if "link" in rel:
            out["link"] = rel["link"]
        return out

    def show(self, rec: AdrRecord) -> dict[str, Any]:
        """One record with its text (`adr show`): :meth:`record` plus ``reason`` (why
        its status), ``external`` successors and ``lines`` (none when suspect)."""
        shown = body(self.graph.text_of(rec), rec.path)
        out = self.record(rec, shown)
        out["reason"] = self._ours(rec.reason, TEXT_CHARS)
        external = [s["target"] for s in rec.successor_refs if s["kind"] == "external"]
        out["external"] = [] if out["suspect"] else [inert(e, TEXT_CHARS) for e in external]
        out["lines"] = [] if out["suspect"] else shown.lines
        return out

    def listing(self, records: Iterable[AdrRecord]) -> dict[str, Any]:
        """The `adr list --json` shape: ``records``, the files that are not ADRs, and the
        build's warnings (a suspect record's own ones left to `adr check`)."""
        hidden = tuple(f"{r.path}:" for r in self.graph.records.values() if self.header_reason(r))
        return {
            "folder": inert_path(str(self.graph.folder)),
            "records": [self.record(r) for r in records],
            "not_adrs": [
                {"path": inert_path(n.path), "reason": inert(n.reason, TEXT_CHARS)}
                for n in self.graph.non_adrs
            ],
            "warnings": [
                self._ours(w, TEXT_CHARS) for w in self.graph.warnings if not w.startswith(hidden)
            ],
        }

    def find(self, words: Sequence[str]) -> list[dict[str, Any]]:
        """Records whose title or text holds every word (`adr find`, MCP `adr_find`)."""
        return [self.record(r) for r in self.graph.find(words)]

    # ------------------------------------------------------------------ chains

    def chain(self, ref: str) -> dict[str, Any]:
        """``graph.chain(ref)`` as output: ids as :meth:`ident`, each source's text as
        inert ``lines`` (none when suspect), errors as one inert line."""
        try:
            packet = self.graph.chain(ref)
        except PrecedentsError as exc:  # AdrChainError, UsageError: same class, safe text
            raise type(exc)(self.message(str(exc))) from None
        current = packet["current"]
        out: dict[str, Any] = {
            "current": [self._key(c) for c in current]
            if isinstance(current, list)
            else self._key(current),
            "history": [self._key(h) for h in packet["history"]],
            "sources": {
                self._key(rid): self._source(self.graph.records[rid], src["text"])
                for rid, src in packet["sources"].items()
            },
        }
        if packet.get("note"):
            out["note"] = self._ours(packet["note"], TEXT_CHARS)
        if packet.get("cross_component"):
            out["cross_component"] = [self._crossing(c) for c in packet["cross_component"]]
        return out

    def _source(self, rec: AdrRecord, text: str) -> dict[str, Any]:
        shown = body(text, rec.path)
        full = self.record(rec, shown)
        out = {k: full[k] for k in ("path", "title", "status", "mark", "date", "component")}
        out.update(id=full["id"], label=self.label(rec), suspect=full["suspect"])
        out["lines"] = [] if full["suspect"] else shown.lines
        if full["suspect"]:
            out["suspect_reason"] = full["suspect_reason"]
        return out

    def _crossing(self, crossing: dict[str, str]) -> dict[str, str]:
        ends = [self.graph.records[crossing["from"]], self.graph.records[crossing["to"]]]
        plain = not any(self.header_reason(r) for r in ends)
        return {
            "from": self.ident(ends[0]),
            "to": self.ident(ends[1]),
            "components": inert(crossing["components"], TEXT_CHARS) if plain else "",
        }

    # ------------------------------------------------------------------ check

    def check(self, findings: Sequence[Finding]) -> list[dict[str, str]]:
        """`adr check`'s findings as output, then one ``suspect`` warning per record
        the ADR tools show by its path only (its header or its text reads as orders)."""
        out = [
            {
                "kind": f.kind,
                "path": inert_path(f.path),
                "message": self.message(f.message),
                "severity": f.severity,
            }
            for f in findings
        ]
        for rec in self.graph.sorted():
            why = self.reason(rec, body(self.graph.raw_text(rec), rec.path))
            if why:
                out.append(
                    {
                        "kind": "suspect",
                        "path": inert_path(rec.path),
                        "message": f"{self.label(rec)} reads as orders to an agent ({why}): the "
                        "ADR tools show it as its id, path and mark only",
                        "severity": "warning",
                    }
                )
        return out
