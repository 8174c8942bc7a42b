"""Formatting (SPEC §2, §5): line shapes, the header, and the byte cap over the printed line."""

from __future__ import annotations

import json

import pytest

from precedents.inert import NAME_CHARS
from precedents.protocol import HEADER, hook_output, printed_bytes
from precedents.recall.format import ELLIPSIS, format_context
from precedents.recall.selection import NARROW_CAP_BYTES, WIDE_CAP_BYTES, Selection
from precedents.store.schema import DocumentHit, DocumentRecord

SUPERSEDED = "⚠️superseded → ADR-0024"
PARTIAL = "△partially superseded → ADR-0031"


def rec(kind: str, name: str, **kw: str) -> DocumentRecord:
    path = kw.pop("path", f"/repo/{kind}/{name.replace(' ', '-')}.md")
    return DocumentRecord(kind=kind, project="/repo", path=path, name=name, **kw)


def selection(records: list[DocumentRecord], cap: int = WIDE_CAP_BYTES) -> Selection:
    hits = tuple(DocumentHit(r, 0.9 - i / 100, 0) for i, r in enumerate(records))
    return Selection(hits, cap, 0.9, 0.2, "wide")


def marks(mapping: dict[str, str]) -> object:
    return lambda r: mapping.get(r.adr_id, "")


def lines_of(text: str | None) -> list[str]:
    assert text is not None
    return text.split("\n")


def test_line_shapes_and_header() -> None:
    records = [
        rec("note", "Stash untracked", description="use git stash -u"),
        rec("rule", "No force push", description="never on main", path="/rules/push.md"),
        rec("adr", "Use Postgres", adr_id="ADR-0007", path="/repo/docs/adr/0007-pg.md"),
    ]
    text = format_context(selection(records), marks({}))
    assert lines_of(text) == [
        HEADER,
        "note  Stash untracked — use git stash -u (/repo/note/Stash-untracked.md)",
        "rule  No force push — never on main (/rules/push.md)",
        "adr  ADR-0007 Use Postgres (/repo/docs/adr/0007-pg.md)",
    ]


def test_marked_adr_and_conversation_lines() -> None:
    records = [
        rec("adr", "Use MySQL", adr_id="ADR-0003", path="/repo/docs/adr/0003-mysql.md"),
        rec(
            "conversation",
            "Debugging the flaky login test",
            date="2025-03-14T10:22:03Z",
            description="must never be shown",
            path="/c/abc.jsonl",
        ),
    ]
    text = format_context(selection(records), marks({"ADR-0003": SUPERSEDED}))
    assert lines_of(text)[1:] == [
        f"{SUPERSEDED} adr  ADR-0003 Use MySQL (/repo/docs/adr/0003-mysql.md)",
        "conversation  2025-03-14 Debugging the flaky login test (/c/abc.jsonl)",
    ]
    assert "must never be shown" not in (text or "")


def test_missing_description_and_multiline_text_stay_one_line() -> None:
    records = [rec("note", "Line\nbreak", description="first\n\nsecond\tthird")]
    text = format_context(selection(records), marks({}))
    assert lines_of(text)[1] == "note  Line break — first second third (/repo/note/Line?break.md)"
    bare = format_context(selection([rec("note", "Bare", path="/n/bare.md")]), marks({}))
    assert lines_of(bare)[1] == "note  Bare (/n/bare.md)"


def test_nothing_chosen_gives_none() -> None:
    assert format_context(Selection((), 0, 0.0, 0.0, "small-gap"), marks({})) is None


@pytest.mark.parametrize("cap", [NARROW_CAP_BYTES, WIDE_CAP_BYTES])
def test_byte_cap_with_japanese_descriptions_and_long_adr_titles(cap: int) -> None:
    long_title = "データベースの移行方針とスキーマ変更の段階的な適用手順について" * 6
    records = [
        rec("note", "移行メモ", description="本番データベースの移行は必ず夜間に行うこと。" * 20),
        rec("adr", long_title, adr_id="ADR-0012", path="/repo/docs/adr/0012-移行.md"),
        rec("adr", long_title, adr_id="ADR-0013", path="/repo/docs/adr/0013-移行.md"),
    ]
    mapping = {"ADR-0012": SUPERSEDED, "ADR-0013": PARTIAL}
    text = format_context(selection(records, cap), marks(mapping))
    assert text is not None
    printed = hook_output(text) + "\n"
    assert len(printed.encode("utf-8")) <= cap
    assert printed_bytes(text) == len(printed.encode("utf-8"))
    shown = lines_of(text)[1:]
    assert shown, "something fits"
    for line in shown:
        if " adr  " in line:
            adr_id = "ADR-0012" if "ADR-0012" in line else "ADR-0013"
            assert line.startswith(mapping[adr_id] + " adr  " + adr_id)
    assert any(ELLIPSIS in line for line in shown), "descriptions were shrunk"
    # The JSON stays readable: no \\u escapes for Japanese.
    assert "\\u" not in printed and json.loads(printed)["hookSpecificOutput"]["additionalContext"]


def test_descriptions_shrink_before_lines_go() -> None:
    records = [rec("note", f"n{i}", description="x" * 600, path=f"/p/{i}.md") for i in range(3)]
    text = format_context(selection(records, NARROW_CAP_BYTES), marks({}))
    shown = lines_of(text)[1:]
    assert len(shown) == 3
    assert all(ELLIPSIS in line for line in shown)
    assert printed_bytes(text or "") <= NARROW_CAP_BYTES
    # Every description got the same share: the lines have equal length.
    assert len({len(line) for line in shown}) == 1


def test_a_line_that_cannot_fit_goes_whole_and_others_stay() -> None:
    huge_path = "/repo/" + "deep/" * 250 + "x.md"
    records = [
        rec("note", "first", description="d", path="/p/1.md"),
        rec("adr", "Title", adr_id="ADR-0009", path=huge_path),
        rec("note", "third", description="d", path="/p/3.md"),
    ]
    text = format_context(selection(records, NARROW_CAP_BYTES), marks({"ADR-0009": SUPERSEDED}))
    shown = lines_of(text)[1:]
    assert shown == ["note  first — d (/p/1.md)", "note  third — d (/p/3.md)"]


def test_mark_is_never_cut_even_when_title_is_emptied() -> None:
    records = [rec("adr", "T" * 3000, adr_id="ADR-0001", path="/a/0001.md")]
    text = format_context(selection(records, NARROW_CAP_BYTES), marks({"ADR-0001": SUPERSEDED}))
    line = lines_of(text)[1]
    assert line.startswith(f"{SUPERSEDED} adr  ADR-0001 ")
    assert line.endswith(" (/a/0001.md)")
    assert printed_bytes(text or "") <= NARROW_CAP_BYTES


def test_nothing_fits_gives_none() -> None:
    # A path never shrinks (a cut path names no file): one longer than the cap cannot fit.
    records = [rec("note", "n", path="/p/" + "deep/" * 250 + "n.md")]
    assert format_context(selection(records, NARROW_CAP_BYTES), marks({})) is None


def test_a_long_name_is_capped_not_left_out() -> None:
    # A name is the line's fixed head, so it has a cap of its own (docs/daemon.md).
    records = [rec("note", "n" * 2000, path="/p/n.md")]
    line = lines_of(format_context(selection(records, NARROW_CAP_BYTES), marks({})))[1]
    assert line == f"note  {'n' * (NAME_CHARS - 1)}{ELLIPSIS} (/p/n.md)"
