"""Selection (SPEC §5) as pure functions: the gap rule, caps, conversations, ordering."""

from __future__ import annotations

import pytest

from precedents.config import Thresholds
from precedents.recall.selection import (
    NARROW_CAP_BYTES,
    RELEVANCE_MARGIN,
    WIDE_CAP_BYTES,
    gap_of,
    select,
)
from precedents.store.schema import DocumentHit, DocumentRecord

T = Thresholds(min_top=0.5, min_gap=0.025, wide_gap=0.11, near_top=0.05)
PROJECT = "/home/dev/proj"


def hit(name: str, score: float, kind: str = "note", project: str = PROJECT) -> DocumentHit:
    record = DocumentRecord(kind=kind, project=project, path=f"/x/{name}.md", name=name)
    return DocumentHit(record, score, 0)


def filler(n: int, score: float) -> list[DocumentHit]:
    return [hit(f"fill{i}", score) for i in range(n)]


def names(sel: object) -> list[str]:
    return [h.record.name for h in sel.chosen]  # type: ignore[attr-defined]


def test_gap_is_top_minus_mean_of_ranks_2_to_11() -> None:
    scores = [0.9] + [0.5] * 10 + [0.0] * 5  # ranks 12+ do not count
    assert gap_of(scores) == pytest.approx(0.4)
    assert gap_of([0.7]) == pytest.approx(0.7)  # missing ranks count as 0
    assert gap_of([]) == 0.0


def test_empty_and_below_top_give_nothing() -> None:
    assert select([], T, PROJECT).reason == "empty"
    sel = select([hit("a", 0.49), *filler(10, 0.1)], T, PROJECT)
    assert sel.reason == "below-top" and not sel.chosen and sel.byte_cap == 0
    assert sel.top == pytest.approx(0.49)


def test_small_gap_gives_nothing() -> None:
    sel = select([hit("a", 0.62), *filler(10, 0.60)], T, PROJECT)
    assert sel.reason == "small-gap" and sel.chosen == ()
    assert sel.gap == pytest.approx(0.02)


def test_narrow_gap_gives_top_three_with_small_cap() -> None:
    hits = [hit("a", 0.70), hit("b", 0.64), hit("c", 0.50), *filler(8, 0.60)]
    sel = select(hits, T, PROJECT)
    assert sel.reason == "narrow"
    assert sel.byte_cap == NARROW_CAP_BYTES
    assert names(sel) == ["a", "b", "fill0"]


def test_wide_gap_gives_those_near_the_top_with_large_cap() -> None:
    hits = [hit("a", 0.80), hit("b", 0.77), hit("c", 0.74), hit("d", 0.76), *filler(10, 0.3)]
    sel = select(hits, T, PROJECT)
    assert sel.reason == "wide" and sel.byte_cap == WIDE_CAP_BYTES
    assert names(sel) == ["a", "b", "d"]  # c is 0.06 below the top
    only_one = select([hit("a", 0.8), hit("b", 0.7), *filler(10, 0.3)], T, PROJECT)
    assert names(only_one) == ["a"]


def test_at_most_three_even_when_more_are_near_the_top() -> None:
    hits = [hit(n, 0.8) for n in "abcde"] + filler(10, 0.2)
    sel = select(hits, T, PROJECT)
    assert len(sel.chosen) == 3


def test_conversations_are_left_out_of_the_gap() -> None:
    # Many conversations just below the top would shrink the gap to nothing.
    docs = [hit("a", 0.80), *filler(10, 0.4)]
    convs = [hit(f"c{i}", 0.79, kind="conversation") for i in range(10)]
    sel = select(docs + convs, T, PROJECT)
    assert sel.gap == pytest.approx(0.4)
    assert sel.reason == "wide"


def test_conversations_alone_never_decide() -> None:
    convs = [hit("c", 0.95, kind="conversation"), *filler(10, 0.2)]
    sel = select(convs[:1], T, PROJECT)
    assert sel.reason == "empty" and not sel.chosen
    quiet = select(
        [hit("c", 0.95, kind="conversation"), hit("a", 0.4), *filler(10, 0.2)], T, PROJECT
    )
    assert quiet.reason == "below-top" and not quiet.chosen


def test_one_conversation_near_the_top_joins_in_score_order() -> None:
    hits = [
        hit("a", 0.80),
        hit("c1", 0.82, kind="conversation"),
        hit("c2", 0.81, kind="conversation"),
        hit("c3", 0.60, kind="conversation"),
        hit("b", 0.78),
        *filler(10, 0.3),
    ]
    sel = select(hits, T, PROJECT)
    assert names(sel) == ["c1", "a", "b"]
    # In the narrow case a conversation must still be near the top document.
    narrow = [hit("a", 0.70), hit("b", 0.66), hit("c", 0.60, kind="conversation"), *filler(9, 0.62)]
    assert "c" not in names(select(narrow, T, PROJECT))


def test_current_project_note_goes_before_a_shared_rule_close_to_it() -> None:
    rule = hit("rule", 0.81, kind="rule", project="*")
    note = hit("note", 0.79)
    adr = hit("adr", 0.80, kind="adr")
    sel = select([rule, adr, note, *filler(10, 0.3)], T, PROJECT)
    assert names(sel) == ["note", "rule", "adr"]


def test_a_note_far_below_the_top_does_not_jump_ahead() -> None:
    rule = hit("rule", 0.70, kind="rule", project="*")
    note = hit("note", 0.64)
    sel = select([rule, note, *filler(10, 0.62)], T, PROJECT)
    assert sel.reason == "narrow"
    assert names(sel)[:2] == ["rule", "note"]


def test_unresolved_claude_key_counts_as_current_project() -> None:
    rule = hit("rule", 0.81, kind="rule", project="*")
    note = hit("note", 0.80, project="claude:-home-dev-proj")
    sel = select([rule, note, *filler(10, 0.3)], T, PROJECT)
    assert names(sel) == ["note", "rule"]


def test_thresholds_are_taken_from_the_argument() -> None:
    loose = Thresholds(min_top=0.3, min_gap=0.01, wide_gap=0.05, near_top=0.1)
    sel = select([hit("a", 0.40), hit("b", 0.35), *filler(10, 0.3)], loose, PROJECT)
    assert sel.reason == "wide" and names(sel) == ["a", "b"]


def test_a_changed_decision_is_shown_a_little_below_the_thresholds() -> None:
    old, new = hit("0045-input-flag", 0.46, "adr"), hit("0057-positional-input", 0.44, "adr")
    other = hit("0012-logging", 0.43, "adr")

    def successors(record: DocumentRecord) -> list[DocumentRecord]:
        return [new.record] if record.path == old.record.path else []

    hits = [old, other, new, *filler(8, 0.40)]
    plain = select(hits, T, PROJECT)
    assert plain.reason == "below-top" and not plain.injected  # without the graph: off
    sel = select(hits, T, PROJECT, successors=successors)
    assert sel.reason == "changed" and sel.byte_cap == NARROW_CAP_BYTES
    assert names(sel) == ["0045-input-flag", "0057-positional-input"]
    # Only when both rank in the top 3, and never far below min_top.
    crowded = [old, hit("b", 0.455), hit("c", 0.445), new]  # the successor ranks 4th
    assert not select(crowded, T, PROJECT, successors=successors).chosen
    low = [hit("0045-input-flag", 0.39, "adr"), hit("0057-positional-input", 0.38, "adr")]
    assert not select(low, T, PROJECT, successors=successors).injected
    # A live ADR ranked above its replaced one does not need the rule to name it.
    assert select([new, old], T, PROJECT, successors=lambda r: []).reason == "below-top"


def test_the_learned_relevance_may_speak_where_the_cosine_rules_stay_silent() -> None:
    speaking = Thresholds(0.5, 0.025, 0.11, 0.05, speak_relevance=0.45)
    first, second, third = hit("a", 0.40), hit("b", 0.37), hit("c", 0.30)
    hits = [first, second, third, *filler(8, 0.29)]
    assert select(hits, speaking, PROJECT).reason == "below-top"  # no relevance: silent
    assert select(hits, T, PROJECT, relevance=0.9).reason == "below-top"  # route off
    sel = select(hits, speaking, PROJECT, relevance=0.47)
    assert sel.reason == "relevant" and sel.byte_cap == NARROW_CAP_BYTES
    assert names(sel) == ["a", "b"]  # those within near_top of the top, as "wide" shows
    assert sel.relevance == 0.47
    assert not select(hits, speaking, PROJECT, relevance=0.44).injected  # below the bar
    # Never far below min_top (RELEVANCE_MARGIN), however sure the relevance is.
    low = [hit("a", 0.5 - RELEVANCE_MARGIN - 0.01), *filler(8, 0.1)]
    assert select(low, speaking, PROJECT, relevance=0.99).reason == "below-top"
    # When the cosine rules speak, they decide what is shown, as before.
    clear = [hit("a", 0.7), hit("b", 0.5), *filler(8, 0.3)]
    assert select(clear, speaking, PROJECT, relevance=0.2).reason in ("narrow", "wide")
    # The veto still wins over everything.
    vetoed = Thresholds(0.5, 0.025, 0.11, 0.05, min_relevance=0.5, speak_relevance=0.45)
    assert select(hits, vetoed, PROJECT, relevance=0.47).reason == "irrelevant"


def test_a_commit_joins_what_the_documents_earned_and_never_speaks_alone() -> None:
    """Commits rank in their own group (docs/commits.md): outside the gap, one may join
    within near_top of the best document, as a conversation does; alone, nothing."""
    docs = [hit("top", 0.70), *filler(10, 0.40)]
    commits = [hit("c1", 0.68, "commit"), hit("c2", 0.67, "commit"), hit("far", 0.5, "commit")]
    sel = select([*docs, *commits], T, PROJECT)
    assert sel.reason == "wide" and names(sel) == ["top", "c1"]
    assert select([hit("c1", 0.9, "commit"), hit("c2", 0.2, "commit")], T, PROJECT).chosen == ()
    # Commits do not count in the gap: the same documents, the same gap.
    assert sel.gap == select(docs, T, PROJECT).gap
