"""The org snapshot ranked in two stages (issue #30): :class:`OrgSnapshot`.

30,000 org documents of real length are 140,000 chunk rows: their vectors are
205 MiB, and a question over all of them 14 ms. So the chunk vectors stay in the
snapshot file (:class:`precedents.store.snapshot_file.MemberRows` reads the rows a
question needs), and a question ranks one vector per document first, then the best
documents' chunks exactly (the class docstring; figures in docs/org.md, "Serving →
Measured").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from precedents.kinds import Kind
from precedents.org.snapshot import document_vectors
from precedents.recall.org_columns import ORG_KEY, Documents, Row
from precedents.recall.vectors import (
    CONVERSATION_RANKS,
    DOC_RANKS,
    MultilingualScores,
    VectorSnapshot,
)
from precedents.recall.when import Window
from precedents.store.rows import DocumentHit, DocumentRecord
from precedents.store.snapshot_file import MemberRows

# Documents a question ranks by their best chunk after the first stage (OrgSnapshot):
# generous, since a document the mean of its chunks ranks below this many is lost
# (1,024 of 30,000 documents: ~4,800 rows, 7 MiB read a question, 4.3-4.7 ms the whole
# ranking; the top 10 of 99.7% of 300 varied questions as the whole matrix's, against
# 97.7% at 512 and 91.3% at 256: bench/org_hook.py, docs/org.md "Serving → Measured").
CANDIDATES: Final = 1024


@dataclass
class OrgSnapshot(VectorSnapshot):
    """The org's vectors with its rows as columns, ranked in two stages.

    ``matrix`` holds every chunk vector (memory-mapped from the snapshot file by
    recall/org.py; its rows are read with ``reader``, since pages read through the
    map would count in the daemon's VmRSS). A question does not read it whole:
    30,000 documents of real length are 140,000 rows, 205 MiB, 14 ms a question.
    ``coarse`` holds one vector per document
    (:func:`precedents.org.snapshot.document_vectors`, 44 MiB); a question ranks
    those, keeps the best ``candidates`` documents, and ranks them by their best
    chunk's exact cosine, their rows read from the file: every hit's score is the
    one the whole matrix would give, so thresholds and the merge with the project's
    own ranking stay calibrated. Only a document that the mean of its chunks puts
    below ``candidates`` others while one of its chunks would be in the top ranks
    is lost (measured: bench/org_hook.py, docs/org.md). What a question reads of
    the matrix is a copy it drops: the daemon's resident set does not grow with
    the questions asked.
    """

    documents: Documents | None = None
    # One vector per document (None: made from the matrix at load, an older file).
    coarse: NDArray[np.float32] | None = None
    candidates: int = 0  # 0: CANDIDATES
    # The matrix's rows read from the file (None: from ``matrix``, held in memory).
    reader: MemberRows | None = None
    _order: NDArray[np.int64] | None = None  # rows document by document (None: already)
    _starts: NDArray[np.int64] = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    _kind_code: NDArray[np.int8] = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    _kind_names: tuple[str, ...] = ()
    _blocked: dict[tuple[frozenset[str], frozenset[str]], NDArray[np.bool_]] = field(
        default_factory=dict
    )

    def __post_init__(self) -> None:
        docs = self.documents
        if docs is None:
            return
        row_doc = docs.row_doc
        grouped = not len(row_doc) or bool((np.diff(row_doc) >= 0).all())
        order = None if grouped else np.argsort(row_doc, kind="stable").astype(np.int64)
        placed = row_doc if order is None else row_doc[order]
        self._order = order
        self._starts = np.searchsorted(placed, np.arange(len(docs) + 1), side="left").astype(
            np.int64
        )
        names = tuple(sorted(set(docs.kind)))
        code = {k: i for i, k in enumerate(names)}
        self._kind_names = names
        self._kind_code = np.fromiter((code[k] for k in docs.kind), np.int8, len(docs))
        dim = self.matrix.shape[1] if self.matrix.ndim == 2 else 0
        coarse = self.coarse
        if coarse is None or coarse.shape != (len(docs), dim):
            self.coarse = self._document_vectors()
        else:
            self.coarse = np.ascontiguousarray(coarse, dtype=np.float32)

    @property
    def _plain(self) -> bool:
        """Every document ranks in the notes/rules/ADRs group (no conversations, no
        commits: the org build indexes neither), which the two stages rank."""
        return not {"conversation", "commit"} & set(self._kind_names)

    def _document_vectors(self) -> NDArray[np.float32]:
        """The documents' vectors from the matrix, a block of documents at a time (a file
        written before ORG_DOCS, read once at load)."""
        docs = self.documents
        assert docs is not None
        dim = self.matrix.shape[1] if self.matrix.ndim == 2 else 0
        out = np.zeros((len(docs), dim), dtype=np.float32)
        block = 4096
        for first in range(0, len(docs), block):
            last = min(first + block, len(docs))
            lo = self._starts[first:last]
            part = self._read(lo, self._starts[first + 1 : last + 1] - lo)
            out[first:last] = document_vectors(part, lo - lo[0])
        return out

    def warm(self, projects: Sequence[str]) -> None:
        """Nothing to build: the two stages' arrays are made with the snapshot."""
        if not self._plain:
            super().warm(projects)

    def rank_many(
        self,
        vectors: NDArray[np.float32],
        projects: Sequence[str],
        kinds: Sequence[Kind] | None = None,
        doc_ranks: int = DOC_RANKS,
        conversation_ranks: int = CONVERSATION_RANKS,
        multilingual: MultilingualScores | None = None,
        hidden: Sequence[frozenset[str]] | None = None,
        texts: Sequence[str] | None = None,
        words: float = 0.0,
        windows: Sequence[Window | None] | None = None,
        dates: float = 0.0,
        decided_ranks: int = 0,
        excluded: frozenset[str] = frozenset(),
    ) -> list[list[DocumentHit]]:
        """:meth:`VectorSnapshot.rank_many` in two stages (see the class docstring):
        the same hits and scores, save a document the first stage leaves out. Words,
        dates, multilingual vectors and decided conversations weigh conversations
        alone, which an org snapshot does not hold."""
        docs, coarse = self.documents, self.coarse
        q = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
        if docs is None or coarse is None or not self._plain:
            return super().rank_many(
                q, projects, kinds, doc_ranks, conversation_ranks, multilingual, hidden,
                texts, words, windows, dates, decided_ranks, excluded,
            )  # fmt: skip
        if ORG_KEY not in projects or not len(docs) or doc_ranks <= 0:
            return [[] for _ in range(len(q))]
        first = coarse @ q.T  # documents x questions
        blocked = self._blocking(kinds, excluded)
        if blocked is not None:
            first[blocked] = -np.inf
        wanted = min(len(docs), max(self.candidates or CANDIDATES, doc_ranks))
        picked: list[NDArray[np.int64]] = []
        for j in range(len(q)):
            column = first[:, j]
            masked = [docs.index[p] for p in (hidden[j] if hidden else ()) if p in docs.index]
            if masked:
                column = column.copy()
                column[masked] = -np.inf
            if wanted < len(column):
                top = np.argpartition(-column, wanted - 1)[:wanted]
            else:
                top = np.arange(len(column))
            picked.append(top[column[top] > -np.inf].astype(np.int64))
        union = np.unique(np.concatenate(picked)) if picked else np.zeros(0, dtype=np.int64)
        if not len(union):
            return [[] for _ in range(len(q))]
        scores, starts = self._exact(union, q)  # union's rows x questions
        best = np.maximum.reduceat(scores, starts, axis=0)  # union x questions
        ends = np.append(starts[1:], len(scores))
        out: list[list[DocumentHit]] = []
        for j, top in enumerate(picked):
            at = np.searchsorted(union, top)
            ranked = best[at, j]
            keep = min(doc_ranks, len(at))
            part = (
                np.argpartition(-ranked, keep - 1)[:keep] if keep < len(at) else np.arange(len(at))
            )
            order = part[np.argsort(-ranked[part], kind="stable")]
            hits = []
            for k in order.tolist():
                u = int(at[k])
                local = int(starts[u]) + int(np.argmax(scores[starts[u] : ends[u], j]))
                hits.append(self._org_hit(int(union[u]), local - int(starts[u]), scores[local, j]))
            out.append(hits)
        return out

    def _exact(
        self, chosen: NDArray[np.int64], q: NDArray[np.float32]
    ) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
        """The chunk cosines of documents ``chosen`` (sorted) for the questions ``q``, and
        where each document's rows start among them (one matrix product, as the
        whole-matrix ranking does it, so each cosine is the same float)."""
        lo, hi = self._starts[chosen], self._starts[chosen + 1]
        counts = hi - lo
        starts = np.cumsum(counts) - counts
        return self._read(lo, counts) @ q.T, starts.astype(np.int64)

    def _read(self, lo: NDArray[np.int64], counts: NDArray[np.int64]) -> NDArray[np.float32]:
        """The rows of runs of documents (``counts[i]`` rows from place ``lo[i]``), in
        order: from the file when there is a ``reader``, one run a document."""
        if self.reader is not None and self._order is None:
            return self.reader.read(lo, counts)
        local = np.cumsum(counts) - counts
        positions = np.repeat(lo - local, counts) + np.arange(int(counts.sum()))
        rows = positions if self._order is None else self._order[positions]
        if self.reader is not None:  # a file of an older export: a run a row
            return self.reader.read(rows, np.ones(len(rows), dtype=np.int64))
        return np.asarray(self.matrix[rows], dtype=np.float32)

    def _org_hit(self, d: int, chunk: int, score: Any) -> DocumentHit:
        """Document ``d``'s hit: its ``chunk``-th row (in chunk order) scored ``score``."""
        docs = self.documents
        assert docs is not None
        place = int(self._starts[d]) + chunk
        row = place if self._order is None else int(self._order[place])
        record = DocumentRecord.from_row(Row(docs, row))
        value = float(score)
        return DocumentHit(record, value, int(docs.chunk[row]), value)

    def _blocking(
        self, kinds: Sequence[Kind] | None, excluded: frozenset[str]
    ) -> NDArray[np.bool_] | None:
        """The documents no question ranks: not of ``kinds``, or at ``excluded`` (kept for
        the last few pairs asked: a project's excluded set is one object a snapshot)."""
        allowed = frozenset(kinds or ())
        if not allowed and not excluded:
            return None
        key = (allowed, excluded)
        with self._lock:
            found = self._blocked.get(key)
        if found is not None:
            return found
        docs = self.documents
        assert docs is not None
        found = np.zeros(len(docs), dtype=np.bool_)
        if allowed:
            codes = [i for i, k in enumerate(self._kind_names) if k in allowed]
            found |= ~np.isin(self._kind_code, np.asarray(codes, dtype=np.int8))
        found[[docs.index[p] for p in excluded if p in docs.index]] = True
        with self._lock:
            if len(self._blocked) >= 16:
                self._blocked.clear()
            self._blocked[key] = found
        return found

    def chunks_of(self, path: str) -> NDArray[np.float32]:
        """The chunk vectors of one document, in row order (empty when it is not in the
        snapshot)."""
        docs = self.documents
        d = docs.index.get(path) if docs is not None else None
        if d is None:
            return np.zeros((0, self.matrix.shape[1]), dtype=np.float32)
        lo = self._starts[d : d + 1]
        return self._read(lo, self._starts[d + 1 : d + 2] - lo)

    def decision_vector(self, path: str) -> NDArray[np.float32] | None:
        """The document's first chunk (an org snapshot holds no conversations)."""
        docs = self.documents
        rows = self._rows(path).tolist()
        for k, row in enumerate(rows):
            if docs is not None and int(docs.chunk[row]) == 0:
                return np.asarray(self.chunks_of(path)[k], dtype=np.float32)
        return None

    def _paths_index(self, paths: list[str]) -> Mapping[str, int]:
        """The documents' own index when the subset holds them all in their order (the
        org key's does): 1.7 MiB not made twice at 30,000 records."""
        docs = self.documents
        if docs is not None and paths == docs.paths:
            return docs.index
        return super()._paths_index(paths)

    def _rows(self, path: str) -> NDArray[np.int64]:
        """Document ``path``'s rows, in row order (none when it is not in the snapshot)."""
        docs = self.documents
        d = docs.index.get(path) if docs is not None else None
        if docs is None or d is None:
            return np.zeros(0, dtype=np.int64)
        lo, hi = int(self._starts[d]), int(self._starts[d + 1])
        return np.arange(lo, hi) if self._order is None else self._order[lo:hi]
