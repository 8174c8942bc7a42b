"""precedents_research.decisions_cv: folds that keep each kind of message spread evenly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from precedents_research import decisions_set
from precedents_research.decisions_cv import folds_of


@dataclass
class _Message:
    kind: str


@dataclass
class _Ranked:
    message: _Message


@dataclass
class _Run:
    ranked: list[Any]


def test_every_fold_holds_every_kind_and_nothing_is_lost() -> None:
    ranked = [_Ranked(_Message("situational")) for _ in range(31)]
    ranked += [_Ranked(_Message("unrelated")) for _ in range(30)]
    folds = folds_of(_Run(ranked), 5)  # type: ignore[arg-type]
    assert sum(len(f.ranked) for f in folds) == 61
    for fold in folds:
        kinds = [r.message.kind for r in fold.ranked]
        assert 6 <= kinds.count("situational") <= 7 and kinds.count("unrelated") == 6


def test_the_set_material_keeps_its_source_and_licence() -> None:
    data = decisions_set.DATA
    assert (data / "SOURCE.md").is_file() and (data / "LICENSE-urllib3-MIT.txt").is_file()
