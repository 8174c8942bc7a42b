"""The parser alone: formats, titles, dates, status words, links."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from precedents.adr_graph.model import Ref
from precedents.adr_graph.parse import classify, parse_text
from precedents.adr_graph.text import file_id, make_ref


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("0005-use-x.md", ("0005", 5)),
        ("ADR-0005-use-x.md", ("0005", 5)),
        ("adr-5.md", ("5", 5)),
        ("ADR028-container-tools.md", ("028", 28)),
        ("docs/adr/20200926-slug.md", ("20200926-slug", None)),
        ("packages/core/docs/adr/20201002-x.md", ("core/20201002-x", None)),
        ("README.md", (None, None)),
    ],
)
def test_file_ids(name: str, expected: tuple[str | None, int | None]) -> None:
    assert file_id(name) == expected


@pytest.mark.parametrize(
    ("h1", "title"),
    [
        ("# 1. Record decisions", "Record decisions"),
        ("# ADR031: Providing Postgres", "Providing Postgres"),
        ("# ADRXXX: Title", "Title"),
        ("# 33.  Double space", "Double space"),
        ("# ADR-0005 Use X", "Use X"),
        ("# [Superseded by [ADR-0019](0019-x.md)] Push Metrics", "Push Metrics"),
        ("# Use `public final` fields", "Use `public final` fields"),
    ],
)
def test_titles(h1: str, title: str) -> None:
    rec = parse_text(f"{h1}\n\n## Status\n\nAccepted\n", "0001-x.md")
    assert rec is not None and rec.title == title


@pytest.mark.parametrize(
    ("value", "cls"),
    [
        ("Accepted", "live"),
        ("✅ Accepted", "live"),
        ("**Approved**", "live"),
        ("Implemented", "live"),
        ("Amended", "live"),
        ("Pending", "proposed"),
        ("Draft", "proposed"),
        ("In review", "proposed"),
        ("❌ Rejected", "rejected"),
        ("Declined", "rejected"),
        ("Deprecated", "deprecated"),
        ("⌛️ Superseded [0019](0019-x.md)", "superseded"),
        ("Superceded by [ADR024](ADR024-x.md)", "superseded"),
        ("superseded by ADR-0005", "superseded"),
        ("Partly superseded", "partially_superseded"),
        ("Accepted | Pending | Superseded by [X](x.md)", "template"),
        ("[proposed | rejected | accepted]", "template"),
        ("Whatever", "unrecognised"),
    ],
)
def test_status_words(value: str, cls: str) -> None:
    assert classify(value, "").cls == cls


def test_relations_in_one_status_line() -> None:
    decl = classify("Accepted; supersedes ADR-0045, amended by [7. Y](0007-y.md)", "")
    assert decl.cls == "live"
    assert decl.relations == [
        ("supersedes", Ref("token", "ADR-0045", "ADR-0045")),
        ("amended_by", Ref("path", "0007-y.md", "7. Y")),
    ]


def test_make_ref_kinds() -> None:
    assert make_ref("https://x.org/a", "a", "").kind == "url"
    assert make_ref("../other/1.md", "", "").kind == "outside"
    assert make_ref("0002-b.md#decision", "", "sub").value == "sub/0002-b.md"
    assert make_ref("/000-template.md", "", "sub").value == "000-template.md"
    assert make_ref("My%20File.md", "", "").value == "My File.md"


def test_madr_front_matter_and_bullets() -> None:
    text = (
        "---\nstatus: superseded by ADR-0005\ndate: 2024-05-06\ncomponent: billing\n"
        "supersedes: [ADR-0001, '[2](0002-b.md)']\n---\n# Use X\n"
    )
    rec = parse_text(text, "0003-x.md")
    assert rec is not None
    assert (rec.declared_class, rec.date, rec.component) == ("superseded", "2024-05-06", "billing")
    assert {(r.type, r.ref.value) for r in rec.relations} == {
        ("superseded_by", "ADR-0005"),
        ("supersedes", "ADR-0001"),
        ("supersedes", "0002-b.md"),
    }
    bullets = parse_text(
        "# Y\n\n* Status: proposed\n* Date: 2021-02-03\n\n## Context\n", "0004-y.md"
    )
    assert bullets is not None and (bullets.declared_class, bullets.date) == (
        "proposed",
        "2021-02-03",
    )


def test_status_inside_code_fence_is_ignored() -> None:
    text = "# 1. X\n\n```\n## Status\n\nRejected\n```\n\n## Status\n\nAccepted\n"
    rec = parse_text(text, "0001-x.md")
    assert rec is not None and rec.declared_class == "live"


def test_status_heading_with_value_and_bold_label() -> None:
    a = parse_text("# 1. X\n\n## Status: Accepted\n", "0001-x.md")
    b = parse_text("# 2. Y\n\n**Status:** Rejected\n\n## Context\n", "0002-y.md")
    assert a is not None and a.declared_class == "live"
    assert b is not None and b.declared_class == "rejected"


def test_file_without_number_or_status_is_not_an_adr() -> None:
    assert parse_text("# Decision log\n\n- [1](0001-x.md)\n", "index.md") is None
    tpl = "# [short title]\n\n- Status: [proposed | rejected | accepted]\n"
    assert parse_text(tpl, "template.md") is None


# Long enough that a quadratic pattern would take minutes; linear, each parses in
# well under a second. The bound is generous so that a slow machine never fails.
PATHOLOGICAL_SECONDS = 15
_PARSE_IN_CHILD = """
import json, sys
from precedents.adr_graph.parse import parse_text
unit = sys.stdin.read()
rec = parse_text("# 1. X\\n\\n## Status\\n\\n" + unit * (80_000 // len(unit)), "0001-x.md")
print(json.dumps(None if rec is None else [rec.id, rec.title, rec.declared_class]))
"""


@pytest.mark.parametrize(
    ("unit", "declared"),
    [
        ("[a](", "unrecognised"),  # unclosed links: the link pattern must fail fast
        ("<!--", "no_status"),  # unclosed comments: the text is kept, it says nothing
        ("[Superseded by [", "superseded"),  # nested brackets in link text
        (" ", "no_status"),
        ("supersedes [a](", "no_status"),  # the prose pattern on every hit
    ],
)
def test_pathological_input_parses_in_linear_time(unit: str, declared: str) -> None:
    # Each of these was (or could be) quadratic in a naive regex. The parse runs in a
    # child process with a timeout, so a regression fails here instead of hanging the
    # suite: a regex stuck in C holds the GIL, so a thread could not be timed out.
    try:
        done = subprocess.run(
            [sys.executable, "-c", _PARSE_IN_CHILD],
            input=unit,
            capture_output=True,
            text=True,
            timeout=PATHOLOGICAL_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{unit!r} * 80k did not parse in {PATHOLOGICAL_SECONDS} s: quadratic again?")
    assert done.returncode == 0, done.stderr
    # Still read as a record, with the status the text really declares.
    assert json.loads(done.stdout) == ["0001", "X", declared]
