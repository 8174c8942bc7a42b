"""A replaced decision never comes alone: its live successor is shown on the next line
(issue #9, item 4), in the hook's text, `query --auto` and eval alike."""

from __future__ import annotations

from typing import Any

import pytest

from precedents.config import Thresholds
from precedents.recall.format import format_context
from precedents.recall.selection import NARROW_CAP_BYTES, Selection
from precedents.store import DocumentHit, DocumentRecord

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import ADR_PROMPT, DevState, settings_for  # noqa: E402

pytest_plugins = ["tests.conftest_daemon"]

OLD = DocumentRecord("adr", "/p", "/p/adr/0001-a.md", "Use MySQL", adr_id="1")
NEW = DocumentRecord("adr", "/p", "/p/adr/0002-b.md", "Use Redis", adr_id="2")
NOTE = DocumentRecord("note", "/p", "/p/notes/x.md", "A note", "about caching")


def chosen(*records: DocumentRecord) -> Selection:
    hits = tuple(DocumentHit(r, 0.9 - i / 10, 0) for i, r in enumerate(records))
    return Selection(hits, NARROW_CAP_BYTES, 0.9, 0.2, "narrow")


def marks(record: DocumentRecord) -> str:
    return "⚠️superseded → 2" if record is OLD else ""


def successors(record: DocumentRecord) -> list[DocumentRecord]:
    return [NEW] if record is OLD else []


def test_the_successor_follows_the_replaced_record() -> None:
    text = format_context(chosen(OLD, NOTE), marks, successors)
    assert text is not None
    lines = text.splitlines()[1:]
    assert lines[0].startswith("⚠️superseded → 2 adr  1 Use MySQL")
    assert lines[1] == "adr  2 Use Redis (/p/adr/0002-b.md)"
    assert lines[2].startswith("note  A note")


def test_a_successor_already_shown_is_not_repeated() -> None:
    text = format_context(chosen(OLD, NEW), marks, successors)
    assert text is not None and text.count("0002-b.md") == 1


@pytest.mark.slow
def test_the_live_successor_comes_with_a_superseded_adr(dev_state: DevState, embedder: Any) -> None:
    from dataclasses import replace

    from precedents.recall import Recall

    # Thresholds that show the top record, so the test is about what comes with it.
    settings = settings_for(dev_state.home)
    wide_open = {settings.model: Thresholds(-1.0, -1.0, 9.0, 0.05)}
    recall = Recall(replace(settings, thresholds=wide_open), embedder)
    try:
        answer = recall.context(ADR_PROMPT, str(dev_state.project))
    finally:
        recall.close()
    assert answer.context is not None
    lines = answer.context.splitlines()[1:]
    first = next(i for i, line in enumerate(lines) if "0001-store-login-sessions" in line)
    assert lines[first].startswith("⚠️superseded → ")
    assert "0002-keep-login-sessions-in-redis.md" in lines[first + 1]
    assert lines[first + 1].startswith("adr  ")  # live: no mark


def test_the_session_list_says_how_many_it_left_out() -> None:
    from precedents.protocol import EVENT_SESSION, printed_bytes
    from precedents.recall.format import LineParts
    from precedents.recall.start import SESSION_CAP_BYTES, SESSION_MAX_ADRS
    from precedents.recall.start import fit_session as _fit_session

    parts = [
        LineParts(f"{i:04d}", " ", f"Decision number {i} about a thing", "") for i in range(60)
    ]
    text = _fit_session(parts)
    assert text is not None
    lines = text.splitlines()
    shown = len(lines) - 2
    assert 0 < shown <= SESSION_MAX_ADRS
    assert lines[-1] == f"… and {60 - shown} more live ADRs: `precedents adr list --status live`"
    assert printed_bytes(text, EVENT_SESSION) <= SESSION_CAP_BYTES
    few = _fit_session(parts[:3])
    assert few is not None and "more live ADRs" not in few and len(few.splitlines()) == 4
