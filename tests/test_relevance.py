"""The learned relevance signal (issue #9): shipped in the package, loaded offline,
deciding with the adapted score while ranking stays the plain cosine."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from precedents.config import Thresholds
from precedents.recall.relevance import Relevance
from precedents.recall.selection import select
from precedents.store import DocumentHit, DocumentRecord

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import (  # noqa: E402
    RELATED,
    RELATED_NOTE,
    UNRELATED,
    DevState,
    settings_for,
)

pytest_plugins = ["tests.conftest_daemon"]

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def test_the_adapter_ships_for_the_bundled_model_only() -> None:
    rel = Relevance.for_model(MINILM)
    assert rel is not None and rel.matrix.shape == (384, 384) and rel.version == "minilm-v1"
    assert Relevance.for_model("BAAI/bge-m3") is None


def test_adapted_vectors_are_normalized_and_scores_take_the_best_chunk() -> None:
    rel = Relevance.for_model(MINILM)
    assert rel is not None
    rng = np.random.default_rng(0)
    q = rng.normal(size=(2, 384)).astype(np.float32)
    adapted = rel.adapt(q)
    assert np.allclose(np.linalg.norm(adapted, axis=1), 1.0, atol=1e-5)
    chunks = [adapted[:1], np.stack([-adapted[0], adapted[0]])]
    assert rel.score(adapted[0], chunks) == pytest.approx(1.0, abs=1e-5)
    assert rel.score(adapted[0], []) == -1.0


def hit(score: float) -> DocumentHit:
    return DocumentHit(DocumentRecord("note", "/p", f"/p/{score}.md", "n"), score, 0)


def test_below_the_learned_threshold_nothing_is_injected() -> None:
    hits = [hit(0.9), hit(0.3), hit(0.2)]
    th = Thresholds(0.1, 0.0, 0.2, 0.05, min_relevance=0.6)
    assert select(hits, th, "/p", relevance=0.5).reason == "irrelevant"
    assert select(hits, th, "/p", relevance=0.7).injected
    assert select(hits, replace(th, min_relevance=None), "/p", relevance=0.1).injected
    assert select(hits, th, "/p", relevance=None).injected  # no adapter: cosine rules only


@pytest.mark.slow
def test_a_related_message_is_more_relevant_than_an_unrelated_one(
    dev_state: DevState, embedder: Any
) -> None:
    from precedents.recall import Recall

    recall = Recall(settings_for(dev_state.home), embedder)
    try:
        assert recall.relevance is not None
        _, related = recall.assess(RELATED, dev_state.project)
        _, unrelated = recall.assess(UNRELATED, dev_state.project)
    finally:
        recall.close()
    assert related is not None and unrelated is not None
    assert related > unrelated + 0.1


@pytest.mark.slow
def test_the_relevance_speaks_for_a_message_the_cosine_rules_leave_silent(
    dev_state: DevState, embedder: Any
) -> None:
    from precedents.recall import Recall
    from precedents.recall.selection import RELEVANCE_MARGIN

    recall = Recall(settings_for(dev_state.home), embedder)
    try:
        assert recall.thresholds.speak_relevance == 0.42  # MiniLM's default
        hits, relevance = recall.assess(RELATED, dev_state.project)
        assert relevance is not None
        # Cosine rules that cannot speak for this message, and a relevance bar it
        # just clears: the hook's own path shows the related note, reason "relevant".
        top = hits[0].score
        recall.thresholds = replace(
            recall.thresholds, min_top=top + RELEVANCE_MARGIN / 2, speak_relevance=relevance
        )
        answer = recall.context(RELATED, str(dev_state.project))
        assert answer.selection is not None and answer.selection.reason == "relevant"
        assert answer.context is not None and RELATED_NOTE in answer.context
        # The unrelated message stays below that bar: nothing.
        assert recall.context(UNRELATED, str(dev_state.project)).context is None
        recall.thresholds = replace(recall.thresholds, speak_relevance=None)
        assert recall.context(RELATED, str(dev_state.project)).context is None  # route off
    finally:
        recall.close()
