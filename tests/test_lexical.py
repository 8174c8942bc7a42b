"""Words next to vectors: the BM25 word index, its cache, and conversations ranked by both.

BM25 is checked against a plain reference written here from the formula;
the ranking through the real store, export file and daemon snapshot is
checked against the in-process one, and LoCoMo measures it (docs/locomo.md).
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from precedents.store.lexical import K1, B, Lexical, Postings, TermCache
from precedents.text import tokens

DOCS = [
    ["Melanie: I signed up for the pottery class on Tuesday", "Caroline: nice, pottery!"],
    ["Caroline went to the LGBTQ support group meeting yesterday"],
    ["The Stripe webhook retries failed payments", "stripe_webhook.py handles it"],
    ["Nothing here but small talk about the weather"],
]


def reference_bm25(query: str, docs: list[list[str]]) -> list[float]:
    """BM25 from the textbook formula, over whole documents."""
    bags = [Counter(t for text in d for t in tokens(text)) for d in docs]
    lengths = [sum(b.values()) for b in bags]
    average = sum(lengths) / len(bags)
    out = []
    for bag, length in zip(bags, lengths, strict=True):
        score = 0.0
        for term in set(tokens(query)):
            df = sum(1 for b in bags if term in b)
            if not df:
                continue
            idf = math.log(1 + (len(bags) - df + 0.5) / (df + 0.5))
            tf = bag[term]
            score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))
        out.append(score)
    return out


def test_tokens_lower_stop_and_stem() -> None:
    assert tokens("The Meetings were MEETING at 10am; ok?") == ["meet", "meet", "10am", "ok"]
    assert tokens("classes class boxes this watches") == ["class", "class", "box", "watch"]
    assert tokens("stripe_webhook.py") == ["stripe", "webhook", "py"]
    assert tokens("Café crème brûlée") == ["café", "crème", "brûlée"]
    assert tokens("") == [] and tokens("a an the of") == []


@pytest.mark.parametrize(
    "query",
    ["pottery class Tuesday", "stripe webhook", "support group", "weather", "unknown words"],
)
def test_bm25_matches_the_formula(query: str) -> None:
    lexical = Lexical(Postings.build(DOCS))
    got = lexical.scores(query, np.arange(len(DOCS)))
    assert np.allclose(got, reference_bm25(query, DOCS), atol=1e-5)


def test_scores_within_a_subset_use_that_subsets_statistics() -> None:
    lexical = Lexical(Postings.build(DOCS))
    subset = np.asarray([2, 3])
    got = lexical.scores("stripe webhook weather", subset)
    assert np.allclose(got, reference_bm25("stripe webhook weather", [DOCS[2], DOCS[3]]), atol=1e-5)


def test_arrays_round_trip_and_bad_arrays_are_refused() -> None:
    postings = Postings.build(DOCS)
    again = Postings.from_arrays(postings.to_arrays())
    assert again.vocabulary == postings.vocabulary and np.array_equal(again.docs, postings.docs)
    broken = postings.to_arrays()
    broken["lex_indptr"] = broken["lex_indptr"][:-1]
    with pytest.raises(ValueError):
        Postings.from_arrays(broken)
    empty = Postings.build([])
    assert Postings.from_arrays(empty.to_arrays()).size == 0


def test_the_term_cache_counts_a_document_once_per_content(tmp_path: Path) -> None:
    cache_file = tmp_path / "terms.npz"
    first = TermCache.load(cache_file)  # missing: empty
    key = TermCache.key("/a.md", "h1")
    assert first.counts(key, ["pottery pottery class"]) == Counter({"pottery": 2, "class": 1})
    first.save(cache_file)
    second = TermCache.load(cache_file)
    # The same path and hash: the stored counts, whatever texts come with it.
    assert second.counts(key, ["entirely different"]) == Counter({"pottery": 2, "class": 1})
    assert second.counts(TermCache.key("/a.md", "h2"), ["new words"]) == Counter(
        {"new": 1, "word": 1}
    )
    second.save(cache_file)
    third = TermCache.load(cache_file)
    assert third.counts(key, ["x y z"]) == Counter({"pottery": 2, "class": 1})
    cache_file.write_bytes(b"not an npz")
    assert TermCache.load(cache_file).counts(key, ["zz top"]) == Counter({"zz": 1, "top": 1})


def test_assembled_postings_equal_built_ones() -> None:
    built = Postings.build(DOCS)
    assembled = Postings.assemble([Counter(t for x in d for t in tokens(x)) for d in DOCS])
    assert built.vocabulary == assembled.vocabulary
    for a, b in zip(built.to_arrays().values(), assembled.to_arrays().values(), strict=True):
        assert np.array_equal(a, b)


def conversation_rows(texts: dict[str, list[str]]) -> list[dict[str, Any]]:
    rows = []
    for path, chunks in texts.items():
        for i, _ in enumerate(chunks):
            rows.append(
                {
                    "doc_id": path,
                    "kind": "conversation",
                    "project": "/p",
                    "path": path,
                    "name": path,
                    "description": "",
                    "date": "",
                    "adr_id": "",
                    "chunk_index": i,
                }
            )
    return rows


def test_a_conversation_naming_the_words_ranks_first_and_keeps_its_cosine() -> None:
    from precedents.recall.vectors import VectorSnapshot

    texts = {
        "/p/a.jsonl": ["we talked about dinner plans"],
        "/p/b.jsonl": ["Priya's greyhound Biscuit loves the beach"],
        "/p/c.jsonl": ["the weather was lovely"],
    }
    rows = conversation_rows(texts)
    matrix = np.eye(3, 8, dtype=np.float32)
    query = np.asarray([0.7, 0.6, 0.1, 0, 0, 0, 0, 0], dtype=np.float32)  # favours a.jsonl
    query /= np.linalg.norm(query)
    words = Postings.build(texts.values())
    snap = VectorSnapshot.from_parts("v", rows, matrix, [], np.zeros((0, 0), np.float32), words)
    text = "what is the name of Priya's greyhound?"
    plain = snap.rank(query, ["/p"], ("conversation",), 20, 3, None, text, 0.0)
    assert plain[0].record.path == "/p/a.jsonl"
    mixed = snap.rank(query, ["/p"], ("conversation",), 20, 3, None, text, 0.4)
    assert mixed[0].record.path == "/p/b.jsonl"
    cosines = {h.record.path: h.score for h in plain}
    assert {h.record.path: h.score for h in mixed} == cosines  # scores stay cosines
    # An index that does not fit the rows is dropped: vectors alone, no error.
    broken = words.to_arrays()
    broken["lex_lengths"] = broken["lex_lengths"][:1]
    assert Postings.read(broken) is None and Postings.read({}) is None
    short = Postings.build(list(texts.values())[:2])  # fewer documents than the rows hold
    odd = VectorSnapshot.from_parts("v", rows, matrix, [], np.zeros((0, 0), np.float32), short)
    assert odd.lexical is None
    assert odd.rank(query, ["/p"], ("conversation",), 20, 3, None, text, 0.4)[0].record.path == (
        "/p/a.jsonl"
    )
