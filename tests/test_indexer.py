"""Indexer logic with the fast fake embedder: dedup, deletes, bad input, model changes.

The same behaviours are checked with the real model in test_index_real.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from precedents.config import load_settings
from precedents.ingest.indexer import Indexer, IndexReport
from precedents.ingest.sources import Sources, configured_sources, walk
from precedents.recall import search
from precedents.store import Store, open_store

from .conftest import FakeEmbedder


def note(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(body, encoding="utf-8")
    return path


def index(home: Path, emb: FakeEmbedder, **dirs: list[Path]) -> tuple[IndexReport, Store]:
    settings = load_settings()
    store = open_store(settings.index_dir, emb)  # type: ignore[arg-type]
    sources = configured_sources(settings, Sources(project="/proj", **dirs))  # type: ignore[arg-type]
    return Indexer(settings, store, emb).sync(walk(sources)), store  # type: ignore[arg-type]


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for i, topic in enumerate(["postgres vacuum", "git rebase", "python typing"]):
        note(
            folder,
            f"n{i}.md",
            f"---\nname: {topic}\ndescription: about {topic}\n---\n"
            + f"Body of the note on {topic}. " * 10,
        )
    return folder


def test_unchanged_corpus_embeds_nothing(home: Path, notes: Path) -> None:
    emb = FakeEmbedder()
    first, _ = index(home, emb, notes=[notes])
    assert first.files_indexed == 3 and first.chunks_embedded >= 3
    calls = emb.texts
    second, _ = index(home, emb, notes=[notes])
    assert (second.files_indexed, second.files_unchanged, second.chunks_embedded) == (0, 3, 0)
    assert emb.texts == calls


def test_edit_reembeds_only_that_note(home: Path, notes: Path) -> None:
    emb = FakeEmbedder()
    index(home, emb, notes=[notes])
    note(notes, "n1.md", "# Git rebase\n\nUse rebase --onto to move a branch.")
    emb.texts = 0
    report, store = index(home, emb, notes=[notes])
    assert report.files_indexed == 1 and report.files_unchanged == 2
    assert report.chunks_embedded == emb.texts == 1
    assert store.files()[str(notes / "n1.md")].chunks == 1


def test_deleted_note_leaves_store_and_results(home: Path, notes: Path) -> None:
    emb = FakeEmbedder()
    _, store = index(home, emb, notes=[notes])
    (notes / "n0.md").unlink()
    report, store = index(home, emb, notes=[notes])
    assert report.files_deleted == 1
    hits = search(store, emb.encode_queries(["postgres vacuum"])[0], ["/proj", "*"], k=10)
    assert str(notes / "n0.md") not in {h.record.path for h in hits}
    assert str(notes / "n0.md") not in store.files()


def test_changed_file_rows_are_replaced_not_duplicated(home: Path, notes: Path) -> None:
    emb = FakeEmbedder()
    index(home, emb, notes=[notes])
    note(notes, "n2.md", "# Python typing\n\n" + "Long body about protocols. " * 200)
    _, store = index(home, emb, notes=[notes])
    rows = store.files()[str(notes / "n2.md")].chunks
    assert rows == 6  # capped at six chunks
    hits = search(store, emb.encode_queries(["protocols"])[0], ["/proj"], k=10)
    assert [h.record.path for h in hits].count(str(notes / "n2.md")) == 1
    assert store.count() == sum(f.chunks for f in store.files().values())


def test_model_change_rebuilds_instead_of_mixing(home: Path, notes: Path) -> None:
    emb = FakeEmbedder()
    index(home, emb, notes=[notes])
    other = FakeEmbedder()
    other.model_id = "test/another-model"
    report, store = index(home, other, notes=[notes])
    assert report.files_indexed == 3  # everything re-embedded
    assert store.meta()["model"] == "test/another-model"


def test_bad_input_is_reported_and_nothing_else_lost(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    note(folder, "good.md", "# Good note\n\nThis one is fine and must be indexed.")
    note(folder, "empty.md", "")
    (folder / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00binary")
    (folder / "latin1.md").write_bytes("# Caf\xe9 notes\n\nna\xefve".encode("latin-1"))
    with (folder / "huge.md").open("wb") as fh:  # sparse: 50 MB without writing 50 MB
        fh.truncate(50 * 1024 * 1024)
    note(folder, "broken-fm.md", "---\nname: [unclosed\n---\n# Broken front matter\n\nBody kept.")
    note(folder, "only-fm.md", "---\nname: Only front matter\ndescription: nothing else\n---\n")
    loop = folder / "loop"
    loop.mkdir()
    (loop / "self").symlink_to(loop, target_is_directory=True)
    locked = folder / "locked"
    locked.mkdir()
    note(locked, "secret.md", "# Locked\n\nunreadable")
    locked.chmod(0)
    if os.geteuid() == 0:  # root reads anything: simulate the permission error
        real_scandir = os.scandir

        def scandir(path: object) -> object:
            if Path(str(path)) == locked:
                raise PermissionError(13, "Permission denied", str(path))
            return real_scandir(path)  # type: ignore[arg-type]

        monkeypatch.setattr(os, "scandir", scandir)
    settings = load_settings()
    emb = FakeEmbedder()
    store = open_store(settings.index_dir, emb)  # type: ignore[arg-type]
    listing = walk(configured_sources(settings, Sources(notes=[folder], project="/proj")))
    vanished = folder / "vanishing.md"
    note(folder, "vanishing.md", "# Gone soon")
    listing.files.append(listing.files[0].__class__(vanished, "note", "/proj", folder))
    vanished.unlink()  # deleted between listing and reading
    report = Indexer(settings, store, emb).sync(listing)  # type: ignore[arg-type]
    locked.chmod(0o700)

    reasons = {Path(p.path).name: p.reason for p in report.problems}
    assert "binary" in reasons["binary.md"]
    assert "empty" in reasons["empty.md"]
    assert "max_file_bytes" in reasons["huge.md"]
    assert "UTF-8" in reasons["latin1.md"]
    assert "front matter" in reasons["broken-fm.md"]
    assert "vanished" in reasons["vanishing.md"]
    assert "locked" in reasons and "cannot list" in reasons["locked"]
    assert any("loop" in p.reason for p in report.problems)
    indexed = set(store.files())
    for name in ("good.md", "latin1.md", "broken-fm.md", "only-fm.md"):
        assert str(folder / name) in indexed, name
    hits = search(store, emb.encode_queries(["broken front matter body kept"])[0], ["/proj"], k=10)
    assert str(folder / "broken-fm.md") in {h.record.path for h in hits}
    only = search(store, emb.encode_queries(["only front matter"])[0], ["/proj"], k=10)
    assert any(h.record.name == "Only front matter" for h in only)


def test_sources_given_on_the_command_line_must_exist(home: Path, tmp_path: Path) -> None:
    from precedents.errors import UsageError

    with pytest.raises(UsageError, match="no such folder"):
        configured_sources(load_settings(), Sources(notes=(tmp_path / "missing",)))


def test_rules_are_shared_and_notes_belong_to_their_project(home: Path, tmp_path: Path) -> None:
    notes_dir, rules_dir = tmp_path / "n", tmp_path / "r"
    notes_dir.mkdir()
    rules_dir.mkdir()
    note(notes_dir, "a.md", "# Deploy freeze\n\nNo deploys on Friday.")
    note(rules_dir, "b.md", "# Review rule\n\nEvery change needs a review.")
    emb = FakeEmbedder()
    _, store = index(home, emb, notes=[notes_dir], rules=[rules_dir])
    projects = {f.kind: f.project for f in store.files().values()}
    assert projects == {"note": "/proj", "rule": "*"}
    other = search(store, emb.encode_queries(["deploy review"])[0], ["/elsewhere", "*"], k=10)
    assert [h.record.kind for h in other] == ["rule"]
