"""The daemon's in-memory copy of the store's vectors, ranked with numpy.

Why not :meth:`Store.search` on every question: a flat LanceDB scan costs
8-12 ms at 10k chunks and 50-60 ms at 100k, plus ~1 ms to check for other
processes' commits; a numpy dot product over the same matrix is several
times faster (measured in bench/hook.py, figures in docs/benchmarks.md). The
scores are exact cosines (vectors are normalized), so the selection
thresholds apply unchanged.

The copy is refreshed by :class:`~precedents.query_daemon.recall.Recall` when
the chunk table's version changes; a snapshot is immutable, so a question
being answered keeps the snapshot it started with while a new one is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from threading import Lock
from typing import Any

import numpy as np
from numpy.typing import NDArray

from precedents.store.schema import DocumentHit, DocumentRecord

# Enough document ranks for the selection gap (ranks 2..11) and a margin.
DOC_RANKS = 20
CONVERSATION_RANKS = 3


@dataclass(frozen=True)
class _Subset:
    """The rows of a set of project keys: their matrix and which document each row is."""

    matrix: NDArray[np.float32]
    rows: NDArray[np.int64]  # row numbers in the snapshot
    codes: NDArray[np.int64]  # document code of each row (0..n_docs-1 within the subset)
    doc_first_row: NDArray[np.int64]  # a snapshot row of each document (for its record)
    is_conversation: NDArray[np.bool_]  # per document


@dataclass
class VectorSnapshot:
    """Every chunk of the store at one table version, as a matrix plus metadata."""

    version: Any
    meta: list[dict[str, Any]]
    matrix: NDArray[np.float32]
    _subsets: dict[tuple[str, ...], _Subset] = field(default_factory=dict)
    _lock: Lock = field(default_factory=Lock)

    @property
    def rows(self) -> int:
        """Chunks in the snapshot."""
        return len(self.meta)

    def _subset(self, projects: Sequence[str]) -> _Subset:
        key = tuple(sorted(set(projects)))
        with self._lock:
            cached = self._subsets.get(key)
        if cached is not None:
            return cached
        wanted = set(key)
        rows = np.fromiter(
            (i for i, m in enumerate(self.meta) if m["project"] in wanted), dtype=np.int64
        )
        doc_codes: dict[str, int] = {}
        codes = np.empty(len(rows), dtype=np.int64)
        first: list[int] = []
        conv: list[bool] = []
        for j, i in enumerate(rows.tolist()):
            m = self.meta[i]
            code = doc_codes.get(m["doc_id"])
            if code is None:
                code = doc_codes[m["doc_id"]] = len(first)
                first.append(i)
                conv.append(m["kind"] == "conversation")
            codes[j] = code
        subset = _Subset(
            matrix=np.ascontiguousarray(self.matrix[rows]),
            rows=rows,
            codes=codes,
            doc_first_row=np.asarray(first, dtype=np.int64),
            is_conversation=np.asarray(conv, dtype=np.bool_),
        )
        with self._lock:
            self._subsets[key] = subset
        return subset

    def warm(self, projects: Sequence[str]) -> None:
        """Build the row subset of ``projects`` ahead of the first question."""
        self._subset(projects)

    def rank(
        self,
        vector: NDArray[np.float32],
        projects: Sequence[str],
        kinds: Sequence[str] | None = None,
        doc_ranks: int = DOC_RANKS,
        conversation_ranks: int = CONVERSATION_RANKS,
    ) -> list[DocumentHit]:
        """Documents of ``projects`` by their best chunk's cosine, best first.

        Returns the top ``doc_ranks`` notes/rules/ADRs and the top
        ``conversation_ranks`` conversations, merged in score order (ranked
        apart so that many long conversations cannot crowd the documents out).
        """
        sub = self._subset(projects)
        if not len(sub.rows):
            return []
        scores = sub.matrix @ np.asarray(vector, dtype=np.float32).reshape(-1)
        order = np.argsort(-scores, kind="stable")
        sorted_codes = sub.codes[order]
        # The first time a document appears in score order is its best chunk.
        _, first_pos = np.unique(sorted_codes, return_index=True)
        first_pos.sort()
        ranked_docs = sorted_codes[first_pos]
        best_rows = order[first_pos]  # row in the subset of each ranked document's best chunk
        conv = sub.is_conversation[ranked_docs]
        allowed = set(kinds) if kinds else None
        picks: list[int] = []
        for mask, limit in ((~conv, doc_ranks), (conv, conversation_ranks)):
            idx = np.flatnonzero(mask)
            taken = 0
            for k in idx.tolist():
                if taken >= limit:
                    break
                kind = self.meta[int(sub.rows[best_rows[k]])]["kind"]
                if allowed is not None and kind not in allowed:
                    continue
                picks.append(k)
                taken += 1
        picks.sort()
        hits = []
        for k in picks:
            row = int(sub.rows[best_rows[k]])
            m = self.meta[row]
            record = DocumentRecord(
                kind=m["kind"],
                project=m["project"],
                path=m["path"],
                name=m["name"] or "",
                description=m["description"] or "",
                date=m["date"] or "",
                adr_id=m["adr_id"] or "",
            )
            hits.append(DocumentHit(record, float(scores[best_rows[k]]), int(m["chunk_index"])))
        return hits


EMPTY = VectorSnapshot(version=None, meta=[], matrix=np.zeros((0, 0), dtype=np.float32))
