"""ADR marks for injected lines, from the one ADR graph (SPEC §4).

The folder of an ADR hit is its path's parent; its graph is built (or read
from the graph's own content-hash cache) once per folder and kept until the
store changes, since the watcher re-indexes whenever an ADR file changes.

When the graph cannot say (the graph fails, or the record is not in it), the
mark is ``status unknown``: a record whose status is not known must never be
shown as if it were current. Nor is a record whose id another ADR folder of its
project claims too (adr_graph/duplicates.py): it gets ``⚠️duplicate id → also
PATH`` after its own folder's mark.

A muted record (recall/mute.py) is never a successor: it gets no line of its own
after (or, a chat, before) the record it replaced. The replaced record keeps its
mark, since its status is a fact, and the mark names a muted ADR by its id only,
followed by ``(muted)`` (``⚠️superseded → ADR-0011 (muted)``): the agent learns
that the decision changed, and nothing of the muted one's text. A muted chat that
amended a record is not named at all (``⚠️amended DAY → a muted conversation``):
its title is its content.

An org record (recall/org.py) has no files here to build a graph from: an org ADR
keeps the mark its repository's graph gave it when the org index was built, and
its successors are the org records the build named (across repositories).
Nothing else marks an org record (a chat of this machine amends the project's own).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from threading import Lock
from typing import TYPE_CHECKING, Any

from precedents.adr_graph import build_graph
from precedents.adr_graph.duplicates import duplicate_mark
from precedents.adr_graph.model import label_for
from precedents.recall.amendments import AMENDED_MARK, Amendments
from precedents.recall.mute import name_muted
from precedents.secrets.mask import mask_secrets
from precedents.store.rows import DocumentRecord

if TYPE_CHECKING:
    from precedents.recall.org import OrgRecords

log = logging.getLogger("precedents.daemon")

UNKNOWN_MARK = "status unknown"
MUTED_CHAT = "a muted conversation"  # in place of a muted amending chat's title


class AdrMarks:
    """Marks of ADR records, with one graph per ADR folder, dropped on :meth:`invalidate`."""

    def __init__(self, cache_dir: Path | None) -> None:
        self.cache_dir = cache_dir
        self._graphs: dict[Path, Any] = {}
        self._lock = Lock()
        # Records a later chat amended (recall/amendments.py): set with each snapshot.
        self.amendments = Amendments()
        # ADR paths whose id another folder of the project claims: set with each snapshot.
        self.duplicates: dict[str, list[str]] = {}
        # The paths the user muted now (Recall sets its MuteList's): never a successor.
        self.muted: Callable[[], frozenset[str]] = frozenset
        # The organisation's records (Recall sets its own): org ADRs' successors.
        self.org: OrgRecords | None = None

    def invalidate(self) -> None:
        """Forget every graph (the store changed: an ADR may have changed)."""
        with self._lock:
            self._graphs.clear()

    def _graph(self, folder: Path) -> Any:
        with self._lock:
            if folder in self._graphs:
                return self._graphs[folder]
        graph = build_graph(folder, self.cache_dir, mask_secrets)
        with self._lock:
            self._graphs[folder] = graph
        return graph

    def successors_for(self, record: DocumentRecord) -> list[DocumentRecord]:
        """The live record(s) that replaced ``record``: an ADR's in its folder (the end of
        its chain), else the newest chat that amended it (recall/amendments.py).

        Empty for a live, proposed, rejected or unknown record that no chat amended,
        and for a successor outside the repository or missing (its mark names it anyway).
        A muted successor is left out (its id stays in the mark, followed by "(muted)").
        """
        muted = self.muted()
        return [s for s in self._successors(record) if s.path not in muted]

    def muted_successors(self, record: DocumentRecord) -> list[str]:
        """The paths of ``record``'s successors that the mute list keeps out (for `why`)."""
        muted = self.muted()
        if not muted:
            return []
        return [s.path for s in self._successors(record) if s.path in muted]

    def _successors(self, record: DocumentRecord) -> list[DocumentRecord]:
        if record.org:
            return self.org.successors(record) if self.org is not None else []
        if record.kind != "adr":
            return self.amendments.successors_for(record)
        replaced = [live for live, _ in self._adr_successors(record)]
        return replaced or self.amendments.successors_for(record)

    def _adr_successors(self, record: DocumentRecord) -> list[tuple[DocumentRecord, str]]:
        """The live ends of ``record``'s chain, each with the label its mark names it by."""
        path = Path(record.path)
        try:
            graph = self._graph(path.parent)
            found = graph.record_for_path(path)
            if found is None or found.status == "live" or not found.current:
                return []
            ids = [found.current] if isinstance(found.current, str) else list(found.current)
            out = []
            for rid in ids:
                live = graph.records.get(rid)
                if live is not None and live.status == "live":
                    successor = DocumentRecord(
                        "adr",
                        record.project,
                        str(graph.folder / live.path),
                        live.title,
                        date=live.date or "",
                        adr_id=live.id,
                    )
                    out.append((successor, label_for(live.id, live.number)))
            return out
        except Exception as exc:  # a broken ADR folder must not break the hook's answer
            log.warning("ADR graph for %s failed: %s", path.parent, exc)
            return []

    def mark_for(self, record: DocumentRecord) -> str:
        """A record's mark: an ADR's SPEC §4 mark, else (a live ADR, a conversation, a
        note) ``⚠️amended DAY → TITLE`` when a later chat amended it; '' for none."""
        if record.org:
            return self.adr_mark(record)
        if record.kind != "adr":
            return self._amended_mark(record)
        return self.adr_mark(record) or self._amended_mark(record)

    def _amended_mark(self, record: DocumentRecord) -> str:
        """The amended mark; a muted chat is not named (its title is its content)."""
        found = self.amendments.get(record)
        if found is None or found.by.path not in self.muted():
            return self.amendments.mark_for(record)
        day = f" {found.day}" if found.day else ""
        return f"{AMENDED_MARK}{day} → {MUTED_CHAT}"

    def adr_mark(self, record: DocumentRecord) -> str:
        """The SPEC §4 mark of an ADR record ('' when live, ``status unknown`` when unsure),
        a muted successor's id followed by "(muted)", and the duplicate mark when another
        folder of its project claims its id."""
        if record.kind != "adr":
            return ""
        if record.org:  # as its repository's graph gave it at build time
            mark = record.org_mark
            muted = self.muted()
            if mark and muted and self.org is not None:
                ends = [s for s in self.org.successors(record) if s.path in muted]
                mark = name_muted(mark, [label_for(s.adr_id, 0) for s in ends])
            return mark
        mark = self._graph_mark(record)
        if mark and self.muted():
            mark = self._muted_named(record, mark)
        others = self.duplicates.get(record.path)
        if not others:
            return mark
        return f"{mark}; {duplicate_mark(others)}" if mark else duplicate_mark(others)

    def _muted_named(self, record: DocumentRecord, mark: str) -> str:
        """``mark`` with "(muted)" after each successor id the mute list keeps out."""
        muted = self.muted()
        ends = self._adr_successors(record)
        return name_muted(mark, [label for live, label in ends if live.path in muted])

    def _graph_mark(self, record: DocumentRecord) -> str:
        path = Path(record.path)
        try:
            found = self._graph(path.parent).record_for_path(path)
        except Exception as exc:  # a broken ADR folder must not break the hook's answer
            log.warning("ADR graph for %s failed: %s", path.parent, exc)
            return UNKNOWN_MARK
        if found is None:
            return UNKNOWN_MARK
        return str(getattr(found, "mark", UNKNOWN_MARK) or "")
