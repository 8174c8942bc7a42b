"""Relations read from text (issue #12, item 3): a record that undoes, reverts,
replaces, amends or extends an earlier one only in its title or first lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from precedents.adr_graph import build_graph
from precedents.adr_graph.declaration import text_relations


def nygard(n: int, title: str, status: str = "Accepted", context: str = "Some context.") -> str:
    return (
        f"# {n}. {title}\n\nDate: 2024-01-01\n\n## Status\n\n{status}\n\n"
        f"## Context\n\n{context}\n\n## Decision\n\nWe will do it.\n"
    )


def folder(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "adr"
    root.mkdir(exist_ok=True)
    for name, content in files.items():
        (root / name).write_text(content, encoding="utf-8")
    return root


def old_and_new(tmp_path: Path, old: int, new_title: str, **kw: str) -> Path:
    new = 200 if old > 100 else 20
    return folder(
        tmp_path,
        {
            f"{old:04d}-old.md": nygard(old, "Use MySQL"),
            f"{new:04d}-new.md": nygard(new, new_title, **kw),
        },
    )


# --- titles -------------------------------------------------------------------

SUPERSEDING_TITLES = [
    ("Revert ADR-12: use Postgres again", 12),
    ("Reverts ADR 12", 12),
    ("Replaces ADR 7", 7),
    ("Replace ADR-0007 with Postgres", 7),
    ("Undo ADR 12", 12),
    ("Revert [ADR 12](0012-old.md)", 12),
    ("Reverts [Use MySQL](0012-old.md)", 12),
]


@pytest.mark.parametrize(("title", "old"), SUPERSEDING_TITLES)
def test_title_supersedes(tmp_path: Path, title: str, old: int) -> None:
    g = build_graph(old_and_new(tmp_path, old, title))
    assert g.status_of(str(old)) == "superseded"
    assert g.mark_of(str(old)) == "⚠️superseded → ADR-0020"
    assert g.status_of("20") == "live"
    assert g.mark_of("20") == ""


PARTIAL_TITLES = [
    ("Partly undo ADR 109", 109),
    ("Partially revert ADR-0012", 12),
    ("Replaces the part of ADR 7 about caching", 7),
    ("Replace part of ADR 7", 7),
    ("Reverts ADR 12 in part", 12),
]


@pytest.mark.parametrize(("title", "old"), PARTIAL_TITLES)
def test_title_partially_supersedes(tmp_path: Path, title: str, old: int) -> None:
    g = build_graph(old_and_new(tmp_path, old, title))
    succ = "ADR-0200" if old > 100 else "ADR-0020"
    assert g.status_of(str(old)) == "partially_superseded"
    assert g.mark_of(str(old)) == f"△partially superseded → {succ}"


@pytest.mark.parametrize(
    "title", ["Amends ADR 5", "Amendment to ADR-0005", "Extends ADR 5", "Extension of ADR 5"]
)
def test_title_amends_keeps_old_record_live(tmp_path: Path, title: str) -> None:
    g = build_graph(old_and_new(tmp_path, 5, title))
    old = g.get("5")
    assert old.status == "live"
    assert old.mark == ""
    assert any(r.get("type") == "amended_by" for r in old.relations), old.relations
    new = g.get("20")
    assert any(r.get("type") == "amends" for r in new.relations), new.relations


# --- first lines ----------------------------------------------------------------


def test_preamble_line_reverts(tmp_path: Path) -> None:
    text = "# 20. Use Postgres again\n\nThis reverts ADR-0012.\n\n## Status\n\nAccepted\n"
    root = folder(tmp_path, {"0012-old.md": nygard(12, "Use MySQL"), "0020-new.md": text})
    g = build_graph(root)
    assert g.mark_of("12") == "⚠️superseded → ADR-0020"


def test_madr_bullets_preamble(tmp_path: Path) -> None:
    text = (
        "# Use Postgres again\n\n* Status: accepted\n* Date: 2024-01-01\n\n"
        "Partially reverts [ADR-0012](0012-old.md).\n\n## Context and Problem Statement\n\nX.\n"
    )
    root = folder(tmp_path, {"0012-old.md": nygard(12, "Use MySQL"), "0020-new.md": text})
    g = build_graph(root)
    assert g.mark_of("12") == "△partially superseded → ADR-0020"


def test_context_first_paragraph(tmp_path: Path) -> None:
    root = old_and_new(tmp_path, 7, "Use Postgres", context="This replaces ADR 7 and ADR 8.")
    (root / "0008-other.md").write_text(nygard(8, "Use Redis"), encoding="utf-8")
    g = build_graph(root)
    assert g.mark_of("7") == "⚠️superseded → ADR-0020"
    assert g.mark_of("8") == "⚠️superseded → ADR-0020"


def test_later_paragraphs_are_not_read(tmp_path: Path) -> None:
    ctx = "Some context.\n\nLater on, this replaces ADR 7."
    g = build_graph(old_and_new(tmp_path, 7, "Use Postgres", context=ctx))
    assert g.status_of("7") == "live"


def test_front_matter_title(tmp_path: Path) -> None:
    text = "---\ntitle: Revert ADR 12\nstatus: accepted\n---\n\n## Context\n\nX.\n"
    root = folder(tmp_path, {"0012-old.md": nygard(12, "Use MySQL"), "0020-new.md": text})
    assert build_graph(root).mark_of("12") == "⚠️superseded → ADR-0020"


# --- the rule: a proposal replaces nothing yet ------------------------------------


def test_proposed_reverting_record_replaces_nothing(tmp_path: Path) -> None:
    g = build_graph(old_and_new(tmp_path, 12, "Revert ADR-12", status="Proposed"))
    assert g.status_of("12") == "live"
    assert g.mark_of("12") == ""
    assert g.mark_of("20") == "△proposed (not approved)"


def test_chain_through_text_relation(tmp_path: Path) -> None:
    root = folder(
        tmp_path,
        {
            "0001-a.md": nygard(1, "A"),
            "0002-b.md": nygard(2, "Replaces ADR 1"),
            "0003-c.md": nygard(3, "Revert ADR 2: back to A"),
        },
    )
    g = build_graph(root)
    assert g.mark_of("1") == "⚠️superseded → ADR-0003"
    assert g.chain("1")["current"] == "0003"


# --- negations and mentions ----------------------------------------------------

NOT_RELATIONS = [
    "This does not replace ADR 3",
    "Unlike ADR 3, use Postgres",
    "See ADR 3",
    "As in ADR 3, use Postgres",
    "ADR 3 chose MySQL",
    "ADR 3 replaces ADR 2",
    "Revert to ADR 3",
    "Replaced by ADR 3",
    "We considered replacing ADR 3",
    "Instead of reverting ADR 3, extend it",
    "Replace [MySQL](https://www.mysql.com) with Postgres",
]


@pytest.mark.parametrize("title", NOT_RELATIONS)
def test_negations_and_mentions_create_nothing(tmp_path: Path, title: str) -> None:
    root = folder(
        tmp_path,
        {
            "0002-two.md": nygard(2, "Two"),
            "0003-old.md": nygard(3, "Use MySQL"),
            "0020-new.md": nygard(20, title, context=title + "."),
        },
    )
    g = build_graph(root)
    assert g.status_of("3") == "live"
    assert g.status_of("2") == "live"
    new = g.get("20")
    assert not [r for r in new.relations if r.get("type") != "amended_by"], new.relations


def test_self_reference_is_not_a_cycle(tmp_path: Path) -> None:
    root = folder(tmp_path, {"0012-x.md": nygard(12, "Amends ADR 12 rollout")})
    assert build_graph(root).status_of("12") == "live"


def test_explicit_declaration_wins_over_title(tmp_path: Path) -> None:
    g = build_graph(
        old_and_new(
            tmp_path, 12, "Partially revert ADR 12", status="Accepted\n\nSupersedes ADR-0012"
        )
    )
    assert g.mark_of("12") == "⚠️superseded → ADR-0020"


def test_text_relations_unit() -> None:
    assert [(k, r.value) for k, r in text_relations("Partly undo ADR 109", "")] == [
        ("partially_supersedes", "ADR 109")
    ]
    assert text_relations("does not replace ADR 3", "") == []


_PATHOLOGICAL = """
import sys
from precedents.adr_graph.parse import parse_text
unit = sys.argv[1]
body = unit * (80_000 // len(unit))
parse_text("# 1. " + body + "\\n\\n" + body + "\\n\\n## Context\\n\\n" + body, "0001-x.md")
"""


@pytest.mark.parametrize(
    "unit", ["replace ", "revert the part of ", "revert [a](", "replaces ADR 1, ", "partly \t"]
)
def test_pathological_first_lines_parse_in_linear_time(unit: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PATHOLOGICAL, unit],
        capture_output=True,
        text=True,
        timeout=15,
        check=False,
    )
    assert done.returncode == 0, done.stderr
