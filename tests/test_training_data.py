"""The relevance model's training data is disjoint from every evaluation set (issue #9).

The judge (`../shared/eval`, `../shared/adr-corpora`) must never have been
trained on: no training record or message may equal one of theirs (content
hash) or nearly duplicate one (shared word 5-grams), and none of the
repositories the evaluation sets come from may be a training source.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from .conftest import REPO, shared_path

TRAINING = REPO / "research" / "data"
PARTS = ("rules", "adrs", "notes", "multilingual")
EVAL_SOURCES = (
    "PatrickJS/awesome-cursorrules",
    "jbranchaud/til",
    "JabRef/jabref",
    "alphagov/govuk-aws",
    "alphagov/gsp",
    "elastisys/compliantkubernetes",
    "ministryofjustice/modernisation-platform",
    "thomvaill/log4brains",
)
NEAR = 0.5  # Jaccard of word 5-gram sets above which two texts count as near duplicates


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def shingles(text: str, n: int = 5) -> set[int]:
    w = words(text)
    if len(w) < n:
        return {hash(" ".join(w))} if w else set()
    return {hash(" ".join(w[i : i + n])) for i in range(len(w) - n + 1)}


def near_duplicates(ours: dict[str, str], theirs: dict[str, str]) -> list[tuple[str, str, float]]:
    """Pairs (ours, theirs) whose shingle sets overlap above :data:`NEAR` (inverted index)."""
    index: dict[int, list[str]] = defaultdict(list)
    their_sets = {k: shingles(v) for k, v in theirs.items()}
    for key, sh in their_sets.items():
        for h in sh:
            index[h].append(key)
    found = []
    for key, text in ours.items():
        sh = shingles(text)
        candidates = {c for h in sh for c in index.get(h, ())}
        for c in candidates:
            other = their_sets[c]
            jaccard = len(sh & other) / len(sh | other)
            if jaccard >= NEAR:
                found.append((key, c, round(jaccard, 2)))
    return found


def files(root: Path, suffixes: tuple[str, ...]) -> Iterator[Path]:
    return (p for p in root.rglob("*") if p.is_file() and p.suffix in suffixes)


def jsonl_texts(paths: Iterable[Path]) -> dict[str, str]:
    out = {}
    for path in paths:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                text = json.loads(line).get("text")
                if isinstance(text, str):
                    out[f"{path.parent.name}/{path.name}:{n}"] = text
    return out


@pytest.fixture(scope="module")
def training_records() -> dict[str, str]:
    out = {}
    for part in PARTS:
        for path in files(TRAINING / part / "records", (".md", ".mdc")):
            out[str(path.relative_to(TRAINING))] = path.read_text(
                encoding="utf-8", errors="replace"
            )
    assert len(out) > 300
    return out


@pytest.fixture(scope="module")
def eval_records() -> dict[str, str]:
    out = {}
    for root in (shared_path("eval"), shared_path("adr-corpora")):
        for path in files(root, (".md", ".mdc")):
            out[str(path)] = path.read_text(encoding="utf-8", errors="replace")
    assert len(out) > 500
    return out


def test_no_training_record_is_an_eval_record(
    training_records: dict[str, str], eval_records: dict[str, str]
) -> None:
    digest = {hashlib.sha256(t.encode()).hexdigest() for t in eval_records.values()}
    same = [
        k for k, t in training_records.items() if hashlib.sha256(t.encode()).hexdigest() in digest
    ]
    assert same == []
    assert near_duplicates(training_records, eval_records) == []


def test_no_training_message_is_an_eval_message() -> None:
    ours = jsonl_texts(TRAINING.rglob("*.jsonl"))
    theirs = jsonl_texts(shared_path("eval").rglob("*.jsonl"))
    assert len(ours) > 3000 and len(theirs) > 150
    normal = {" ".join(words(t)) for t in theirs.values()}
    assert [k for k, t in ours.items() if " ".join(words(t)) in normal] == []
    assert near_duplicates(ours, theirs) == []


def test_no_eval_source_is_a_training_source() -> None:
    for part in PARTS:
        text = (TRAINING / part / "SOURCE.md").read_text(encoding="utf-8").lower()
        # The sources are the table rows and the links; prose may name the
        # forbidden repositories to say they were avoided.
        rows = [line for line in text.splitlines() if line.startswith("|")]
        links = re.findall(r"github\.com/([\w.-]+/[\w.-]+)", text)
        assert rows, part
        for repo in EVAL_SOURCES:
            assert not any(repo.lower() in row for row in rows), (part, repo)
            assert repo.lower() not in links, (part, repo)


def test_the_near_duplicate_check_can_fail() -> None:
    text = "Keep user login sessions in Redis with a TTL equal to the session lifetime."
    assert near_duplicates({"a": text + " Really."}, {"b": text})
    assert not near_duplicates({"a": "something else entirely about queues"}, {"b": text})
