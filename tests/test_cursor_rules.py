"""Rules' front matter as Cursor writes it (issue #9, item 7): `globs: **/*.ts` unquoted
is not YAML, yet it is how real `.mdc` rules are written; they are read as Cursor reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from precedents.ingest.chunking import parse_note
from precedents.text import plain_pairs, split_front_matter

from .conftest import shared_path

CURSOR_RULE = """---
description: Use bcryptjs for password hashing: never roll your own
globs: **/*.ts, src/**/*.tsx
alwaysApply: false
---
# Password hashing

Hash with bcryptjs, cost 12.
"""


def test_a_cursor_rule_reads_as_cursor_reads_it() -> None:
    found = split_front_matter(CURSOR_RULE, lenient=True)
    assert found.problem is None
    assert found.data == {
        "description": "Use bcryptjs for password hashing: never roll your own",
        "globs": "**/*.ts, src/**/*.tsx",
        "alwaysApply": False,
    }
    meta = parse_note(CURSOR_RULE, "password-hashing")
    assert meta.warnings == ()
    assert meta.name == "Password hashing"
    assert meta.description == "Use bcryptjs for password hashing: never roll your own"
    assert not meta.body.startswith("---")


def test_strict_reading_is_unchanged() -> None:
    found = split_front_matter(CURSOR_RULE)  # the ADR graph reads strictly
    assert found.problem == "invalid_yaml" and found.data is None


@pytest.mark.parametrize(
    "raw",
    [
        "description: a\n  continued: b\n",  # nesting is YAML's business
        "- a list item\n",
        "just words\n",
    ],
)
def test_anything_but_plain_pairs_is_left_to_yaml(raw: str) -> None:
    assert plain_pairs(raw) is None


def test_quoted_values_and_comments() -> None:
    assert plain_pairs("# a comment\nname: 'x: y'\nempty:\nflag: TRUE\n") == {
        "name": "x: y",
        "empty": "",
        "flag": True,
    }


def test_every_real_cursor_rule_of_the_dev_set_has_its_description() -> None:
    rules = sorted(shared_path("eval", "dev-situational", "rules").glob("*.mdc"))
    assert len(rules) >= 100
    for path in rules:
        text = path.read_text(encoding="utf-8")
        meta = parse_note(text, path.stem)
        assert meta.warnings == (), path.name
        assert "globs:" not in meta.description and "description:" not in meta.description
        declared = next(
            line.split(":", 1)[1].strip().strip("\"'")
            for line in text.splitlines()[1:]
            if line.startswith("description:")
        )
        assert meta.description == " ".join(declared.split()), path.name
        assert Path(path).suffix == ".mdc"


def test_a_store_read_by_an_older_parser_is_read_again(home: Path, tmp_path: Path) -> None:
    from precedents.config import load_settings
    from precedents.ingest.indexer import CHUNKER_VERSION, Indexer
    from precedents.ingest.sources import Sources, configured_sources, walk
    from precedents.store import open_store

    from .conftest import FakeEmbedder

    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "hashing.mdc").write_text(CURSOR_RULE)
    settings = load_settings()
    emb = FakeEmbedder()
    store = open_store(settings.index_dir, emb)  # type: ignore[arg-type]
    files = walk(configured_sources(settings, Sources(rules=(rules,))))
    indexer = Indexer(settings, store, emb)  # type: ignore[arg-type]
    assert indexer.sync(files).files_indexed == 1
    assert indexer.sync(files).files_unchanged == 1  # same parser: nothing to do
    store.stamp(chunker="1")  # as a store written before the Cursor reading
    assert indexer.sync(files).files_indexed == 1
    assert store.meta()["chunker"] == CHUNKER_VERSION
    table = store._chunks.search().select(["description"]).limit(None).to_arrow()
    assert table.column("description").to_pylist()[0].startswith("Use bcryptjs")
