"""precedents_research.eval_set: the training data laid out as one `precedents eval` set."""

from __future__ import annotations

import json
from pathlib import Path

from precedents_research import eval_set
from precedents_research.paths import DATA


def test_every_message_names_files_of_the_set(tmp_path: Path) -> None:
    out = eval_set.build(tmp_path / "train-set")
    rows = [json.loads(line) for line in (out / "messages.jsonl").read_text().splitlines()]
    kinds = {r["kind"] for r in rows}
    assert kinds == {"situational", "paraphrase", "superseded_trap", "unrelated"}
    named = {i for r in rows for i in [*r.get("expected", []), r.get("trap"), r.get("successor")]}
    missing = sorted(i for i in named if i and not (out / i).is_file())
    assert missing == []
    assert {p.name for p in out.iterdir()} == {"rules", "adrs", "notes", "messages.jsonl"}
    # A re-run copies nothing (a re-run of `precedents eval` then embeds nothing).
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    eval_set.build(out)
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == before


def test_the_data_keeps_its_sources_and_licences() -> None:
    for part in ("rules", "adrs", "notes", "multilingual"):
        assert (DATA / part / "SOURCE.md").is_file(), part
    for part in ("rules", "adrs", "notes"):
        assert any((DATA / part / "LICENSES").iterdir()), part
