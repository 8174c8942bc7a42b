"""The daemon's in-memory copy of the store's vectors, ranked with numpy.

Why not :meth:`Store.search` on every question: a flat LanceDB scan costs
8-12 ms at 10k chunks and 50-60 ms at 100k, plus ~1 ms to check for other
processes' commits; a numpy dot product over the same matrix is several
times faster (measured in bench/hook.py, figures in docs/benchmarks.md). The
scores are exact cosines (vectors are normalized), so the selection
thresholds apply unchanged.

The copy is refreshed by :class:`~precedents.recall.core.Recall` when
the chunk table's version changes; a snapshot is immutable, so a question
being answered keeps the snapshot it started with while a new one is built.

This is the only ranking code: the hook (through the daemon), `precedents
query`, `query --auto`, eval and the MCP server all rank here, so they can
never order the same question differently.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from threading import Lock
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from precedents.kinds import Kind
from precedents.recall.when import Window, day_of
from precedents.store.lexical import Lexical, Postings, document_texts
from precedents.store.rows import DocumentHit, DocumentRecord

if TYPE_CHECKING:
    from precedents.store import Store

# A question's multilingual vectors (one row each) and the calibration of their cosines.
MultilingualScores = tuple[
    NDArray[np.float32], Callable[[NDArray[np.float32]], NDArray[np.float32]]
]

# Enough document ranks for the selection gap (ranks 2..11) and a margin.
DOC_RANKS = 20
# What `query` lists of the conversations at most (when -k asks for no more).
CONVERSATION_RANKS = 3
# What the hook ranks, besides, of the conversations that settled something (they have
# a decision passage): one speaks on its own when it stands out among them (ranks
# 2..11, recall/selection.py).
DECIDED_RANKS = 12
# Decision commits rank in their own group (docs/commits.md): a project's history would
# otherwise crowd the notes, rules and ADRs out of the ranks the selection gap reads.
COMMIT_RANKS = 3


@dataclass(frozen=True)
class _Subset:
    """The rows of a set of project keys, grouped so each document's rows are contiguous."""

    matrix: NDArray[np.float32]  # the subset's vectors, document by document
    rows: NDArray[np.int64]  # snapshot row of each subset row
    starts: NDArray[np.int64]  # first subset row of each document (for reduceat)
    docs: NDArray[np.int64]  # indices of notes/rules/ADRs among the documents
    commits: NDArray[np.int64]  # indices of decision commits among the documents
    conversations: NDArray[np.int64]  # indices of conversations among the documents
    decided: NDArray[np.int64]  # those of the conversations with a decision passage
    multilingual_local: NDArray[np.int64]  # subset rows that also have a multilingual vector
    multilingual_matrix: NDArray[np.float32]  # those vectors, in the same order
    doc_of_path: Mapping[str, int]  # each document's index, by path
    lex_docs: NDArray[np.int64]  # each document's number in the word index (-1: none)
    days: NDArray[np.int64]  # each conversation's date as a day ordinal (-1: none)


@dataclass
class VectorSnapshot:
    """Every chunk of the store at one table version, as a matrix plus metadata."""

    version: Any
    # The chunk rows: dicts as the store gives them, or (the org's, recall/org.py) rows
    # read on demand from columns.
    meta: Sequence[Mapping[str, Any]]
    matrix: NDArray[np.float32]
    # Multilingual vectors of the chunks not in English (store/multilingual.py), by row.
    multilingual_vectors: dict[int, NDArray[np.float32]] = field(default_factory=dict)
    # The word index of the documents, numbered in the order they first appear in meta.
    lexical: Lexical | None = None
    _subsets: dict[tuple[str, ...], _Subset] = field(default_factory=dict)
    # Documents left out of every question, by the set of paths they were given as
    # (rank_many's ``excluded``: the org records a project must not see, recall/org.py).
    _masks: dict[tuple[tuple[str, ...], frozenset[str]], NDArray[np.int64]] = field(
        default_factory=dict
    )
    _rows_by_path: dict[str, list[int]] | None = None
    _lock: Lock = field(default_factory=Lock)

    @classmethod
    def load(cls, store: Store, projects: Sequence[str] | None = None) -> VectorSnapshot:
        """Every chunk of ``projects`` (default: every project) as the store holds it now."""
        version = store.version()
        wanted = sorted({p for (_, p) in store.counts()}) if projects is None else projects
        meta, matrix = store.all_vectors(wanted, text=True) if wanted else ([], None)
        if matrix is None:
            matrix = np.zeros((0, store.dimension), dtype=np.float32)
        texts = [str(m.pop("text", "") or "") for m in meta]
        _paths, documents = document_texts([m["path"] for m in meta], texts)
        ids, vectors = store.multilingual_vectors(wanted)
        return cls.from_parts(version, meta, matrix, ids, vectors, Postings.build(documents))

    @classmethod
    def from_parts(
        cls,
        version: Any,
        meta: Sequence[Mapping[str, Any]],
        matrix: NDArray[np.float32],
        multilingual_ids: Sequence[str],
        multilingual_vectors: NDArray[np.float32],
        words: Postings | None = None,
    ) -> VectorSnapshot:
        """A snapshot of chunk rows, their vectors, and the multilingual vectors of some
        chunks by chunk id (``doc_id#chunk_index``), as the store or its export holds them;
        ``words``: the word index of the documents, when there is one (one that does not
        fit the rows is dropped: vectors alone then rank)."""
        ids = multilingual_ids
        row_of = {f"{m['doc_id']}#{m['chunk_index']}": i for i, m in enumerate(meta)} if ids else {}
        by_row = {row_of[c]: multilingual_vectors[k] for k, c in enumerate(ids) if c in row_of}
        fits = words is not None and words.size == len({m["path"] for m in meta})
        lexical = Lexical(words) if words is not None and fits else None
        return cls(
            version=version,
            meta=meta,
            matrix=matrix,
            multilingual_vectors=by_row,
            lexical=lexical,
        )

    @property
    def multilingual(self) -> bool:
        """Whether any chunk has a multilingual vector (questions then need one too)."""
        return bool(self.multilingual_vectors)

    def chunks_of(self, path: str) -> NDArray[np.float32]:
        """The chunk vectors of one document (empty when it is not in the snapshot)."""
        with self._lock:
            if self._rows_by_path is None:
                by_path: dict[str, list[int]] = {}
                for i, m in enumerate(self.meta):
                    by_path.setdefault(m["path"], []).append(i)
                self._rows_by_path = by_path
            rows = self._rows_by_path.get(path, [])
        return self.matrix[rows]

    def decision_vector(self, path: str) -> NDArray[np.float32] | None:
        """A deciding chat's first chunk (its deciding exchange, ingest/chunking.py)."""
        self.chunks_of(path)  # builds the rows by path once
        assert self._rows_by_path is not None
        for row in self._rows_by_path.get(path, ()):
            if self.meta[row]["chunk_index"] == 0:
                return np.asarray(self.matrix[row], dtype=np.float32)
        return None

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
        by_doc: dict[str, list[int]] = {}
        word_doc: dict[str, int] = {}  # the word index numbers documents by first row
        for i, m in enumerate(self.meta):
            word_doc.setdefault(m["path"], len(word_doc))
            if m["project"] in wanted:
                by_doc.setdefault(m["doc_id"], []).append(i)
        rows: list[int] = []
        starts: list[int] = []
        docs: list[int] = []
        convs: list[int] = []
        commits: list[int] = []
        groups = {"conversation": convs, "commit": commits}
        for d, doc_rows in enumerate(by_doc.values()):
            starts.append(len(rows))
            rows.extend(doc_rows)
            groups.get(self.meta[doc_rows[0]]["kind"], docs).append(d)
        row_arr = np.asarray(rows, dtype=np.int64)
        local = [k for k, r in enumerate(rows) if r in self.multilingual_vectors]
        # Every row, in order (the org snapshot, a store of one project): the matrix
        # itself, not a copy of it (30,000 org records are 44 MiB).
        whole = len(rows) == len(self.meta) and bool((row_arr == np.arange(len(rows))).all())
        subset = _Subset(
            matrix=self.matrix if whole else np.ascontiguousarray(self.matrix[row_arr]),
            rows=row_arr,
            starts=np.asarray(starts, dtype=np.int64),
            docs=np.asarray(docs, dtype=np.int64),
            commits=np.asarray(commits, dtype=np.int64),
            conversations=np.asarray(convs, dtype=np.int64),
            decided=np.asarray(
                [d for d in convs if self.meta[rows[starts[d]]].get("decided")], dtype=np.int64
            ),
            multilingual_local=np.asarray(local, dtype=np.int64),
            multilingual_matrix=(
                np.stack([self.multilingual_vectors[rows[k]] for k in local]).astype(np.float32)
                if local
                else np.zeros((0, 0), dtype=np.float32)
            ),
            doc_of_path=self._paths_index(list(by_doc)),
            lex_docs=np.asarray(
                [word_doc.get(self.meta[r[0]]["path"], -1) for r in by_doc.values()],
                dtype=np.int64,
            ),
            days=np.asarray([_ordinal(self.meta[rows[starts[d]]]) for d in convs], dtype=np.int64),
        )
        with self._lock:
            self._subsets[key] = subset
        return subset

    def _paths_index(self, paths: list[str]) -> Mapping[str, int]:
        """Each of a subset's documents (``paths``, in order) by path."""
        return {p: d for d, p in enumerate(paths)}

    def warm(self, projects: Sequence[str]) -> None:
        """Build the row subset of ``projects`` ahead of the first question."""
        self._subset(projects)

    def rank(
        self,
        vector: NDArray[np.float32],
        projects: Sequence[str],
        kinds: Sequence[Kind] | None = None,
        doc_ranks: int = DOC_RANKS,
        conversation_ranks: int = CONVERSATION_RANKS,
        multilingual: MultilingualScores | None = None,
        text: str = "",
        words: float = 0.0,
        when: Window | None = None,
        dates: float = 0.0,
    ) -> list[DocumentHit]:
        """Documents of ``projects`` by their best chunk's cosine, best first (with
        ``words``, a conversation also by the words of ``text``: :meth:`rank_many`).

        Returns the top ``doc_ranks`` notes/rules/ADRs and the top
        ``conversation_ranks`` conversations, merged in score order (ranked
        apart so that many long conversations cannot crowd the documents out).
        """
        q = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        texts = [text] if text else None
        return self.rank_many(
            q,
            projects,
            kinds,
            doc_ranks,
            conversation_ranks,
            multilingual,
            texts=texts,
            words=words,
            windows=[when],
            dates=dates,
        )[0]

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
        """:meth:`rank` for several query vectors (one row each) in one matrix product.

        ``multilingual`` (the questions' multilingual vectors and the calibration onto
        this model's scale) lets a chunk in another language score by the better
        of its two vectors (:mod:`precedents.recall.multilingual`). ``hidden``:
        per question, the paths of documents it must not rank (a rule waiting
        for its files, the session's own conversation log). ``texts`` and ``words``:
        a conversation ranks by its cosine plus ``words`` times its BM25 for the
        question, scaled by the best among the conversations ranked
        (``Thresholds.conversation_words``, docs/locomo.md); notes, rules and ADRs
        keep their cosine order, on which their selection is calibrated.
        ``decided_ranks``: besides, the top conversations among those with a decision
        passage (the hook's own rule for chats, recall/selection.py).
        ``windows`` and ``dates``: per question, the days its date words name
        (:mod:`precedents.recall.when`); a conversation dated inside ranks
        ``dates`` higher (``Thresholds.conversation_dates``). Every hit's score
        stays its exact cosine: only the order changes. ``excluded``: paths no
        question ranks (their documents are found once per set of paths).
        """
        sub = self._subset(projects)
        if not len(sub.rows):
            return [[] for _ in range(len(vectors))]
        scores_all = sub.matrix @ np.asarray(vectors, dtype=np.float32).T  # rows x queries
        if multilingual is not None and len(sub.multilingual_local):
            q2, calibrate = multilingual
            extra = calibrate(sub.multilingual_matrix @ np.asarray(q2, dtype=np.float32).T)
            local = sub.multilingual_local
            scores_all[local] = np.maximum(scores_all[local], extra)
        # Best chunk per document: documents' rows are contiguous, so one reduceat.
        best_all = np.maximum.reduceat(scores_all, sub.starts, axis=0)  # docs x queries
        allowed = set(kinds) if kinds else None
        if excluded:
            best_all[self._mask(projects, sub, excluded)] = -np.inf
        out = []
        for j in range(scores_all.shape[1]):
            scores, best = scores_all[:, j], best_all[:, j]
            masked = [
                sub.doc_of_path[p] for p in (hidden[j] if hidden else ()) if p in sub.doc_of_path
            ]
            if masked:
                best = best.copy()
                best[masked] = -np.inf
            key = self._with_words(sub, best, texts[j] if texts else "", words)
            key = _with_dates(sub, key, windows[j] if windows else None, dates)
            picks: list[tuple[float, int]] = []
            groups = (
                (sub.docs, doc_ranks),
                (sub.conversations, conversation_ranks),
                (sub.commits, COMMIT_RANKS),
            )
            for group, limit in groups:
                picks += self._top(sub, group, key, limit, allowed)
            if decided_ranks:
                taken = {d for _, d in picks}
                more = self._top(sub, sub.decided, key, decided_ranks, allowed)
                picks += [p for p in more if p[1] not in taken]
            picks.sort(key=lambda p: -p[0])
            out.append([self._hit(sub, scores, d, k) for k, d in picks])
        return out

    def _mask(
        self, projects: Sequence[str], sub: _Subset, paths: frozenset[str]
    ) -> NDArray[np.int64]:
        """The documents of ``sub`` at ``paths`` (kept for the last few sets asked)."""
        key = (tuple(sorted(set(projects))), paths)
        with self._lock:
            found = self._masks.get(key)
        if found is not None:
            return found
        of = sub.doc_of_path
        found = np.asarray([of[p] for p in paths if p in of], dtype=np.int64)
        with self._lock:
            if len(self._masks) >= 16:
                self._masks.clear()
            self._masks[key] = found
        return found

    def _with_words(
        self, sub: _Subset, best: NDArray[np.float32], text: str, weight: float
    ) -> NDArray[np.float32]:
        """The ranking key of each document: its cosine, plus for conversations
        ``weight`` times their BM25, scaled by the best conversation's."""
        group = sub.conversations
        if self.lexical is None or not text or not weight or not len(group):
            return best
        docs = sub.lex_docs[group]
        indexed = docs >= 0
        words = np.zeros(len(group), dtype=np.float32)
        words[indexed] = self.lexical.scores(text, docs[indexed])
        top = float(words.max())
        if top <= 0:
            return best
        key = best.copy()
        key[group] += weight * words / top
        return key

    def _top(
        self,
        sub: _Subset,
        group: NDArray[np.int64],
        best: NDArray[np.float32],
        limit: int,
        allowed: set[Kind] | None,
    ) -> list[tuple[float, int]]:
        if not len(group) or limit <= 0:
            return []
        if allowed is not None:
            group = np.asarray(
                [d for d in group.tolist() if self._kind(sub, d) in allowed], dtype=np.int64
            )
            if not len(group):
                return []
        scores = best[group]
        if len(group) > limit:
            part = np.argpartition(-scores, limit - 1)[:limit]
        else:
            part = np.arange(len(group))
        order = part[np.argsort(-scores[part], kind="stable")]
        return [(float(scores[k]), int(group[k])) for k in order.tolist() if scores[k] > -np.inf]

    def _kind(self, sub: _Subset, doc: int) -> str:
        return str(self.meta[int(sub.rows[sub.starts[doc]])]["kind"])

    def _hit(
        self, sub: _Subset, scores: NDArray[np.float32], doc: int, key: float | None = None
    ) -> DocumentHit:
        start = int(sub.starts[doc])
        end = int(sub.starts[doc + 1]) if doc + 1 < len(sub.starts) else len(sub.rows)
        local = start + int(np.argmax(scores[start:end]))
        m = self.meta[int(sub.rows[local])]
        record = DocumentRecord.from_row(m)
        return DocumentHit(record, float(scores[local]), int(m["chunk_index"]), key)


def search(
    store: Store,
    vector: NDArray[np.float32],
    projects: Sequence[str] | None,
    k: int = 10,
    kinds: Sequence[Kind] | None = None,
) -> list[DocumentHit]:
    """One ranking straight from a store: the top ``k`` documents of ``projects``.

    For one-off callers (tests, benchmarks) that hold no snapshot; it ranks
    with :meth:`VectorSnapshot.rank`, like everything else.
    """
    snapshot = VectorSnapshot.load(store, projects)
    keys = sorted({m["project"] for m in snapshot.meta})
    ranks = max(k, DOC_RANKS)
    return snapshot.rank(vector, keys, kinds, ranks, max(k, CONVERSATION_RANKS))[:k]


def merged(
    first: list[DocumentHit], second: list[DocumentHit], doc_ranks: int = DOC_RANKS
) -> list[DocumentHit]:
    """Two rankings of one question (the project's records, the org's: recall/org.py) as
    one, in the order each was ranked by, with at most ``doc_ranks`` notes, rules and
    ADRs (what one ranking gives: the selection's gap is read on those ranks)."""
    if not second:
        return first
    if not first:
        return second
    out: list[DocumentHit] = []
    docs = 0
    for hit in sorted([*first, *second], key=lambda h: -h.rank_key):
        if hit.record.kind not in _GROUPED:
            docs += 1
            if docs > doc_ranks:
                continue
        out.append(hit)
    return out


_GROUPED = ("conversation", "commit")  # ranked in groups of their own (rank_many)

EMPTY = VectorSnapshot(version=None, meta=[], matrix=np.zeros((0, 0), dtype=np.float32))


def _ordinal(meta: Mapping[str, Any]) -> int:
    day = day_of(str(meta.get("date") or ""))
    return -1 if day is None else day.toordinal()


def _with_dates(
    sub: _Subset, key: NDArray[np.float32], when: Window | None, weight: float
) -> NDArray[np.float32]:
    """``key`` with the conversations dated inside ``when`` raised by ``weight``."""
    if when is None or not weight or not len(sub.conversations):
        return key
    inside = (sub.days >= when.start.toordinal()) & (sub.days <= when.end.toordinal())
    if not inside.any():
        return key
    key = key.copy()
    key[sub.conversations[inside]] += weight
    return key
