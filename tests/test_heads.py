"""A big pull searchable by its heads first (ingest/heads.py, issue #28).

The logic, with the counting fake embedder and the real LanceDB store; the real
model and the real watcher are exercised by tests/test_big_pull.py (a pull of 300
notes through git) and measured by bench/big_pull.py (5,000).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from precedents.config import load_settings
from precedents.ingest import heads
from precedents.ingest.heads import HEAD_CHARS, HEADS_FROM, PROVISIONAL, index_heads, provisional
from precedents.ingest.indexer import Indexer
from precedents.ingest.sources import Sources, configured_sources, walk
from precedents.store import Store
from tests.conftest import FakeEmbedder


def project(root: Path, n: int) -> Path:
    folder = root / "proj" / ".precedents" / "notes"
    folder.mkdir(parents=True)
    for i in range(n):
        body = f"Decision {i}: the queue consumer for tenant {i} retries five times. " * 20
        text = f"---\nname: Decision {i}\ndescription: what tenant {i} agreed\n---\n{body}\n"
        (folder / f"note-{i:04d}.md").write_text(text, encoding="utf-8")
    return folder


def setup(home: Path, tmp_path: Path, n: int) -> tuple[Any, Store, Path, list[Any]]:
    folder = project(tmp_path, n)
    settings = load_settings(discover_claude=False)
    model = FakeEmbedder()
    store = Store(settings.index_dir, model.model_id, model.dimension)
    sources = configured_sources(settings, Sources(notes=(folder,), project=str(folder.parent)))
    return settings, store, folder, [model, sources]


def recorded(store: Store) -> list[tuple[str, bool, int]]:
    """Every write to the store, in order: (path, provisional, chunks)."""
    writes: list[tuple[str, bool, int]] = []
    original = store.replace_documents

    def spy(items: Any, multilingual: Any = None) -> None:
        items = list(items)
        writes.extend((f.path, provisional(f), len(chunks)) for f, _, chunks, _ in items)
        original(items, multilingual)

    store.replace_documents = spy
    return writes


def test_a_big_pass_stores_every_head_before_any_full_document(home: Path, tmp_path: Path) -> None:
    n = HEADS_FROM + 44
    settings, store, folder, (model, sources) = setup(home, tmp_path, n)
    writes = recorded(store)
    indexer = Indexer(settings, store, model)
    read = []
    document = indexer._document

    def counted(src: Any, data: bytes, report: Any) -> Any:
        read.append(str(src.path))
        return document(src, data, report)

    indexer._document = counted
    report = indexer.sync(walk(sources))

    assert report.files_indexed == n
    heads_written = [w for w in writes if w[1]]
    full = [w for w in writes if not w[1]]
    assert len(heads_written) == n and all(c == 1 for _, _, c in heads_written)
    assert len({p for p, _, _ in full}) == n and any(c > 1 for _, _, c in full)
    # Every head before the first full document: the whole pass is searchable first.
    last_head = max(i for i, w in enumerate(writes) if w[1])
    first_full = min(i for i, w in enumerate(writes) if not w[1])
    assert last_head < first_full
    # Each file read, masked and chunked once: the full pass took the heads pass's.
    assert sorted(read) == sorted({p for p, _, _ in full}) and not indexer.headed
    # Nothing provisional is left, and each file's row carries its content's hash.
    rows = store.files()
    for path in folder.iterdir():
        assert rows[str(path)].sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    # The chunks of the heads were embedded as heads: short (a few dozen tokens).
    assert report.chunks_embedded == sum(c for _, _, c in full)


def test_a_small_pass_is_not_headed(home: Path, tmp_path: Path) -> None:
    settings, store, _, (model, sources) = setup(home, tmp_path, 20)
    writes = recorded(store)
    Indexer(settings, store, model).sync(walk(sources))
    assert writes and not any(p for _, p, _ in writes)


def test_heads_left_by_a_stopped_pass_are_indexed_in_full_next_time(
    home: Path, tmp_path: Path
) -> None:
    n = 30
    settings, store, folder, (model, sources) = setup(home, tmp_path, n)
    files = walk(sources).files
    indexer = Indexer(settings, store, model)
    with indexer.writing():
        assert index_heads(indexer, files, store.files()) == n
    rows = store.files()
    assert all(provisional(rows[str(p)]) for p in folder.iterdir())
    assert all(r.sha256.startswith(PROVISIONAL) and r.chunks == 1 for r in rows.values())
    # The head is the start of the first chunk: name, description, start of the body.
    meta, vectors = store.all_vectors(sorted({r.project for r in rows.values()}), text=True)
    assert len(meta) == n == len(vectors)
    assert all(len(m["text"]) == HEAD_CHARS and m["text"].startswith("Decision") for m in meta)
    # Headed again: nothing to do (the head is there), and no embedding spent.
    calls = model.texts
    with indexer.writing():
        assert index_heads(indexer, files, store.files()) == 0
    assert model.texts == calls
    # A new watcher (a fresh indexer: the kept documents are gone) finishes the job.
    report = Indexer(settings, store, FakeEmbedder()).sync(walk(sources))
    assert report.files_indexed == n
    assert not any(provisional(r) for r in store.files().values())


def test_heads_are_not_kept_past_the_cap(home: Path, tmp_path: Path, monkeypatch: Any) -> None:
    settings, store, _, (model, sources) = setup(home, tmp_path, 12)
    monkeypatch.setattr(heads, "HEADED_KEPT", 5)
    indexer = Indexer(settings, store, model)
    with indexer.writing():
        assert index_heads(indexer, walk(sources).files, store.files()) == 12
    assert len(indexer.headed) == 5


def test_what_becomes_due_during_a_pull_is_headed_or_applied_between_groups() -> None:
    from precedents.watcher.batches import APPLY_FILES, BURST_HEADS_FROM, apply_in_groups

    first = [f"a{i:04d}" for i in range(APPLY_FILES * 2)]
    rest = [f"r{i:04d}" for i in range(3)]  # the pull still arriving: a few files
    burst = [f"b{i:04d}" for i in range(BURST_HEADS_FROM + 1)]
    save = ["c0000"]
    arriving = [rest, []]  # what more(True) finds before the first group
    between = [burst, save, []]  # what more(False) finds after each group
    events: list[tuple[str, list[str]]] = []

    def head(paths: list[str], arriving: bool) -> None:
        events.append(("head", paths))

    def apply(paths: list[str]) -> bool:
        events.append(("apply", paths))
        return False

    def more(wait: bool) -> list[str]:
        queue = arriving if wait else between
        return queue.pop(0) if queue else []

    assert apply_in_groups(first, head, apply, more) is False
    kinds = [(kind, p[0][0], len(p)) for kind, p in events]
    assert kinds == [
        ("head", "a", len(first)),  # the pull's heads first
        ("head", "r", len(rest)),  # and the rest of it, still arriving: before any group
        ("apply", "a", APPLY_FILES),
        ("head", "b", len(burst)),  # a burst due meanwhile: headed before the pull goes on
        ("apply", "a", APPLY_FILES),
        ("apply", "c", 1),  # a save due meanwhile: applied next, not behind the burst
        ("apply", "r", len(rest)),
        ("apply", "b", len(burst)),
    ]
    # A pull whose first files came as a few: the burst due after them is headed, and
    # the rest of the pull arriving meanwhile with it, before any full group.
    events.clear()
    arriving[:] = [rest, []]
    between[:] = [burst, []]
    assert apply_in_groups(save, head, apply, more) is False
    kinds = [(kind, p[0][0], len(p)) for kind, p in events]
    assert kinds == [
        ("apply", "c", 1),
        ("head", "b", len(burst)),
        ("head", "r", len(rest)),  # still arriving: headed before the burst's group
        ("apply", "b", len(burst)),
        ("apply", "r", len(rest)),
    ]
    # A few files due while the rest of a pull is still pending (not yet due): the
    # front of the pull, headed with what arrives, not applied in full on their own.
    events.clear()
    arriving[:] = [burst, []]
    between[:] = []
    assert apply_in_groups(rest, head, apply, more, lambda: BURST_HEADS_FROM) is False
    kinds = [(kind, p[0][0], len(p)) for kind, p in events]
    assert kinds == [
        ("head", "r", len(rest)),
        ("head", "b", len(burst)),
        ("apply", "r", len(rest)),
        ("apply", "b", len(burst)),
    ]
    # Every group failing is the watcher's signal to back off; one success is not.
    assert apply_in_groups(["x"], head, lambda _: True, lambda _: []) is True
    assert apply_in_groups([], head, lambda _: True, lambda _: []) is False
