"""The product path LoCoMo's figures run on (docs/locomo.md), with the product alone.

The harness that turns LoCoMo into transcripts and scores it is research
(``research/precedents_research/locomo_eval.py``, tested by ``make research-test``).
What it relies on is the product's, and is tested here: Claude Code transcripts in
configured ``conversations`` folders, each folder its own project, indexed by the real
indexer and bundled model; a question ranked by :meth:`Recall.rank` within one project
sees that project's transcripts only, and ranks the session that answers it first;
a re-run embeds nothing.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from precedents.config import load_settings
from precedents.ingest.indexer import Indexer, IndexReport
from precedents.ingest.sources import configured_sources, project_root, walk
from precedents.recall import Recall
from precedents.store import open_store

# Two conversations (projects), each a list of sessions of (speaker, text) turns; the
# first speaker of a session writes the prompts. Ana's second session is worded like
# Priya's first (a greyhound called Biscuit): a leak across projects would show.
CONVERSATIONS: dict[str, list[list[tuple[str, str]]]] = {
    "priya": [
        [
            ("Priya", "We adopted a retired greyhound last week, her name is Biscuit."),
            ("Tom", "A greyhound! How is Biscuit settling in?"),
            ("Priya", "She sleeps all day on the sofa and runs laps in the garden."),
        ],
        [
            ("Tom", "I finally signed up for the Lisbon marathon in October."),
            ("Priya", "Lisbon is hilly, start hill training early."),
        ],
        [
            ("Priya", "At my pottery class I made a blue glazed teapot."),
            ("Tom", "Did the teapot survive the kiln?"),
        ],
    ],
    "ana": [
        [
            ("Ana", "I played the Bach chaconne at my violin recital on Sunday."),
            ("Marco", "The chaconne is a huge piece, well done."),
        ],
        [
            ("Marco", "My neighbour's greyhound Biscuit sleeps on their sofa all day."),
            ("Ana", "Greyhounds are famously lazy dogs."),
        ],
    ],
}


def transcript(project: str, number: int, turns: list[tuple[str, str]], cwd: Path) -> str:
    """One session as Claude Code transcript lines: the first speaker's turns are user
    prompts, the other's assistant replies, each written ``"Name: text"``."""
    session = f"{project}-{number}"
    first = turns[0][0]
    lines: list[dict[str, Any]] = []
    for i, (speaker, text) in enumerate(turns):
        line: dict[str, Any] = {"uuid": f"{session}-{i}", "sessionId": session, "cwd": str(cwd)}
        line |= {"timestamp": f"2026-05-0{number}T10:0{i}:00.000Z", "isSidechain": False}
        line["entrypoint"] = "cli"
        if speaker == first:
            line |= {"type": "user", "origin": {"kind": "human"}}
            line["message"] = {"role": "user", "content": f"{speaker}: {text}"}
        else:
            line["type"] = "assistant"
            content = [{"type": "text", "text": f"{speaker}: {text}"}]
            line["message"] = {"id": f"m-{session}-{i}", "role": "assistant", "model": "x"}
            line["message"]["content"] = content
        lines.append(line)
    return "".join(json.dumps(line) + "\n" for line in lines)


@pytest.fixture
def projects(home: Path) -> dict[str, Path]:
    """Each conversation's folder (outside any git repository: its own project)."""
    folders = {}
    for name, sessions in CONVERSATIONS.items():
        folder = (home.parent / "conversations" / name).absolute()
        folder.mkdir(parents=True)
        for n, turns in enumerate(sessions, 1):
            (folder / f"session_{n:02d}.jsonl").write_text(transcript(name, n, turns, folder))
        folders[name] = folder
    return folders


def index(folders: dict[str, Path], embedder: Any) -> tuple[Any, IndexReport]:
    settings = replace(
        load_settings(), discover_claude=False, conversations=tuple(folders.values())
    )
    store = open_store(settings.index_dir, embedder)
    return settings, Indexer(settings, store, embedder).sync(walk(configured_sources(settings)))


def session(hit: Any) -> tuple[str, int]:
    path = Path(hit.record.path)
    return path.parent.name, int(path.stem.removeprefix("session_"))


@pytest.mark.slow
def test_a_question_ranks_its_projects_sessions_only_answering_one_first(
    projects: dict[str, Path], embedder: Any
) -> None:
    assert all(project_root(f) == str(f) for f in projects.values())
    settings, report = index(projects, embedder)
    assert report.files_indexed == 5
    recall = Recall(settings, embedder)
    try:
        for project, question, answer in [
            ("priya", "What is the name of Priya's greyhound?", 1),
            ("priya", "Which city's marathon did Tom sign up for?", 2),  # a session Tom opens
            ("priya", "What did Priya make in her pottery class?", 3),
            ("ana", "What piece did Ana play at her violin recital?", 1),
            ("ana", "Whose greyhound sleeps on the sofa?", 2),  # a session Marco opens
        ]:
            hits = recall.rank(question, projects[project], kinds=("conversation",), k=10)
            ranked = [session(h) for h in hits]
            assert ranked[0] == (project, answer), (question, ranked)
            # Only the project's own sessions: Ana's greyhound session never shows for Priya.
            expected = len(CONVERSATIONS[project])
            assert sorted(ranked) == [(project, n) for n in range(1, expected + 1)]
    finally:
        recall.close()


@pytest.mark.slow
def test_a_rerun_on_the_same_transcripts_embeds_nothing(
    projects: dict[str, Path], embedder: Any
) -> None:
    _, first = index(projects, embedder)
    _, again = index(projects, embedder)
    assert first.chunks_embedded > 0
    assert again.chunks_embedded == 0
