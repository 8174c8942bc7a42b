"""The status vocabulary: one table of status words, as documented, read in every format."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from precedents.adr_graph import build_graph
from precedents.adr_graph.declaration import STATUS_WORDS, classify, status_word
from precedents.adr_graph.graph import AdrGraph

DOC = Path(__file__).resolve().parents[1] / "docs" / "adr-graph.md"
WORDS = [(word, cls) for cls, words in STATUS_WORDS for word in words]


def _graph(tmp_path: Path, files: dict[str, str]) -> AdrGraph:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return build_graph(tmp_path)


def nygard(status: str) -> str:
    return f"# 1. Use X\n\nDate: 2021-03-04\n\n## Status\n\n{status}\n\n## Context\n\nWhy.\n"


def madr(status: str) -> str:
    value = status.replace('"', '\\"')
    return f'---\nstatus: "{value}"\ndate: 2021-03-04\n---\n# Use X\n\n## Context\n\nWhy.\n'


def _doc_table() -> list[tuple[str, str]]:
    """The (word, status) rows of the 'Status words' table in docs/adr-graph.md."""
    section = DOC.read_text(encoding="utf-8").split("## Status words", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| (.+?) \|$", section, re.M)
    return [(w.strip(), cls) for cls, words in rows for w in words.split(",")]


def test_documented_table_is_the_code_table() -> None:
    assert _doc_table() == WORDS


def test_table_is_well_formed() -> None:
    words = [w for w, _ in WORDS]
    assert len(words) == len(set(words)), "a word appears twice"
    assert {c for c, _ in STATUS_WORDS} == {
        "live",
        "proposed",
        "rejected",
        "deprecated",
        "superseded",
        "partially_superseded",
    }


# Superseded words name no successor here: the effective status is still the table's.
@pytest.mark.parametrize(("word", "cls"), WORDS)
def test_each_word_nygard_and_madr(tmp_path: Path, word: str, cls: str) -> None:
    assert status_word(word) == cls
    assert status_word(word.upper()) == cls
    assert status_word(word.title()) == cls
    (tmp_path / "n").mkdir()
    (tmp_path / "m").mkdir()
    g = _graph(tmp_path / "n", {"0001-use-x.md": nygard(word)})
    assert g.status_of("1") == cls, (word, g.get("1").reason)
    g = _graph(tmp_path / "m", {"0001-use-x.md": madr(word)})
    assert g.status_of("1") == cls, (word, g.get("1").reason)


@pytest.mark.parametrize(
    ("value", "cls"),
    [
        ("✅ Accepted", "live"),
        ("❌ Rejected", "rejected"),
        ("🚧 Draft", "proposed"),
        ("⏳ Pending", "proposed"),
        ("🗑️ Deprecated", "deprecated"),
        ("⌛️ Superseded", "superseded"),
        ("**Accepted** (2021-03-04)", "live"),
        ("*Accepted*", "live"),
        ("_Rejected_", "rejected"),
        ("`proposed`", "proposed"),
        ("[Accepted]", "live"),
        ("ACCEPTED.", "live"),
        ("Accepted!", "live"),
        ("accepted;", "live"),
        ("Approved on 2021-03-04 by the board", "live"),
        ("2021-03-04 Accepted", "live"),
        ("Work-in-progress", "proposed"),
        ("work  in\tprogress", "proposed"),
        ("Won’t do", "rejected"),
        ("won't-do", "rejected"),
        ("Partially accepted", "live"),
        ("Not accepted", "rejected"),
        ("Obsolète", "deprecated"),
        ("Acceptée", "live"),
        ("Draft: needs review", "proposed"),
    ],
)
def test_emoji_markup_and_forms(value: str, cls: str) -> None:
    assert classify(value, "").cls == cls


@pytest.mark.parametrize(
    "value", ["Accept_", "acceptedx", "Frobbed", "Reviewed-ish", "Akzeptanz", "approval"]
)
def test_not_a_status_word(value: str) -> None:
    expected = "live" if value == "Accept_" else "unrecognised"
    assert status_word(value) == expected


@pytest.mark.parametrize(
    ("value", "cls", "relation"),
    [
        ("Superseded by [2. Y](0002-y.md)", "superseded", "superseded_by"),
        ("Replaced by [2. Y](0002-y.md)", "superseded", "superseded_by"),
        ("Accepted, amended by [2. Y](0002-y.md)", "live", "amended_by"),
        ("⌛️ Superseded [2. Y](0002-y.md)", "superseded", None),
        ("Ersetzt durch [2. Y](0002-y.md)", "superseded", None),
    ],
)
def test_relations_stay_relations(value: str, cls: str, relation: str | None) -> None:
    decl = classify(value, "")
    assert decl.cls == cls
    if relation is None:
        assert [r.value for r in decl.loose_links] == ["0002-y.md"]
    else:
        assert [(t, r.value) for t, r in decl.relations] == [(relation, "0002-y.md")]


def test_german_replacement_names_successor(tmp_path: Path) -> None:
    g = _graph(
        tmp_path,
        {
            "0001-use-x.md": nygard("Ersetzt durch [2. Y](0002-y.md)"),
            "0002-y.md": nygard("Akzeptiert"),
        },
    )
    assert g.status_of("1") == "superseded" and g.status_of("2") == "live"
    assert g.mark_of("1") == "⚠️superseded → ADR-0002"


def test_unknown_word_is_unknown_and_checked_with_file_and_line(tmp_path: Path) -> None:
    g = _graph(
        tmp_path,
        {
            "0001-use-x.md": nygard("Frobbed"),
            "0002-use-y.md": madr("on the fence"),
            "0003-use-z.md": nygard("Accepted"),
        },
    )
    assert g.status_of("1") == "unknown" and g.status_of("2") == "unknown"
    found = [f for f in g.check() if f.kind == "unrecognised_status"]
    assert [(f.path, f.severity) for f in found] == [
        ("0001-use-x.md", "error"),
        ("0002-use-y.md", "error"),
    ]
    assert found[0].message.startswith("line 7: ADR-0001 has the status 'Frobbed'")
    assert found[1].message.startswith("line 2: ADR-0002 has the status 'on the fence'")


def test_unknown_word_line_survives_the_cache(tmp_path: Path) -> None:
    folder, cache = tmp_path / "adr", tmp_path / "cache"
    folder.mkdir()
    (folder / "0001-use-x.md").write_text("# 1. X\n\nStatus: Frobbed\n", encoding="utf-8")
    first = [f.message for f in build_graph(folder, cache).check()]
    again = [f.message for f in build_graph(folder, cache).check()]
    assert first == again and first[0].startswith("line 3: ADR-0001")


def test_no_status_is_still_no_status(tmp_path: Path) -> None:
    g = _graph(tmp_path, {"0001-a.md": "# 1. A\n\n## Context\n\nNo status here.\n"})
    assert [f.kind for f in g.check()] == ["no_status"]
