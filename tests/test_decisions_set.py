"""The ``decisions`` dev set (tests/fixtures/decisions): valid, labelled, reproducible, disjoint.

No model: the set is read with the transcript parser, its labels are checked
against the files, the generator is run once and its output compared byte for
byte, and its text is checked against the evaluation sets in ``../shared``.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

from precedents.evaluation.core import load_messages
from precedents.ingest.conversations import Conversation, parse_conversation

from .conftest import REPO, shared_path

SET = REPO / "tests" / "fixtures" / "decisions"
GENERATOR = REPO / "research" / "precedents_research" / "decisions_set.py"
WORD = re.compile(r"[a-z0-9_']+")


def _words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def _grams(text: str, n: int) -> set[tuple[str, ...]]:
    w = _words(text)
    return {tuple(w[i : i + n]) for i in range(len(w) - n + 1)}


@cache
def _chats() -> dict[str, Conversation]:
    return {
        f"conversations/{p.name}": parse_conversation(p.read_bytes().splitlines(), lambda s: s)
        for p in sorted((SET / "conversations").glob("*.jsonl"))
    }


@cache
def _messages() -> list[dict[str, object]]:
    lines = (SET / "messages.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _text(chat: Conversation) -> str:
    return "\n".join(f"{e.prompt}\n{e.answer}" for e in chat.exchanges) + "\n" + chat.title


def _first_stamp(name: str) -> str:
    for line in (SET / name).read_text(encoding="utf-8").splitlines():
        stamp = json.loads(line).get("timestamp")
        if stamp:
            return str(stamp)
    raise AssertionError(f"{name}: no timestamp")


def _situational() -> list[dict[str, object]]:
    return [m for m in _messages() if m["kind"] == "situational"]


def test_every_chat_parses_as_an_interactive_transcript() -> None:
    chats = _chats()
    assert chats
    for name, chat in chats.items():
        assert chat.bad_lines == 0, name
        assert chat.interactive, name
        assert chat.exchanges, name
        assert chat.cwd == "/work/decisions-project", name
        assert all(e.prompt and e.answer for e in chat.exchanges), name
    cwds = {c.cwd for c in chats.values()}
    assert len(cwds) == 1
    dates = sorted(c.date for c in chats.values())
    assert dates[0] >= "2026-01" and dates[-1] < "2026-08"


def test_file_names_carry_no_label() -> None:
    for path in (SET / "conversations").iterdir():
        assert re.fullmatch(
            r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.jsonl", path.name
        )


def test_the_eval_loader_reads_the_messages() -> None:
    loaded = load_messages(SET)
    assert len(loaded) == len(_messages())
    assert sum(bool(m.stale) for m in loaded) >= 6


def test_counts_and_labels() -> None:
    messages = _messages()
    kinds = {str(m["kind"]) for m in messages}
    assert kinds == {"situational", "unrelated"}
    assert all(m["group"] == "decisions" for m in messages)
    assert len({m["id"] for m in messages}) == len(messages)
    situational = _situational()
    unrelated = [m for m in messages if m["kind"] == "unrelated"]
    assert len(situational) >= 30
    assert sum("stale" in m for m in situational) >= 6
    assert len(unrelated) >= 25
    assert all("expected" not in m for m in unrelated)
    labelled: set[str] = set()
    for m in situational:
        expected = m["expected"]
        assert isinstance(expected, list) and len(expected) == 1, m["id"]
        labelled.update(expected)
        labelled.update(m.get("stale", []))  # type: ignore[arg-type]
    assert labelled <= set(_chats()), labelled - set(_chats())
    decoys = set(_chats()) - labelled
    assert len(decoys) >= 100
    # A chain of three: a rule, amended, amended again.
    assert any(len(m.get("stale", [])) >= 2 for m in situational)  # type: ignore[arg-type]


def test_stale_chats_come_before_the_chat_that_replaced_them() -> None:
    for m in _situational():
        stale = m.get("stale", [])
        if not stale:
            continue
        chain = [*stale, *m["expected"]]  # type: ignore[misc]
        stamps = [_first_stamp(name) for name in chain]
        assert stamps == sorted(stamps), m["id"]
        # weeks apart, not minutes
        assert stamps[0][:10] < stamps[-1][:10], m["id"]


def test_no_report_quotes_the_chat_that_settled_it() -> None:
    chats = _chats()
    for m in _situational():
        report = _grams(str(m["text"]), 5)
        for name in [*m["expected"], *m.get("stale", [])]:  # type: ignore[misc]
            shared = report & _grams(_text(chats[name]), 5)
            assert not shared, (m["id"], name, sorted(shared)[:3])


def test_the_generator_writes_the_committed_set(tmp_path: Path) -> None:
    out = tmp_path / "decisions"
    done = subprocess.run(
        [sys.executable, str(GENERATOR), "--out", str(out)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    committed = {p.relative_to(SET) for p in SET.rglob("*") if p.is_file()}
    written = {p.relative_to(out) for p in out.rglob("*") if p.is_file()}
    assert written == committed
    for rel in sorted(committed):
        assert (out / rel).read_bytes() == (SET / rel).read_bytes(), rel


def test_the_set_stays_small() -> None:
    size = sum(p.stat().st_size for p in SET.rglob("*") if p.is_file())
    assert size < 3_000_000


def _source_repository() -> str:
    text = (SET / "SOURCE.md").read_text(encoding="utf-8")
    found = re.search(r"https://github\.com/([\w.-]+/[\w.-]+)", text)
    assert found, "SOURCE.md names no repository"
    return found.group(1)


def test_the_source_repository_is_used_by_no_evaluation_set() -> None:
    shared_path()
    repo = _source_repository().lower()
    owner, name = repo.split("/")
    needles = {repo, f"{owner}__{name}"}
    for folder in (shared_path("eval"), shared_path("adr-corpora")):
        for path in folder.rglob("*"):
            if not path.is_file() or not re.match(r"(README|SOURCE|manifest)", path.name):
                continue
            text = path.read_text(encoding="utf-8", errors="replace").lower()
            assert not any(n in text for n in needles), path
        assert not (folder / f"{owner}__{name}").exists()


def test_no_chat_copies_text_of_the_evaluation_sets() -> None:
    shared: set[tuple[str, ...]] = set()
    for path in shared_path("eval").rglob("*"):
        if path.is_file() and path.suffix in {".md", ".mdc", ".jsonl"}:
            shared |= _grams(path.read_text(encoding="utf-8", errors="replace"), 8)
    assert len(shared) > 10_000  # the comparison is not vacuous
    chats = _chats()
    labelled = {n for m in _situational() for n in [*m["expected"], *m.get("stale", [])]}  # type: ignore[misc]
    decoys = sorted(set(chats) - labelled)
    sample = sorted(labelled) + random.Random(0).sample(decoys, min(40, len(decoys)))
    for name in sample:
        copied = _grams(_text(chats[name]), 8) & shared
        assert not copied, (name, sorted(copied)[:2])
    for m in _messages():
        assert not _grams(str(m["text"]), 8) & shared, m["id"]
