"""The ADR graph against the hand-labelled real corpora (SPEC §7: 100% agreement)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from precedents.adr_graph import STATUSES, build_graph

from .adr_labels import disagreements

CORPORA = Path(__file__).parents[2] / "shared" / "adr-corpora"
NAMES = (
    sorted(p.name for p in CORPORA.iterdir() if (p / "EXPECTED.json").is_file())
    if (CORPORA.is_dir())
    else []
)

pytestmark = pytest.mark.skipif(
    not NAMES, reason=f"ADR corpora not found at {CORPORA} (the shared folder next to the repo)"
)


@pytest.mark.parametrize("name", NAMES)
def test_corpus_agrees_with_every_label(name: str) -> None:
    corpus = CORPORA / name
    expected = json.loads((corpus / "EXPECTED.json").read_text(encoding="utf-8"))
    wrong = disagreements(corpus, expected)
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("name", NAMES)
def test_corpus_ids_titles_and_marks(name: str) -> None:
    corpus = CORPORA / name
    expected = json.loads((corpus / "EXPECTED.json").read_text(encoding="utf-8"))
    graph = build_graph(corpus)
    for path, label in expected.items():
        rec = graph.by_path[path]
        assert rec.title == label["title"], path
        assert rec.status in STATUSES
        if rec.status == "live":
            assert rec.mark == ""
        else:
            assert rec.mark, path
        if rec.status == "superseded":
            # Names its live end, or says it cannot: a successor the folder does not
            # hold is never named in a mark.
            assert rec.mark.startswith("⚠️superseded → ") or rec.mark in (
                "⚠️superseded (successor missing)",
                "⚠️superseded (successor not named)",
            ), rec.mark


def test_non_adr_files_listed_apart() -> None:
    for name in NAMES:
        corpus = CORPORA / name
        source = json.loads((corpus / "SOURCE.json").read_text(encoding="utf-8"))
        graph = build_graph(corpus)
        apart = {n.path for n in graph.non_adrs}
        for non_adr in source.get("non_adr_files", {}):
            assert non_adr in apart, (name, non_adr)


def test_renamed_successor_chain_reaches_live_end() -> None:
    graph = build_graph(CORPORA / "alphagov__gsp")
    rec = graph.by_path["ADR012-docker-image-repositories.md"]
    assert rec.mark == "⚠️superseded → ADR-046"
    packet = graph.chain("ADR012")
    assert packet["current"] == "046"
    assert packet["history"] == ["012", "028"]


def test_missing_successor_is_still_superseded_and_checked() -> None:
    graph = build_graph(CORPORA / "alphagov__gsp@50b3a9fa")
    assert graph.mark_of("004") == "⚠️superseded (successor missing)"
    kinds = {(f.kind, f.path) for f in graph.check()}
    assert ("dangling_link", "ADR004-tenant-isolation.md") in kinds
