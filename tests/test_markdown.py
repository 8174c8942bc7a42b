"""The Markdown helpers notes and ADRs share: front matter, fences, dates, one-line text."""

from __future__ import annotations

import datetime as dt

import pytest

from precedents.text import (
    FAST_LOADER,
    SAFE_LOADER,
    fence_marker,
    find_iso_date,
    iso_date,
    normalize,
    one_line,
    split_front_matter,
    unfenced,
    yaml_day,
)

LOADERS = pytest.mark.parametrize("loader", [SAFE_LOADER, FAST_LOADER], ids=["pure", "c"])

# ------------------------------------------------------------------ front matter


@LOADERS
def test_valid_front_matter(loader: object) -> None:
    found = split_front_matter("---\nname: X\nTags: [a, b]\n---\n\n# Title\n", loader=loader)
    # Keys are returned as written: lower-casing is the ADR graph's own policy.
    assert found.data == {"name": "X", "Tags": ["a", "b"]}
    assert found.body == "\n# Title\n"
    assert found.raw == "name: X\nTags: [a, b]\n"
    assert (found.problem, found.error, found.exception) == (None, None, None)


def test_no_front_matter_is_the_whole_text() -> None:
    for text in ("# Title\n\n---\nname: x\n---\n", "", "---", " ---\nname: x\n---\n"):
        found = split_front_matter(text)
        assert (found.data, found.body, found.raw, found.problem) == (None, text, None, None)


def test_empty_block_is_an_empty_mapping() -> None:
    found = split_front_matter("---\n---\nBody")
    assert (found.data, found.body, found.raw, found.error) == ({}, "Body", "", None)


def test_blanks_after_the_markers_and_yaml_end_marker() -> None:
    found = split_front_matter("--- \t\nname: x\n... \nBody")
    assert (found.data, found.body) == ({"name": "x"}, "Body")


def test_closing_line_at_the_end_of_the_text() -> None:
    found = split_front_matter("---\nname: x\n---")
    assert (found.data, found.body) == ({"name": "x"}, "")


def test_unclosed_front_matter() -> None:
    text = "---\nname: never closed\n\n# Title\n"
    found = split_front_matter(text)
    assert (found.data, found.body, found.raw) == (None, text, None)
    assert (found.problem, found.error) == ("unclosed", "no closing '---' line")


@LOADERS
def test_invalid_yaml_names_the_line_in_the_file(loader: object) -> None:
    found = split_front_matter("---\nname: a\nlist: [unclosed\n---\nBody", loader=loader)
    assert (found.data, found.body, found.problem) == (None, "Body", "invalid_yaml")
    assert found.raw == "name: a\nlist: [unclosed\n"
    assert found.error is not None and "(line " in found.error
    assert found.exception is not None


def test_unsafe_tag_is_refused_not_run() -> None:
    found = split_front_matter("---\n!!python/object/apply:os.system [echo hi]\n---\n")
    assert found.problem == "invalid_yaml"
    assert found.error is not None and "constructor" in found.error


def test_value_yaml_cannot_build_is_a_problem_not_an_exception() -> None:
    # An unquoted impossible date makes PyYAML raise ValueError, not a YAMLError.
    found = split_front_matter("---\ndate: 2024-02-30\n---\nBody")
    assert (found.data, found.body, found.problem, found.error) == (
        None,
        "Body",
        "invalid_yaml",
        "ValueError",
    )
    assert isinstance(found.exception, ValueError)


@pytest.mark.parametrize(
    ("block", "error"),
    [
        ("- a\n- b\n", "YAML is a list, not a mapping"),
        ("just a scalar\n", "YAML is a scalar, not a mapping"),
        ("42\n", "YAML is a scalar, not a mapping"),
    ],
)
def test_front_matter_that_is_not_a_mapping(block: str, error: str) -> None:
    found = split_front_matter(f"---\n{block}---\nBody")
    assert (found.data, found.body, found.raw) == (None, "Body", block)
    assert (found.problem, found.error) == ("not_a_mapping", error)


def test_deep_nesting_never_raises() -> None:
    deep = "x: " + "[" * 2000 + "]" * 2000
    # The pure loader recurses past Python's limit: a problem, not a crash.
    found = split_front_matter(f"---\n{deep}\n---\nBody")
    assert (found.body, found.problem, found.error) == ("Body", "invalid_yaml", "RecursionError")
    assert isinstance(found.exception, RecursionError)
    # The C loader reads it, or (newer libyaml) refuses it past a nesting limit.
    found = split_front_matter(f"---\n{deep}\n---\nBody", loader=FAST_LOADER)
    assert found.body == "Body"
    assert found.problem in (None, "invalid_yaml")
    # Unclosed, it is invalid YAML like any other.
    found = split_front_matter("---\nx: " + "[" * 2000 + "\n---\nBody", loader=FAST_LOADER)
    assert (found.body, found.problem) == ("Body", "invalid_yaml")


def test_bom_and_crlf_are_the_callers_to_normalize() -> None:
    text = "\ufeff---\r\nname: X\r\n---\r\nBody\r\n"
    assert split_front_matter(text).data is None  # the BOM hides the opening line
    found = split_front_matter(normalize(text))
    assert (found.data, found.body) == ({"name": "X"}, "Body\n")


def test_normalize() -> None:
    assert normalize("\ufeffa\r\nb\rc\n") == "a\nb\nc\n"
    assert normalize("\ufeff\ufeffa") == "\ufeffa"  # one BOM, as a decoder drops one
    assert normalize("plain\n") == "plain\n"


# ------------------------------------------------------------------ one line


def test_one_line() -> None:
    assert one_line("  folded\n  text\t here \n") == "folded text here"
    assert one_line("a\u00a0\u2028b") == "a b"  # Unicode whitespace too
    assert one_line(" \n\t ") == ""


# ------------------------------------------------------------------ dates


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (dt.date(2024, 1, 5), "2024-01-05"),
        (dt.datetime(2024, 1, 5, 10, 20, 30, tzinfo=dt.UTC), "2024-01-05"),
        ("2024-01-05", "2024-01-05"),
        (" 2024-01-05 10:20 ", "2024-01-05"),
        ("2024-13-45", None),  # shaped like a date, but no day
        ("2024-02-30", None),
        ("yesterday", None),
        ("on 2024-01-05", None),  # strict: the text must start with the date
        (20240105, None),
        (["2024-01-05"], None),
        (None, None),
    ],
)
def test_iso_date_is_strict(value: object, expected: str | None) -> None:
    assert iso_date(value) == expected


def test_yaml_day_takes_only_date_objects() -> None:
    assert yaml_day(dt.datetime(1999, 12, 31, 23, 59)) == "1999-12-31"
    assert yaml_day(dt.date(2000, 2, 29)) == "2000-02-29"
    assert yaml_day("2000-02-29") is None


def test_yaml_turns_unquoted_dates_into_date_objects() -> None:
    found = split_front_matter(
        "---\na: 2024-01-05\nb: 2024-01-05T10:20:30Z\nc: '2024-01-05'\n---\n"
    )
    assert found.data is not None
    assert [iso_date(found.data[k]) for k in "abc"] == ["2024-01-05"] * 3


def test_find_iso_date_is_lenient() -> None:
    assert find_iso_date("Date: 2024-05-06 (revised 2024-07-01)") == "2024-05-06"
    assert find_iso_date("2024-13-45") == "2024-13-45"  # shown, never computed with
    assert find_iso_date("May 2024") is None


# ------------------------------------------------------------------ code fences


@pytest.mark.parametrize(
    ("line", "marker"),
    [
        ("```", "```"),
        ("```python", "```"),
        ("~~~~ text", "~~~~"),
        ("   ```", "```"),
        ("``", None),
        ("~~", None),
        ("text ```", None),
        ("", None),
    ],
)
def test_fence_marker(line: str, marker: str | None) -> None:
    assert fence_marker(line) == marker


def test_fence_marker_max_indent() -> None:
    assert fence_marker("   ```", max_indent=3) == "```"
    assert fence_marker("    ```", max_indent=3) is None  # an indented code block
    assert fence_marker("    ```") == "```"


def test_unfenced_skips_fenced_lines_and_closing_fences() -> None:
    lines = [
        "# Title",  # 0
        "```bash",  # 1: opens, yielded
        "# a comment, not a heading",  # 2
        "~~~",  # 3: another marker does not close a backtick fence
        "```",  # 4: closes, not yielded
        "after",  # 5
        "~~~~",  # 6: opens
        "~~~",  # 7: shorter, does not close
        "~~~~~",  # 8: longer, closes
        "  end  ",  # 9
    ]
    assert list(unfenced(lines)) == [
        (0, "# Title", False),
        (1, "```bash", True),
        (5, "after", False),
        (6, "~~~~", True),
        (9, "end", False),
    ]


def test_unclosed_fence_hides_the_rest() -> None:
    assert list(unfenced(["a", "```", "b", "c"])) == [(0, "a", False), (1, "```", True)]
