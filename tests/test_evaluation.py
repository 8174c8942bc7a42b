"""`precedents eval` plumbing: the set format, and the real shared sets laid out in it
(fake embedder: fast; quality is measured by `make eval` with the real model and
recorded in docs/eval.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from precedents.config import Thresholds, load_settings
from precedents.errors import UsageError
from precedents.evaluation.core import EvalRun, prepare, score, tune
from scripts.shared_eval_sets import assemble

from .conftest import FakeEmbedder, shared_path


def test_shared_sets_assemble_rank_and_score(home: Path, tmp_path: Path) -> None:
    # scripts/shared_eval_sets.py, the repository tooling `make eval` runs.
    sets = assemble(shared_path(), tmp_path / "sets")
    assert [s.name for s in sets] == ["dev", "situational", "crosslingual"]
    run = prepare(load_settings(), sets, embedder=FakeEmbedder())  # type: ignore[arg-type]
    kinds: dict[tuple[str, str, bool], int] = {}
    for r in run.ranked:
        key = (r.message.group, r.message.kind, r.message.padded)
        kinds[key] = kinds.get(key, 0) + 1
    assert kinds == {
        ("dev", "paraphrase", False): 30,
        ("dev", "unrelated", False): 20,
        ("situational", "situational", False): 40,
        ("situational", "superseded_trap", False): 10,
        ("situational", "unrelated", False): 30,
        ("situational", "unrelated", True): 30,
        ("crosslingual", "paraphrase", False): 10,
    }
    ranked_ids = {i for r in run.ranked if r.message.group == "situational" for i in r.ids}
    assert any(i.startswith("adrs/") for i in ranked_ids)
    assert any(i.startswith("rules/") for i in ranked_ids)
    # The dev set is its notes alone: its unrelated messages were checked against them.
    dev = [r for r in run.ranked if r.message.group == "dev"]
    assert all(h.record.kind == "note" for r in dev for h in r.hits)
    # Each set is its own store: crosslingual questions only see the Japanese copies.
    cross = [r for r in run.ranked if r.message.group == "crosslingual"]
    assert all(
        h.record.kind == "note" and "crosslingual" in h.record.path for r in cross for h in r.hits
    )
    # Everything is shown (no threshold): a replaced ADR is still never shown unmarked.
    figures = score(run, Thresholds(min_top=-1.0, min_gap=-1.0, wide_gap=-1.0, near_top=2.0))
    assert figures["trap: not shown unmarked"] == {"ok": 10, "n": 10, "rate": 1.0}
    assert (
        figures["trap: handled (marked with successor, or successor shown; marked if none)"]["n"]
        == 10
    )
    assert figures["unrelated (all): nothing injected"]["ok"] == 0
    assert figures["unrelated (situational, padded): nothing injected"]["n"] == 30
    best, tuned = tune(run, grid=((0.2, 0.9), (0.0,), (0.1,)))
    assert best.min_top == 0.9
    # The bar holds for each unrelated group, not only for all of them together.
    assert all(v["rate"] >= 0.85 for k, v in tuned.items() if k.startswith("unrelated ("))


def tiny_set(folder: Path, messages: list[object]) -> Path:
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "money.md").write_text(
        "---\nname: money as integer cents\ndescription: never floats for prices\n---\n"
        "Store every amount as integer cents; floats lose pennies.\n"
    )
    (folder / "messages.jsonl").write_text(
        "".join((m if isinstance(m, str) else json.dumps(m)) + "\n" for m in messages)
    )
    return folder


def asks_money(id_: str, text: str) -> dict[str, object]:
    """A reworded question whose answer is tiny_set's one note."""
    return {"id": id_, "text": text, "kind": "paraphrase", "expected": ["notes/money.md"]}


def fake_run(folder: Path, embedder: FakeEmbedder | None = None) -> EvalRun:
    """The set ranked with the fast fake embedder (logic only)."""
    return prepare(load_settings(), [folder], embedder=embedder or FakeEmbedder())  # type: ignore[arg-type]


def test_a_user_set_is_scored_by_group(home: Path, tmp_path: Path) -> None:
    folder = tiny_set(
        tmp_path / "mine",
        [
            asks_money("a", "can I keep prices as floats?"),
            {"id": "b", "text": "rename the CI job", "kind": "unrelated"},
        ],
    )
    run = fake_run(folder)
    figures = score(run, Thresholds(min_top=-1.0, min_gap=-1.0, wide_gap=-1.0, near_top=2.0))
    assert figures["mine: right note first"]["ok"] == 1  # the only record is first
    assert figures["unrelated (mine): nothing injected"] == {"ok": 0, "n": 1, "rate": 0.0}
    assert not (folder / ".git").exists()  # the set folder is never written to


def test_tune_keeps_each_unrelated_group_quiet(home: Path, tmp_path: Path) -> None:
    words = "store every amount as integer cents floats lose pennies"
    folder = tiny_set(
        tmp_path / "mine",
        [
            asks_money("p1", words),
            asks_money("p2", "cents pennies, and what about the tax rounding rules in reports"),
            # As close to the note as p2: quiet only where p2 is not injected either.
            {
                "id": "loud",
                "text": "cents pennies, and the tax report layout",
                "kind": "unrelated",
                "group": "near",
            },
            *(
                {"id": f"q{i}", "text": f"rename job {i} in the pipeline", "kind": "unrelated"}
                for i in range(9)
            ),
        ],
    )
    run = fake_run(folder)
    grid = ((0.2, 0.8), (0.0,), (0.0,))
    best, tuned = tune(run, grid=grid)
    # All unrelated together are 9/10 quiet at 0.2, which injects both questions;
    # the "near" group alone is 0/1 there, so the stricter point is chosen.
    assert (
        score(run, Thresholds(0.2, 0.0, 0.0, 0.05))["unrelated (all): nothing injected"]["ok"] == 9
    )
    assert best.min_top == 0.8
    assert tuned["unrelated (near): nothing injected"]["ok"] == 1
    assert tuned["mine: right note injected"]["ok"] == 1


def test_tune_works_on_a_set_without_unrelated_messages(home: Path, tmp_path: Path) -> None:
    folder = tiny_set(tmp_path / "mine", [asks_money("a", "prices as floats?")])
    run = fake_run(folder)
    best, tuned = tune(run, grid=((0.0, 0.99), (0.0,), (0.0,)))
    assert best.min_top == 0.0 and tuned["mine: right note injected"]["ok"] == 1


def test_a_part_removed_from_a_set_leaves_its_store(home: Path, tmp_path: Path) -> None:
    folder = tiny_set(
        tmp_path / "mine", [{"id": "b", "text": "rename the CI job", "kind": "unrelated"}]
    )
    (folder / "rules").mkdir()
    (folder / "rules" / "ci.md").write_text(
        "---\ndescription: CI jobs are named after the make target\n---\nName it.\n"
    )
    embedder = FakeEmbedder()
    run = fake_run(folder, embedder)
    assert {h.record.kind for h in run.ranked[0].hits} == {"note", "rule"}
    shutil.rmtree(folder / "rules")
    run = fake_run(folder, embedder)
    assert {h.record.kind for h in run.ranked[0].hits} == {"note"}


@pytest.mark.parametrize(
    ("messages", "error"),
    [
        (["{not json"], r"messages.jsonl:1: not JSON"),
        ([{"text": "x", "kind": "bogus"}], r"kind must be one of"),
        ([{"text": "x", "kind": "paraphrase"}], r"needs its expected record ids"),
        ([{"kind": "unrelated"}], r"not an object with a text"),
        ([], r"no messages"),
    ],
)
def test_a_malformed_set_is_one_clear_error(
    home: Path, tmp_path: Path, messages: list[object], error: str
) -> None:
    folder = tiny_set(tmp_path / "bad", messages)
    with pytest.raises(UsageError, match=error):
        prepare(load_settings(), [folder], embedder=FakeEmbedder())  # type: ignore[arg-type]


def test_a_folder_that_is_no_set_is_refused(home: Path, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="needs notes/, rules/, adrs/ or conversations/"):
        prepare(load_settings(), [tmp_path / "empty"], embedder=FakeEmbedder())  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="no such eval set folder"):
        prepare(load_settings(), [tmp_path / "missing"], embedder=FakeEmbedder())  # type: ignore[arg-type]


def test_a_trap_is_handled_by_a_mark_naming_its_successor_or_by_the_successor() -> None:
    from precedents.evaluation.core import Message, _tally

    trap = Message(
        "t1", "use the --input flag", "superseded_trap",
        trap="adrs/0045.md", successor="adrs/0057.md", group="situational",
    )  # fmt: skip
    key = "trap: handled (marked with successor, or successor shown; marked if none)"

    def handled(shown: dict[str, str]) -> bool:
        tally: dict[str, bool] = {}
        _tally(lambda k, ok: tally.__setitem__(k, ok), trap, [], shown)
        return tally[key]

    assert handled({"adrs/0045.md": "- adr  Input flag ⚠️superseded → ADR-0057 (0045.md)"})
    assert handled({"adrs/0057.md": "- adr  Positional input (0057.md)"})
    assert not handled({"adrs/0045.md": "- adr  Input flag ⚠️superseded (0045.md)"})
    assert not handled({})
    # A rejected decision has no successor: shown with its mark is all it can be.
    rejected = Message(
        "t2", "use cloud map", "superseded_trap", trap="adrs/0034.md", group="situational"
    )
    tally: dict[str, bool] = {}
    _tally(
        lambda k, ok: tally.__setitem__(k, ok),
        rejected,
        [],
        {"adrs/0034.md": "- adr  Cloud Map ⚠️rejected (0034.md)"},
    )
    assert tally[key]
    _tally(
        lambda k, ok: tally.__setitem__(k, ok),
        rejected,
        [],
        {"adrs/0034.md": "- adr  Cloud Map (0034.md)"},
    )
    assert not tally[key]
