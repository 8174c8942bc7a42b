"""Notes, rules and ADRs: front matter parsing and the exact 700/100/6 chunk rule."""

from __future__ import annotations

import itertools
import string
from pathlib import Path

import pytest

from precedents.ingest.chunking import (
    CHUNK_CHARS,
    CHUNK_OVERLAP,
    DERIVED_DESCRIPTION_CHARS,
    MAX_CHUNKS,
    chunk_document,
    is_memory_index,
    parse_note,
    split_pieces,
)

STEP = CHUNK_CHARS - CHUNK_OVERLAP


def text_of(length: int) -> str:
    """A body whose every 4-character window is unique, so offsets are checkable."""
    out: list[str] = []
    i = 0
    alphabet = string.ascii_letters + string.digits
    while sum(map(len, out)) < length:
        out.append(f"{alphabet[i % 62]}{alphabet[(i // 62) % 62]}{i % 10} ")
        i += 1
    return "".join(out)[:length]


# ------------------------------------------------------------------ the chunk rule


def test_constants_are_the_spec_values() -> None:
    assert (CHUNK_CHARS, CHUNK_OVERLAP, MAX_CHUNKS) == (700, 100, 6)


def test_short_note_is_one_chunk_of_name_description_body() -> None:
    assert chunk_document("Use uv", "not pip", "Because it is fast.") == [
        "Use uv\nnot pip\nBecause it is fast."
    ]


def test_empty_description_leaves_no_blank_line() -> None:
    assert chunk_document("Use uv", "", "Body.") == ["Use uv\nBody."]


def test_empty_body_gives_head_only() -> None:
    assert chunk_document("Use uv", "not pip", "") == ["Use uv\nnot pip"]


def test_nothing_at_all_gives_no_chunk() -> None:
    assert chunk_document("", "", "") == []


def test_body_that_just_fits_chunk_zero_is_one_chunk() -> None:
    # "N\nD\n" is 4 characters, so chunk 0 holds 696 characters of body.
    body = text_of(696)
    assert chunk_document("N", "D", body) == ["N\nD\n" + body]


def test_one_character_more_makes_a_second_piece_overlapping_by_100() -> None:
    body = text_of(697)
    chunks = chunk_document("N", "D", body)
    assert chunks == ["N\nD\n" + body[:696], "N\n" + body[596:697]]
    # The boundary between chunk 0 and chunk 1 overlaps by exactly 100 characters.
    assert chunks[0][-CHUNK_OVERLAP:] == chunks[1][2 : 2 + CHUNK_OVERLAP]


def test_exact_sizes_offsets_and_overlaps_of_a_long_body() -> None:
    name, description = "Payments go through a queue", "ADR-0007 decision"
    body = text_of(2500)
    chunks = chunk_document(name, description, body)
    offset = len(name) + 1 + len(description) + 1
    covered = CHUNK_CHARS - offset
    assert chunks[0] == f"{name}\n{description}\n{body[:covered]}"
    assert len(chunks[0]) == CHUNK_CHARS
    starts = [covered - CHUNK_OVERLAP + k * STEP for k in range(len(chunks) - 1)]
    for chunk, start in zip(chunks[1:], starts, strict=True):
        assert chunk == f"{name}\n{body[start : start + CHUNK_CHARS]}"
    # Every piece but the last is exactly 700 characters of body (plus the prefix).
    assert all(len(c) == len(name) + 1 + CHUNK_CHARS for c in chunks[1:-1])
    # Consecutive pieces overlap by exactly 100 characters.
    pieces = [c[len(name) + 1 :] for c in chunks[1:]]
    for a, b in itertools.pairwise(pieces):
        assert a[-CHUNK_OVERLAP:] == b[:CHUNK_OVERLAP]
    # The last piece reaches the end of the body.
    assert body.endswith(pieces[-1])


def test_at_most_six_chunks_and_where_the_cap_cuts() -> None:
    body = text_of(20_000)
    chunks = chunk_document("N", "D", body)
    assert len(chunks) == MAX_CHUNKS
    last_start = 596 + 4 * STEP
    assert chunks[-1] == "N\n" + body[last_start : last_start + CHUNK_CHARS]


@pytest.mark.parametrize("length", [*range(0, 3000, 37), 696, 697, 1295, 1296, 1297, 3696])
def test_pieces_cover_the_body_and_the_last_adds_something(length: int) -> None:
    body = text_of(length)
    chunks = chunk_document("N", "", body)
    pieces = [c[2:] for c in chunks[1:]]
    covered = CHUNK_CHARS - 2
    if length <= covered:
        assert len(chunks) == 1
        return
    ends = [covered - CHUNK_OVERLAP + k * STEP + len(p) for k, p in enumerate(pieces)]
    assert ends == sorted(set(ends)), "each piece must add characters"
    if len(chunks) < MAX_CHUNKS:
        assert ends[-1] == length


def test_long_name_and_description_push_the_whole_body_into_pieces() -> None:
    name, description = "N" * 300, "D" * 500
    body = text_of(800)
    chunks = chunk_document(name, description, body)
    assert chunks[0] == (name + "\n" + description)[:CHUNK_CHARS]
    assert chunks[1] == name + "\n" + body[:700]
    assert chunks[2] == name + "\n" + body[600:800]


def test_no_prefix_when_name_is_empty() -> None:
    body = text_of(1000)
    chunks = chunk_document("", "", body)
    assert chunks == [body[:700], body[600:1000]]


def test_split_pieces_edges() -> None:
    assert split_pieces("") == []
    assert split_pieces("abc") == ["abc"]
    text = text_of(1300)
    assert split_pieces(text) == [text[:700], text[600:1300]]
    longer = text_of(1301)
    assert split_pieces(longer) == [longer[:700], longer[600:1300], longer[1200:]]
    assert split_pieces("abc", start=-5) == ["abc"]


# ------------------------------------------------------------------ parse_note


def test_front_matter_name_description_date() -> None:
    text = (
        "---\nname: Use uv\ndescription: not pip, ever\ndate: 2024-03-05\n---\n"
        "\n# Heading\n\nBody.\n"
    )
    meta = parse_note(text, "use-uv")
    assert (meta.name, meta.description, meta.date) == ("Use uv", "not pip, ever", "2024-03-05")
    assert meta.body == "# Heading\n\nBody."
    assert meta.warnings == ()


def test_nested_metadata_front_matter() -> None:
    text = (
        "---\nmetadata:\n  name: Nested name\n  description: Nested description\n"
        "  created: '2023-12-31'\n---\nBody"
    )
    meta = parse_note(text, "stem")
    assert (meta.name, meta.description, meta.date) == (
        "Nested name",
        "Nested description",
        "2023-12-31",
    )


def test_top_level_wins_over_metadata() -> None:
    text = "---\nname: Top\nmetadata:\n  name: Nested\n  description: From nested\n---\nBody"
    meta = parse_note(text, "stem")
    assert (meta.name, meta.description) == ("Top", "From nested")


def test_heading_and_first_paragraph_without_front_matter() -> None:
    text = "# Never force-push main\n\nIt rewrote\n  history   for everyone.\n\nMore text.\n"
    meta = parse_note(text, "stem")
    assert meta.name == "Never force-push main"
    assert meta.description == "It rewrote history for everyone."
    assert meta.warnings == ()


def test_heading_skips_code_fences_and_closing_hashes() -> None:
    text = "```bash\n# not a title\n```\n\n# Real title ##\n\n## Context\n\nFirst real paragraph.\n"
    meta = parse_note(text, "stem")
    assert meta.name == "Real title"
    assert meta.description == "First real paragraph."


def test_no_heading_uses_stem_and_first_paragraph_of_body() -> None:
    meta = parse_note("Just a line of prose.\nSecond line.\n\nNext para.", "my-note")
    assert meta.name == "my-note"
    assert meta.description == "Just a line of prose. Second line."


def test_front_matter_fields_fall_back_one_by_one() -> None:
    meta = parse_note("---\ndescription: From YAML\n---\n# From heading\n\nPara.", "s")
    assert (meta.name, meta.description) == ("From heading", "From YAML")


def test_derived_description_is_capped() -> None:
    meta = parse_note("# T\n\n" + "word " * 200, "s")
    assert len(meta.description) == DERIVED_DESCRIPTION_CHARS
    assert meta.description.endswith("…")


def test_multiline_yaml_description_is_one_line() -> None:
    meta = parse_note("---\nname: n\ndescription: >\n  folded\n  text\n---\n", "s")
    assert meta.description == "folded text"


def test_empty_text() -> None:
    meta = parse_note("", "empty-note")
    assert meta == parse_note("", "empty-note")
    assert (meta.name, meta.description, meta.body, meta.date, meta.warnings) == (
        "empty-note",
        "",
        "",
        "",
        (),
    )
    assert chunk_document(meta.name, meta.description, meta.body) == ["empty-note"]


def test_only_front_matter() -> None:
    meta = parse_note("---\nname: Only YAML\ndescription: nothing else\n---\n", "s")
    assert (meta.name, meta.description, meta.body) == ("Only YAML", "nothing else", "")
    assert chunk_document(meta.name, meta.description, meta.body) == ["Only YAML\nnothing else"]


def test_empty_front_matter_block_is_fine() -> None:
    meta = parse_note("---\n---\n# Title\n\nBody.", "s")
    assert (meta.name, meta.body, meta.warnings) == ("Title", "# Title\n\nBody.", ())


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("---\nname: never closed\n\n# Title\n\nBody.", "no closing"),
        ("---\nname: [unclosed\n---\n# Title\n\nBody.", "line"),
        ("---\nname: a\n  bad: indent\n---\n# Title\n\nBody.", "line"),
        ("---\n- a\n- list\n---\n# Title\n\nBody.", "a list"),
        ("---\njust a scalar\n---\n# Title\n\nBody.", "a scalar"),
        ("---\n!!python/object:os.system x\n---\n# Title\n\nBody.", "broken"),
    ],
)
def test_broken_front_matter_warns_and_keeps_everything(text: str, why: str) -> None:
    meta = parse_note(text, "stem")
    assert len(meta.warnings) == 1
    assert meta.warnings[0].startswith("broken front matter: ")
    assert why in meta.warnings[0]
    assert meta.body == text.strip()  # nothing lost
    assert meta.name == "Title"


def test_bom_is_ignored() -> None:
    meta = parse_note("\ufeff---\nname: With BOM\n---\nBody", "s")
    assert (meta.name, meta.body, meta.warnings) == ("With BOM", "Body", ())


def test_windows_line_endings() -> None:
    text = (
        "---\r\nname: CRLF note\r\ndescription: from Windows\r\n---\r\n"
        "# H\r\n\r\nLine one\r\nLine two\r\n"
    )
    meta = parse_note(text, "s")
    assert (meta.name, meta.description) == ("CRLF note", "from Windows")
    assert meta.body == "# H\n\nLine one\nLine two"
    assert "\r" not in "".join(chunk_document(meta.name, meta.description, meta.body))


def test_bom_and_crlf_without_front_matter() -> None:
    meta = parse_note("\ufeff# Title\r\n\r\nPara.\r\n", "s")
    assert (meta.name, meta.description, meta.body) == ("Title", "Para.", "# Title\n\nPara.")


@pytest.mark.parametrize(
    ("yaml_line", "expected"),
    [
        ("date: 2024-01-05", "2024-01-05"),
        ("date: '2024-01-05'", "2024-01-05"),
        ("date: 2024-01-05T10:20:30Z", "2024-01-05"),
        ("date: '2024-01-05 10:20'", "2024-01-05"),
        ("created: 2022-02-02\nupdated: 2023-03-03", "2022-02-02"),
        ("updated: 2023-03-03", "2023-03-03"),
    ],
)
def test_dates(yaml_line: str, expected: str) -> None:
    assert parse_note(f"---\n{yaml_line}\n---\n", "s").date == expected


@pytest.mark.parametrize("value", ["'2024-13-45'", "yesterday", "[2024]"])
def test_bad_date_warns_and_is_empty(value: str) -> None:
    meta = parse_note(f"---\nname: n\ndate: {value}\n---\n", "s")
    assert meta.date == ""
    assert any("date" in w for w in meta.warnings)


def test_non_text_name_warns_and_falls_back() -> None:
    meta = parse_note("---\nname: [a, b]\ndescription: 42\n---\n# Heading\n", "s")
    assert meta.name == "Heading"
    assert meta.description == "42"
    assert any("'name'" in w for w in meta.warnings)


def test_memory_index() -> None:
    assert is_memory_index(Path("/x/memory/MEMORY.md"))
    assert is_memory_index(Path("memory.md"))
    assert not is_memory_index(Path("/x/memory/use-uv.md"))
    assert not is_memory_index(Path("/x/MEMORY.md.bak"))
