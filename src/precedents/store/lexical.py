"""Words next to vectors: a BM25 index over whole documents, as plain arrays.

Built where the chunk text is (the export child, or a process that reads the
store itself) and handed to the daemon as arrays in the snapshot file, so the
daemon ranks by words without ever holding a record's text. A document is
every chunk of one file joined: a conversation scores by all its exchanges,
a note by its name, description and body.

Measured on LoCoMo (docs/locomo.md, issue #19): document-level BM25 with this
tokenizer (lower case, stop words out, a light suffix stem) found the
evidence sessions far better than the bundled model alone (R@5 84% against
69%), and fused with the cosine better still; the tokenizer is
:func:`precedents.text.tokens` (``check`` uses it too, without numpy).
Standard library, numpy and :mod:`precedents.text`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from precedents.store.snapshot_file import save_npz
from precedents.text import tokens

K1 = 1.2
B = 0.75


@dataclass(frozen=True)
class Postings:
    """Term -> (document, count) lists in CSR form; documents are numbered 0..n-1."""

    vocabulary: tuple[str, ...]
    indptr: NDArray[np.int64]  # term t's postings are docs[indptr[t]:indptr[t + 1]]
    docs: NDArray[np.int32]
    counts: NDArray[np.float32]
    lengths: NDArray[np.float32]  # terms per document

    @classmethod
    def build(cls, documents: Iterable[Iterable[str]]) -> Postings:
        """The postings of ``documents``, each given as the texts of its chunks."""
        return cls.assemble([count_terms(texts) for texts in documents])

    @classmethod
    def assemble(cls, counted: Sequence[Counter[str]]) -> Postings:
        """The postings of documents given as their term counts (see :class:`TermCache`)."""
        ids: dict[str, int] = {}
        terms: list[int] = []
        docs: list[int] = []
        counts: list[int] = []
        lengths = np.zeros(len(counted), dtype=np.float32)
        for d, doc in enumerate(counted):
            for term, n in doc.items():
                terms.append(ids.setdefault(term, len(ids)))
                docs.append(d)
                counts.append(n)
            lengths[d] = sum(doc.values())
        vocabulary = sorted(ids)
        rank = np.empty(len(ids), dtype=np.int64)
        rank[[ids[t] for t in vocabulary]] = np.arange(len(vocabulary))
        term_of = rank[np.asarray(terms, dtype=np.int64)] if terms else np.zeros(0, np.int64)
        order = np.argsort(term_of, kind="stable")
        indptr = np.zeros(len(vocabulary) + 1, dtype=np.int64)
        np.cumsum(np.bincount(term_of, minlength=len(vocabulary)), out=indptr[1:])
        return cls(
            tuple(vocabulary),
            indptr,
            np.asarray(docs, dtype=np.int32)[order],
            np.asarray(counts, dtype=np.float32)[order],
            lengths,
        )

    @property
    def size(self) -> int:
        """Documents indexed."""
        return len(self.lengths)

    def to_arrays(self) -> dict[str, NDArray[np.generic]]:
        """Arrays for an ``.npz`` (the vocabulary as one newline-joined UTF-8 block)."""
        words = "\n".join(self.vocabulary).encode("utf-8")
        return {
            "lex_vocabulary": np.frombuffer(words, dtype=np.uint8),
            "lex_indptr": self.indptr,
            "lex_docs": self.docs,
            "lex_counts": self.counts,
            "lex_lengths": self.lengths,
        }

    @classmethod
    def read(cls, arrays: dict[str, NDArray[np.generic]]) -> Postings | None:
        """:meth:`from_arrays`, or None when there are none or they do not fit together
        (an older or torn export: ranked by vectors alone until the next)."""
        if not arrays:
            return None
        try:
            return cls.from_arrays(arrays)
        except (KeyError, ValueError, UnicodeDecodeError):
            return None

    @classmethod
    def from_arrays(cls, arrays: dict[str, NDArray[np.generic]]) -> Postings:
        """The inverse of :meth:`to_arrays`; ValueError when they do not fit together."""
        raw = bytes(arrays["lex_vocabulary"]).decode("utf-8")
        vocabulary = tuple(raw.split("\n")) if raw else ()
        out = cls(
            vocabulary,
            np.asarray(arrays["lex_indptr"], dtype=np.int64),
            np.asarray(arrays["lex_docs"], dtype=np.int32),
            np.asarray(arrays["lex_counts"], dtype=np.float32),
            np.asarray(arrays["lex_lengths"], dtype=np.float32),
        )
        if len(out.indptr) != len(vocabulary) + 1 or int(out.indptr[-1]) != len(out.docs):
            raise ValueError("postings and vocabulary disagree")
        if len(out.docs) != len(out.counts) or (len(out.docs) and out.docs.max() >= out.size):
            raise ValueError("postings name documents that are not there")
        return out


class Lexical:
    """BM25 over a :class:`Postings`, scored within a subset of its documents."""

    def __init__(self, postings: Postings) -> None:
        self.postings = postings
        self._term_ids = {t: i for i, t in enumerate(postings.vocabulary)}

    def scores(self, query: str, subset: NDArray[np.int64]) -> NDArray[np.float32]:
        """BM25 of each document in ``subset`` (global document numbers) for ``query``,
        with document frequencies and lengths taken within the subset (a project's)."""
        out = np.zeros(len(subset), dtype=np.float32)
        p = self.postings
        terms = {self._term_ids[t] for t in tokens(query) if t in self._term_ids}
        if not terms or not len(subset):
            return out
        local = np.full(p.size, -1, dtype=np.int64)
        local[subset] = np.arange(len(subset))
        lengths = p.lengths[subset]
        average = float(lengths.mean()) or 1.0
        norm = K1 * (1 - B + B * lengths / average)
        n = len(subset)
        for t in terms:
            docs = local[p.docs[p.indptr[t] : p.indptr[t + 1]]]
            keep = docs >= 0
            if not keep.any():
                continue
            where = docs[keep]
            tf = p.counts[p.indptr[t] : p.indptr[t + 1]][keep]
            df = len(where)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            out[where] += idf * tf * (K1 + 1) / (tf + norm[where])
        return out


def count_terms(texts: Iterable[str]) -> Counter[str]:
    """The term counts of one document, given as the texts of its chunks."""
    counted: Counter[str] = Counter()
    for text in texts:
        counted.update(tokens(text))
    return counted


def document_texts(paths: Sequence[str], texts: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """Chunk rows (path, text) grouped into documents, in order of first appearance."""
    order: dict[str, list[str]] = {}
    for path, text in zip(paths, texts, strict=True):
        order.setdefault(path, []).append(text or "")
    return list(order), list(order.values())


class TermCache:
    """Term counts of documents by (path, content hash), kept between exports.

    Tokenizing is most of what the word index costs (0.55 s for 10k chunks of
    700 characters here); a document whose content did not change keeps its
    counts, so an export after one saved note tokenizes one note. The file is
    derived data in the state folder's cache (0600); any problem reading it
    means an empty cache, never an error.
    """

    def __init__(self, entries: dict[str, Counter[str]] | None = None) -> None:
        self._entries = entries or {}
        self._used: dict[str, Counter[str]] = {}

    @staticmethod
    def key(path: str, digest: str) -> str:
        """A document's cache key: its path and the hash of its content."""
        return f"{path}\0{digest}"

    def counts(self, key: str, texts: Iterable[str]) -> Counter[str]:
        """The cached counts of ``key``, else those of ``texts`` (kept for the next save)."""
        found = self._entries.get(key)
        if found is None:
            found = count_terms(texts)
        self._used[key] = found
        return found

    @classmethod
    def load(cls, path: Path) -> TermCache:
        """The cache saved at ``path`` (empty when missing or unreadable)."""
        try:
            with np.load(path, allow_pickle=False) as data:
                keys = bytes(data["keys"]).decode("utf-8").split("\n")
                vocabulary = bytes(data["vocabulary"]).decode("utf-8").split("\n")
                offsets = data["offsets"].tolist()
                terms = data["terms"].tolist()
                counts = data["counts"].tolist()
            entries = {
                key: Counter(
                    {vocabulary[t]: n for t, n in zip(terms[a:b], counts[a:b], strict=True)}
                )
                for key, a, b in zip(keys, offsets[:-1], offsets[1:], strict=True)
            }
        except (OSError, ValueError, KeyError, IndexError, UnicodeDecodeError, EOFError):
            return cls()
        return cls(entries)

    def save(self, path: Path) -> None:
        """Keep the counts used since loading (those of documents that are gone drop out)."""
        ids: dict[str, int] = {}
        terms: list[int] = []
        counts: list[int] = []
        offsets = [0]
        for counted in self._used.values():
            for term, n in counted.items():
                terms.append(ids.setdefault(term, len(ids)))
                counts.append(n)
            offsets.append(len(terms))
        arrays: dict[str, Any] = {
            "keys": np.frombuffer("\n".join(self._used).encode("utf-8"), dtype=np.uint8),
            "vocabulary": np.frombuffer("\n".join(ids).encode("utf-8"), dtype=np.uint8),
            "offsets": np.asarray(offsets, dtype=np.int64),
            "terms": np.asarray(terms, dtype=np.int32),
            "counts": np.asarray(counts, dtype=np.int32),
        }
        save_npz(path, arrays)
