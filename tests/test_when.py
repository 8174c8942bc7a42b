"""Date words in a question as a window of days (#19 item 2), and the ranking they lift."""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path

import pytest

from precedents.recall.when import Window, day_of, window

# A Wednesday.
TODAY = date(2026, 12, 2)


def days(text: str, today: date = TODAY) -> tuple[str, str] | None:
    found = window(text, today)
    return None if found is None else (found.start.isoformat(), found.end.isoformat())


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("what did we decide today about retries?", ("2026-12-02", "2026-12-02")),
        ("the fix from this morning", ("2026-12-02", "2026-12-02")),
        ("What did we decide about the Stripe webhook yesterday?", ("2026-12-01", "2026-12-01")),
        ("the bug we chased two days ago", ("2026-11-29", "2026-12-01")),
        ("3 days ago we changed the cache", ("2026-11-28", "2026-11-30")),
        ("a week ago", ("2026-11-22", "2026-11-28")),
        ("what did we decide on Tuesday?", ("2026-12-01", "2026-12-01")),
        ("on wednesday", ("2026-12-02", "2026-12-02")),  # said on a Wednesday: today
        ("last Friday's migration", ("2026-11-27", "2026-11-27")),
        ("Monday morning we broke prod", ("2026-11-30", "2026-11-30")),
        ("everything from last week", ("2026-11-23", "2026-11-29")),
        ("this week's decisions", ("2026-11-30", "2026-12-02")),
        ("last month", ("2026-11-01", "2026-11-30")),
        ("this month", ("2026-12-01", "2026-12-02")),
        ("the plan of 2026-11-28", ("2026-11-28", "2026-11-28")),
        ("on Nov 28 we agreed", ("2026-11-28", "2026-11-28")),
        ("on November 28th, 2025", ("2025-11-28", "2025-11-28")),
        ("28 November", ("2026-11-28", "2026-11-28")),
        ("on December 25", ("2025-12-25", "2025-12-25")),  # not yet this year: last year's
        ("in May 2023", ("2023-05-01", "2023-05-31")),
        ("in February", ("2026-02-01", "2026-02-28")),
    ],
)
def test_the_days_a_question_names(text: str, want: tuple[str, str]) -> None:
    assert days(text) == want


@pytest.mark.parametrize(
    "text",
    [
        "can I store prices as floats?",
        "the May release notes",  # a month name alone is not a date
        "keep the Friday deploy freeze",  # nor a weekday alone
        "we may 3x the pool size",
        "what did Melanie do last weekend",  # "weekend" is not "week"
        "on February 30",  # no such day
        "2026-13-45",
    ],
)
def test_words_that_are_not_dates(text: str) -> None:
    assert window(text, TODAY) is None


def test_the_first_date_words_win() -> None:
    assert days("yesterday, not last month") == ("2026-12-01", "2026-12-01")
    assert days("last month, not yesterday") == ("2026-11-01", "2026-11-30")


def test_stored_dates() -> None:
    assert day_of("2026-11-28") == date(2026, 11, 28)
    assert day_of("2026-11-28T10:00:00Z") == date(2026, 11, 28)
    assert day_of("") is None and day_of("soon") is None
    assert Window(date(2026, 1, 1), date(2026, 1, 3)).holds(date(2026, 1, 2))


def _log(folder: Path, name: str, day: date, prompt: str, reply: str) -> None:
    stamp = f"{day.isoformat()}T10:00:00.000Z"
    lines = [
        {"type": "user", "uuid": f"{name}-u", "sessionId": name, "timestamp": stamp,
         "cwd": str(folder), "message": {"role": "user", "content": prompt}},
        {"type": "assistant", "uuid": f"{name}-a", "sessionId": name, "timestamp": stamp,
         "cwd": str(folder), "message": {"role": "assistant", "id": f"m-{name}", "model": "x",
                                          "content": [{"type": "text", "text": reply}]}},
    ]  # fmt: skip
    (folder / f"{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_a_date_cue_lifts_the_conversation_of_that_day(home: Path, embedder: object) -> None:
    """Two near-identical sessions about the webhook; the question names yesterday."""
    from dataclasses import replace

    from precedents.config import load_settings
    from precedents.ingest.indexer import Indexer
    from precedents.ingest.sources import configured_sources, walk
    from precedents.recall import Recall
    from precedents.store import open_store

    folder = home.parent / "logs"
    folder.mkdir()
    today = date.today()
    _log(
        folder,
        "old",
        today - timedelta(days=40),
        "Let's settle the Stripe webhook retries",
        "We decided the Stripe webhook handler retries three times with backoff.",
    )
    _log(
        folder,
        "recent",
        today - timedelta(days=1),
        "Back to the Stripe webhook",
        "We decided the Stripe webhook handler is idempotent by event id.",
    )
    settings = replace(load_settings(), discover_claude=False, conversations=(folder,))
    store = open_store(settings.index_dir, embedder)  # type: ignore[arg-type]
    Indexer(settings, store, embedder).sync(walk(configured_sources(settings)))  # type: ignore[arg-type]
    recall = Recall(settings, embedder)  # type: ignore[arg-type]
    try:
        question = "what did we settle about the Stripe webhook handler"
        plain = recall.rank(question, folder, kinds=("conversation",), k=2)
        cued = recall.rank(question + " yesterday", folder, kinds=("conversation",), k=2)
        assert [Path(h.record.path).stem for h in plain] == ["old", "recent"]
        assert [Path(h.record.path).stem for h in cued] == ["recent", "old"]
        # Scores stay cosines: the lift changes the order only.
        assert all(-1.0 <= h.score <= 1.0 for h in cued)
        off = replace(recall.thresholds, conversation_dates=0.0)
        recall.thresholds = off
        unlifted = recall.rank(question + " yesterday", folder, kinds=("conversation",), k=2)
        assert Path(unlifted[0].record.path).stem == "old"
    finally:
        recall.close()
