"""The suspect check against real attacks and real benign text (issue #28, item 6).

* Attacks: tests/fixtures/suspect-corpus (SOURCE.md): the issue's payload kinds and
  CyberSecEval's prompt injections, split into the part the check was written against
  (``train``) and a held-out part never read while writing it. Every targeted training
  attack is flagged but one (named below); the held-out figure is kept from falling.
* Benign text: the 597 real rule files and 425 real ADRs of tests/fixtures/rules-wild
  and adr-wild, read the way records are (the indexer's name and description, the file
  name; for an ADR also every paragraph of its text, which the ADR tools show): none is
  flagged.

docs/daemon.md ("Stored text is data") reports the figures.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from precedents.inert import path_words, suspect_reason

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ATTACKS = FIXTURES / "suspect-corpus" / "attacks.json"
# Targeted training attacks the check misses, and why (docs/daemon.md): persuasion
# through an invented authority, with no order of a kind the check reads.
MISSED = {"cyberseceval/en/42"}
# Held-out: 29 of 57 flagged when the check was written (2026-12-02). Of the training
# half, 14 of 59 CyberSecEval texts hold no order the check targets (a bare question,
# a task hijack in a code comment), so about a quarter of these are out of reach.
HELDOUT_FLOOR = 29
PARAGRAPH = re.compile(r"\n[ \t]*\n")  # as adr_graph/view.py cuts an ADR's text


def attacks() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(ATTACKS.read_text(encoding="utf-8"))
    return rows


def test_the_corpus_is_as_its_source_note_says() -> None:
    rows = attacks()
    assert len(rows) == 195
    assert {r["split"] for r in rows} == {"train", "heldout"}
    assert sum(r["split"] == "heldout" for r in rows) == 57
    assert all("targeted" not in r for r in rows if r["split"] == "heldout")
    issue = [r for r in rows if r["id"].startswith("issue28/")]
    assert len(issue) == 79 and all(r["split"] == "train" and r["targeted"] for r in issue)


def test_every_targeted_training_attack_is_flagged() -> None:
    suspect_reason.cache_clear()
    missed = {
        r["id"]
        for r in attacks()
        if r["split"] == "train" and r["targeted"] and not suspect_reason(r["text"])
    }
    assert missed == MISSED


def test_the_held_out_attacks_are_flagged_as_often_as_measured() -> None:
    suspect_reason.cache_clear()
    heldout = [r for r in attacks() if r["split"] == "heldout"]
    found = sum(bool(suspect_reason(r["text"])) for r in heldout)
    assert found >= HELDOUT_FLOOR, (found, len(heldout))


def _real(folder: str, adr: bool) -> list[tuple[Path, tuple[str, ...], list[str]]]:
    """(file, the fields a hook reads, the paragraphs the ADR tools show) of every real
    rule or ADR file of ``folder``, read as the indexer reads it."""
    from precedents.ingest.chunking import adr_summary, parse_note
    from precedents.secrets.mask import mask_secrets

    root = FIXTURES / folder
    out = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.name in ("SOURCE.json", "README.md", "label.mjs"):
            continue
        if path.suffix in (".jsonl", ".json") or path.name.startswith("UPSTREAM-LICENSE"):
            continue
        if not adr and "tree" not in path.relative_to(root).parts:
            continue
        meta = parse_note(
            mask_secrets(path.read_text(encoding="utf-8", errors="replace")), path.stem
        )
        description = (adr_summary(meta.body) or meta.description) if adr else meta.description
        paragraphs = [p for p in PARAGRAPH.split(meta.body) if p.strip()] if adr else []
        out.append((path, (meta.name, description, path_words(str(path))), paragraphs))
    return out


@pytest.mark.parametrize(
    ("folder", "adr", "least"), [("rules-wild", False, 597), ("adr-wild", True, 425)]
)
def test_no_real_rule_or_adr_is_flagged(folder: str, adr: bool, least: int) -> None:
    """Rules are full of imperatives aimed at the agent, READMEs-turned-rules of install
    commands, ADRs of curl, tokens and webhooks: none of them reads as orders."""
    suspect_reason.cache_clear()
    found = _real(folder, adr)
    assert len(found) >= least
    flagged = [(str(p), suspect_reason(*fields)) for p, fields, _ in found]
    flagged += [(str(p), suspect_reason(t)) for p, _, body in found for t in body]
    assert [f for f in flagged if f[1]] == []
