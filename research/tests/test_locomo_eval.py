"""precedents_research.locomo_eval: LoCoMo sessions through the real conversation path,
and the metric.

The hand-made fixture (fixtures/locomo-mini.json) has the shape of locomo10.json:
two conversations, sessions whose first speaker is either person, a date with no
session (as in the real data), a question with no evidence, and a session of the
second conversation worded like one of the first (a leak across conversations would
show up in the ranking).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from precedents.ingest.chunking import conversation_chunks, parse_conversation
from precedents.models.embedding import canonical_model_id
from precedents_research import locomo_eval as le

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "locomo-mini.json"


def samples() -> list[object]:
    return list(le.parse_data(FIXTURE.read_bytes()))


# ------------------------------------------------------------------ pure parts


def test_evidence_ids_name_sessions_including_the_datas_slips() -> None:
    assert le.evidence_sessions(["D3:5"]) == {3}
    assert le.evidence_sessions(["D1:3", "D1:9", "D12:1"]) == {1, 12}
    assert le.evidence_sessions(["D8:6; D9:17"]) == {8, 9}  # two ids in one string
    assert le.evidence_sessions(["D:11:26"]) == {11}  # a stray colon
    assert le.evidence_sessions(["D", ""]) == frozenset()


def test_recall_rules_on_a_hand_computed_example() -> None:
    ranked = [3, 1, 7, 2, 5]
    two = frozenset({1, 2})
    # top 2 = {3, 1}: one of the two evidence sessions
    assert le.recall_at(ranked, two, 2, "fraction") == 0.5
    assert le.recall_at(ranked, two, 2, "all") == 0.0
    assert le.recall_at(ranked, two, 2, "any") == 1.0
    # top 4 = {3, 1, 7, 2}: both
    assert [le.recall_at(ranked, two, 4, r) for r in le.RULES] == [1.0, 1.0, 1.0]
    # an evidence session never retrieved
    assert [le.recall_at(ranked, frozenset({9}), 5, r) for r in le.RULES] == [0.0, 0.0, 0.0]
    # three sessions, two found by k = 5
    assert le.recall_at(ranked, frozenset({5, 7, 9}), 5, "fraction") == pytest.approx(2 / 3)


def test_scores_per_category_and_the_two_overall_rows() -> None:
    def ranked(category: int, evidence: set[int], sessions: list[int]) -> object:
        return le.Ranked("s", le.Question("q", category, frozenset(evidence)), sessions)

    rows = le.score(
        [
            ranked(4, {1}, [1, 2]),  # found at rank 1
            ranked(4, {2}, [1, 3]),  # missed at k = 2
            ranked(1, {1, 3}, [1, 2]),  # half found at k = 2
            ranked(5, {2}, [2, 1]),  # adversarial: found
        ],
        [1, 2],
    )
    by = {r["group"]: r for r in rows}
    assert list(by) == [
        "1 multi-hop",
        "4 single-hop",
        "5 adversarial",
        "1-4 (LoCoMo QA protocol)",
        "1-5 (all)",
    ]
    assert by["4 single-hop"]["fraction"] == {"1": 0.5, "2": 0.5}
    assert by["1 multi-hop"]["fraction"]["2"] == 0.5
    assert by["1 multi-hop"]["all"]["2"] == 0.0
    assert by["1 multi-hop"]["any"]["2"] == 1.0
    headline = by["1-4 (LoCoMo QA protocol)"]
    assert headline["n"] == 3  # the adversarial question is left out
    assert headline["fraction"]["2"] == round((1 + 0 + 0.5) / 3, 4)
    assert by["1-5 (all)"]["n"] == 4
    assert by["1-5 (all)"]["fraction"]["2"] == round((1 + 0 + 0.5 + 1) / 4, 4)
    assert "1-4 (LoCoMo QA protocol)" in le.table(rows, [1, 2])


def test_fixture_parses_like_locomo10() -> None:
    one, two = samples()
    assert one.sample_id == "mini-1"
    assert [s.number for s in one.sessions] == [1, 2, 3]
    assert [s.number for s in two.sessions] == [1, 2, 4]  # a date without a session is no session
    assert [q.sessions for q in one.questions][3] == {1, 3}
    assert one.questions[5].sessions == frozenset()  # no evidence: skipped when ranking


def test_each_session_is_a_transcript_the_real_parser_reads_whole() -> None:
    one, two = samples()
    for session in (one.sessions[1], two.sessions[0]):  # both open with the second speaker
        lines = le.transcript_lines("mini", session, "/somewhere")
        raw = [json.dumps(line) for line in lines]
        conv = parse_conversation(raw, lambda text: text)
        assert conv.interactive
        assert conv.cwd == "/somewhere"
        # The first speaker's turns are the prompts: no turn is lost before the first one.
        first = session.turns[0].speaker
        assert [e.prompt.split(":")[0] for e in conv.exchanges] == [
            t.speaker for t in session.turns if t.speaker == first
        ]
        chunks = "\n".join(conversation_chunks(conv))
        for turn in session.turns:
            assert f"{turn.speaker}: {turn.text}" in chunks
    assert le.iso_time("1:56 pm on 8 May, 2023") == "2023-05-08T13:56:00.000Z"
    assert le.iso_time("12:05 am on 1 January, 2024") == "2024-01-01T00:05:00.000Z"
    assert le.iso_time("sometime") == ""


def test_session_of_reads_the_written_file_names(tmp_path: Path) -> None:
    one, _ = samples()
    le.write_transcripts(one, tmp_path / "mini-1")
    names = sorted(p.name for p in (tmp_path / "mini-1").iterdir())
    assert names == ["session_01.jsonl", "session_02.jsonl", "session_03.jsonl"]
    assert [le.session_of(str(tmp_path / "mini-1" / n)) for n in names] == [1, 2, 3]
    with pytest.raises(ValueError):
        le.session_of("/x/notes.md")


def test_a_work_folder_inside_a_git_repository_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    with pytest.raises(SystemExit):
        le.check_folders([tmp_path / "conversations" / "mini-1"])


# ------------------------------------------------- the real indexer and model


@pytest.mark.slow
def test_real_path_ranks_the_answering_session_first(tmp_path: Path, embedder: object) -> None:
    data = samples()
    [run] = le.evaluate(data, tmp_path / "work", 10, embedder)
    assert run.report.files_indexed == 6
    assert run.sessions == 6
    assert run.skipped == 1  # the question with no evidence
    assert len(run.ranked) == 8
    by_question = {r.question.text: r for r in run.ranked}
    for text, session in [
        ("What is the name of Priya's greyhound?", 1),
        ("Which city's marathon did Tom sign up for?", 2),  # a session Tom opens
        ("What did Priya make in her pottery class?", 3),
        ("Where did Marco go sailing?", 1),  # a session Marco opens
        ("What piece did Ana play at her violin recital?", 2),
    ]:
        assert by_question[text].sessions[0] == session, (text, by_question[text].sessions)
    # Each question sees only its own conversation's sessions: mini-2's session 4 tells
    # of a greyhound called Biscuit too, yet never appears in mini-1's rankings.
    for r in run.ranked:
        expected = [1, 2, 3] if r.sample_id == "mini-1" else [1, 2, 4]
        assert sorted(r.sessions) == expected
    rows = {row["group"]: row for row in le.score(run.ranked, [1, 10])}
    assert rows["4 single-hop"]["fraction"]["1"] == 1.0
    assert rows["1-5 (all)"]["fraction"]["10"] == 1.0  # every session of a conversation is in
    summary = le.summary(FIXTURE.read_bytes(), run, [1, 10], 0.0)
    assert summary["model"] == canonical_model_id("sentence-transformers/all-MiniLM-L6-v2")
    assert summary["questions"] == 8


@pytest.mark.slow
def test_a_rerun_on_the_same_work_folder_embeds_nothing(tmp_path: Path, embedder: object) -> None:
    data = samples()[:1]
    [first] = le.evaluate(data, tmp_path / "work", 5, embedder)
    [again] = le.evaluate(data, tmp_path / "work", 5, embedder)
    assert first.report.chunks_embedded > 0
    assert again.report.chunks_embedded == 0
    assert [r.sessions for r in again.ranked] == [r.sessions for r in first.ranked]


@pytest.mark.slow
def test_words_rank_with_vectors_and_the_weight_is_cross_validated(
    tmp_path: Path, embedder: object
) -> None:
    """One index, one run per word weight; a held-out fold takes the weight chosen on the
    others, and every question is scored exactly once."""
    data = samples()
    vectors, words = le.evaluate(data, tmp_path / "work", 10, embedder, words=[0.0, 0.4])
    assert (vectors.words, words.words) == (0.0, 0.4)
    assert vectors.report is words.report and vectors.report.chunks_embedded > 0
    assert [r.question.text for r in vectors.ranked] == [r.question.text for r in words.ranked]
    held, chosen = le.cross_validate([vectors, words], 2)
    assert sorted(r.question.text for r in held.ranked) == sorted(
        r.question.text for r in words.ranked
    )
    assert [c["words"] for c in chosen] and all(c["words"] in (0.0, 0.4) for c in chosen)
    assert sorted(sid for c in chosen for sid in c["held_out"]) == ["mini-1", "mini-2"]
