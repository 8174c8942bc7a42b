"""`precedents eval` plumbing on the real shared sets (fake embedder: fast; quality is
measured by the command itself, with the real model, and recorded in docs/eval.md)."""

from __future__ import annotations

from pathlib import Path

from precedents.config import Thresholds, load_settings
from precedents.evaluation import prepare, score, tune

from .conftest import FakeEmbedder, shared_path


def test_eval_assembles_ranks_and_scores_every_set(home: Path) -> None:
    shared = shared_path()
    run = prepare(load_settings(), shared, embedder=FakeEmbedder())  # type: ignore[arg-type]
    kinds = {}
    for r in run.ranked:
        kinds[r.message.kind] = kinds.get(r.message.kind, 0) + 1
    assert kinds == {
        "paraphrase": 30,
        "unrelated": 50,
        "crosslingual": 10,
        "situational": 40,
        "superseded_trap": 10,
    }
    ranked_ids = {i for r in run.ranked for i in r.ids}
    assert any(i.startswith("adrs/") for i in ranked_ids)
    assert any(i.startswith("rules/") for i in ranked_ids)
    # Crosslingual questions search the copy with the Japanese notes, notes only.
    cross = [r for r in run.ranked if r.message.kind == "crosslingual"]
    assert all(
        h.record.kind == "note" and "crosslingual" in h.record.path for r in cross for h in r.hits
    )
    # Everything is shown (no threshold): a replaced ADR is still never shown unmarked.
    figures = score(run, Thresholds(min_top=-1.0, min_gap=-1.0, wide_gap=-1.0, near_top=2.0))
    assert figures["trap: not shown unmarked"] == {"ok": 10, "n": 10, "rate": 1.0}
    assert figures["unrelated (all): nothing injected"]["ok"] == 0
    best, tuned = tune(run, grid=((0.2, 0.9), (0.0,), (0.1,)))
    assert best.min_top == 0.9 and tuned["unrelated (all): nothing injected"]["rate"] >= 0.85
