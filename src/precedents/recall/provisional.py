"""Rules read straight from a project's files, served until the store holds them.

The file hook serves rules from the store's snapshot (:mod:`.files`), and a
project opened for the first time is in no store yet: its embedding takes a
background process seconds to minutes. A rule's scope needs no model, so the
daemon reads the project's rule files here (the walk and the parsers the indexer
uses: :func:`~precedents.ingest.sources.project_sources`, :mod:`precedents.rules`)
and the file hook serves them from the very first Read of the session.

The rows look like the snapshot's chunk rows (the fields :class:`.files.FileScopes`
and :class:`~precedents.store.rows.DocumentRecord` read), with the same content
hash the indexer records: once the store holds a rule (same path) its stored row
wins (``FileScopes`` keeps a path's first row, and the snapshot's come first), and
a session given the provisional one is not given the stored one again.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

from precedents.errors import PrecedentsError
from precedents.files import Refused, read_regular
from precedents.inert import is_future
from precedents.ingest.chunking import parse_note
from precedents.ingest.sources import project_sources, walk
from precedents.rules.formats import classify, format_in_path
from precedents.rules.scope import rule_scope
from precedents.secrets.mask import find_secrets, mask_spans

Row = dict[str, Any]


def read_rules(root: str, max_bytes: int) -> list[Row]:
    """The rule files of the project at ``root`` as scope rows, parsed as the indexer
    parses them; a file that cannot be read (too big, binary, a link out) is left
    out, as the indexer leaves it out."""
    sources = [s for s in project_sources(Path(root)) if s.kind == "rule"]
    rows: list[Row] = []
    for found in walk(sources).files:
        try:
            data = read_regular(found.path, within=found.root, limit=max_bytes)
        except (Refused, OSError):
            continue
        if b"\x00" in data[:8192]:
            continue
        text = data.decode("utf-8", errors="replace")
        if not text.strip():
            continue
        try:
            rows.append(_row(found.path, found.project, text, data))
        except (PrecedentsError, ValueError):
            continue  # a file the indexer would report; the background pass does
    return rows


def _row(path: Path, project: str, text: str, data: bytes) -> Row:
    """One rule file's row, as ``Indexer._document`` reads a rule (name, description,
    date, scope from the front matter; the text masked first, by the local rules)."""
    placed = classify(path, project)
    stem = f"{path.name} ({placed.base}/)" if placed and placed.base else path.stem
    masked = _masked(text)
    if masked is None:
        raise ValueError("unscannable")
    meta = parse_note(masked, stem)
    fmt = placed.format if placed else format_in_path(path)
    scope = rule_scope(fmt, placed.base if placed else "", meta.front)
    return {
        "kind": "rule",
        "project": project,
        "path": str(path),
        "name": meta.name,
        "description": meta.description,
        "date": "" if is_future(meta.date) else meta.date,
        "adr_id": "",
        "scope": scope.to_json(),
        "origin": "",
        "author": "",
        "decided": "",
        "source_hash": hashlib.sha256(data).hexdigest(),
    }


def _masked(text: str) -> str | None:
    """``text`` with its secrets masked by the local rules (``[MASKED:kind]``, as
    ``mask_secrets`` writes them). Not kingfisher's: loading it would cost the daemon
    ~45 MiB for the rest of its life and the first Read ~1 s; the stored row, masked
    by both, replaces this one within minutes."""
    try:
        spans = find_secrets(text, native=False)
    except Exception:  # a bug in the local rules: nothing of this file is served
        return None
    return mask_spans(text, spans)


class ProvisionalRules:
    """The provisional rule rows of each project the daemon is indexing (thread-safe)."""

    def __init__(self) -> None:
        self._rows: dict[str, tuple[Row, ...]] = {}
        self._lock = threading.Lock()

    def put(self, root: str, rows: list[Row]) -> None:
        """Serve ``rows`` for ``root`` (replacing what it had)."""
        with self._lock:
            self._rows[root] = tuple(rows)

    def drop(self, root: str) -> bool:
        """Serve none for ``root`` any more (the store holds it); True when it had some."""
        with self._lock:
            return self._rows.pop(root, None) is not None

    def rows(self) -> list[Row]:
        """Every provisional row, of every project."""
        with self._lock:
            return [row for rows in self._rows.values() for row in rows]

    def paths(self, root: str) -> set[str]:
        """The paths of ``root``'s provisional rules."""
        with self._lock:
            return {str(row["path"]) for row in self._rows.get(root, ())}

    def projects(self) -> list[str]:
        """The projects served provisionally."""
        with self._lock:
            return list(self._rows)
