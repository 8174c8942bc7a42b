"""The daemon reads the store through an export child, never LanceDB (issue #10: RSS).

Real parts: a real LanceDB store in a temp folder, the real export child
(`python -m precedents.store.export`), the real daemon subprocess with the
real model, and /proc maps to prove what the daemon has loaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from precedents import protocol
from precedents.errors import ModelMismatch, StoreError
from precedents.recall.core import Recall
from precedents.recall.exported import MIN_GAP_S, SPACING, ExportedVectors, Exporter
from precedents.recall.vectors import VectorSnapshot
from precedents.store import DocumentRecord, FileRecord, Store, snapshot_file
from precedents.store.snapshot_file import Exported, SnapshotFileError
from tests.conftest import FakeEmbedder

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import (  # noqa: E402 - after the rewrite registration
    DevState,
    copy_state,
    running_daemon,
    settings_for,
)

pytest_plugins = ["tests.conftest_daemon"]


def _add(store: Store, path: str, texts: list[str], model: FakeEmbedder, project: str) -> None:
    vecs = model.encode_passages(texts)
    doc = DocumentRecord("note", project, path, Path(path).stem, "a note")
    file = FileRecord(path, "note", project, f"{abs(hash(path)):064x}", 10, len(texts), 0.0)
    store.replace_documents([(file, doc, texts, vecs)])


def _child(index: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "precedents.store.export", str(index), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_snapshot_file_round_trips(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    snap = Exported(
        fingerprint="chunks:1:a..a chunks_second:0:-",
        model="m",
        dimension=4,
        meta=[{"doc_id": "d", "path": "/p.md", "chunk_index": 0}],
        matrix=rng.standard_normal((1, 4)).astype(np.float32),
        multilingual_ids=["d#0"],
        multilingual_vectors=rng.standard_normal((1, 8)).astype(np.float32),
        summary={"chunks": 1},
    )
    path = tmp_path / "cache" / "snapshot.npz"
    snapshot_file.write(path, snap)
    back = snapshot_file.read(path)
    assert (back.fingerprint, back.model, back.dimension) == (snap.fingerprint, "m", 4)
    assert back.meta == snap.meta and back.summary == {"chunks": 1}
    np.testing.assert_array_equal(back.matrix, snap.matrix)
    np.testing.assert_array_equal(back.multilingual_vectors, snap.multilingual_vectors)
    assert os.stat(path).st_mode & 0o077 == 0  # private, like the store
    assert [p.name for p in path.parent.iterdir()] == ["snapshot.npz"]  # no temp file left


def test_a_torn_or_foreign_file_is_a_clear_error(tmp_path: Path) -> None:
    torn = tmp_path / "torn.npz"
    torn.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(SnapshotFileError, match=r"torn\.npz"):
        snapshot_file.read(torn)
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, header=np.frombuffer(b'{"format": 99}', dtype=np.uint8))
    with pytest.raises(SnapshotFileError):
        snapshot_file.read(foreign)
    with pytest.raises(SnapshotFileError):
        snapshot_file.read(tmp_path / "missing.npz")


def test_the_fingerprint_moves_with_every_commit(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    index = tmp_path / "index"
    assert snapshot_file.fingerprint(index) is None  # no store yet
    store = Store(index, fake_embedder.model_id, fake_embedder.dimension)
    first = snapshot_file.fingerprint(index)
    assert first is not None
    _add(store, "/n/a.md", ["alpha"], fake_embedder, "p")
    second = snapshot_file.fingerprint(index)
    assert second != first
    assert snapshot_file.fingerprint(index) == second  # stable while nothing is written
    store.delete_files(["/n/a.md"])
    assert snapshot_file.fingerprint(index) != second


def test_the_export_child_writes_what_the_store_holds(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    index = tmp_path / "index"
    store = Store(index, fake_embedder.model_id, fake_embedder.dimension)
    _add(store, "/n/a.md", ["alpha beta", "gamma"], fake_embedder, "p1")
    _add(store, "/n/b.md", ["delta"], fake_embedder, "p2")
    out = tmp_path / "snap.npz"
    run = _child(index, out)
    assert run.returncode == 0, run.stderr
    got = snapshot_file.read(out)
    direct = VectorSnapshot.load(store)
    assert got.fingerprint == snapshot_file.fingerprint(index)
    assert (got.model, got.dimension) == (fake_embedder.model_id, fake_embedder.dimension)
    assert got.meta == direct.meta
    np.testing.assert_array_equal(got.matrix, direct.matrix)
    assert got.summary["chunks"] == 3 and got.summary["documents"] == 2


def test_the_export_child_says_no_index_and_failures_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "snap.npz"
    assert _child(tmp_path / "nothing", out).returncode == 3 and not out.exists()
    broken = tmp_path / "broken"
    (broken / "chunks.lance" / "_versions").mkdir(parents=True)
    (broken / "chunks.lance" / "_versions" / "1.manifest").write_bytes(b"garbage")
    (broken / "meta.lance").mkdir()  # looks like a store, is not one
    run = _child(broken, out)
    assert run.returncode == 1 and not out.exists()
    assert len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr


def test_recall_in_exported_mode_ranks_as_in_process(
    tmp_path: Path, fake_embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRECEDENTS_HOME", str(tmp_path / "state"))
    settings = settings_for(tmp_path / "state")
    store = Store(settings.index_dir, fake_embedder.model_id, fake_embedder.dimension)
    _add(store, "/n/cache.md", ["prefix cache keys with the schema version"], fake_embedder, "p")
    _add(store, "/n/deploy.md", ["deploy with blue green switch"], fake_embedder, "p")
    here = Recall(settings, fake_embedder)
    there = Recall(settings, fake_embedder, exported=True)
    try:
        assert there.snapshot.rows == 2 and there.store_problem is None
        for text in ("cache keys schema", "blue green deploy"):
            a = [h.record.path for h in here.rank(text, None, None, 2)]
            b = [h.record.path for h in there.rank(text, None, None, 2)]
            assert a == b
        assert there.summary() == here.summary()
        # Another process commits: the next refresh exports again and sees it.
        _add(store, "/n/new.md", ["rotate the signing keys monthly"], fake_embedder, "p")
        deadline = time.monotonic() + 30
        while not there.refresh() and time.monotonic() < deadline:
            time.sleep(0.2)  # spacing after the first export
        assert there.snapshot.rows == 3
        assert there.rank("signing keys rotation", None, None, 1)[0].record.path == "/n/new.md"
    finally:
        here.close()
        there.close()
    assert not (settings.cache_dir / "snapshot.npz").exists()  # removed on close


def test_exported_mode_reports_a_model_mismatch(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    settings = settings_for(tmp_path / "state")
    store = Store(settings.index_dir, "other/model", fake_embedder.dimension)
    _add(store, "/n/a.md", ["alpha"], fake_embedder, "p")
    recall = Recall(settings, fake_embedder, exported=True)
    try:
        assert isinstance(recall.store_problem, ModelMismatch)
        assert recall.snapshot.rows == 0
        assert isinstance(recall.source, ExportedVectors)
        exporter = recall.source.exporter
        exports = exporter.exports
        exporter._finished -= 60  # long past the spacing after the last export
        assert not recall.refresh()  # the mismatched store is not exported again ...
        assert exporter.exports == exports
        _add(store, "/n/b.md", ["beta"], fake_embedder, "p")
        exporter._finished -= 60
        assert not recall.refresh()  # ... until it changes (then it is checked again)
        assert exporter.exports == exports + 1
    finally:
        recall.close()


def test_exports_are_spaced_while_the_store_keeps_changing(tmp_path: Path) -> None:
    exporter = Exporter(tmp_path / "index", tmp_path / "snap.npz")
    assert not exporter.due(None)  # no store: nothing to export
    assert exporter.due("v1")  # never exported: at once
    exporter.exports, exporter._finished, exporter._last_s = 1, time.monotonic(), 2.0
    exporter._finished -= MIN_GAP_S
    assert exporter.due("v2")  # after the start-up export, a save is not spaced ...
    exporter.exports, exporter._finished = 2, time.monotonic()
    assert not exporter.due("v2")  # ... in a burst, after a 2 s export the next waits SPACING x 2 s
    exporter._finished -= SPACING * 2.0 - 0.5
    assert not exporter.due("v2")
    exporter._finished -= 0.6
    assert exporter.due("v2")
    assert exporter.run() is None  # the child finds no index ...
    assert not exporter.due(exporter._tried)  # ... and is not asked again until it changes


def _maps(pid: int) -> str:
    return Path(f"/proc/{pid}/maps").read_text()


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc (Linux)")
def test_the_daemon_never_maps_lancedb_and_still_sees_new_notes(
    dev_state: DevState, tmp_path: Path, embedder: Any
) -> None:
    from precedents.ingest.indexer import index_note

    home = copy_state(dev_state, tmp_path)
    with running_daemon(home) as daemon:
        maps = _maps(daemon.pid)
        assert "onnxruntime" in maps or "torch" in maps  # the model is there ...
        assert "lancedb" not in maps and "/lance/" not in maps  # ... LanceDB is not,
        assert "libarrow" not in maps  # nor pyarrow (the row types are Arrow-free)
        status = protocol.ask({"op": "status"}, 10, home / "run")
        assert status["ok"] and status["summary"]["chunks"] > 100

        # A writer in another process (as the watcher) adds a note: found without a restart.
        note = tmp_path / "notes" / "signing-keys.md"
        note.parent.mkdir()
        note.write_text("# Signing keys\n\nRotate the JWT signing keys every month.\n")
        index_note(settings_for(home), embedder, note, str(dev_state.project))
        found = False
        deadline = time.monotonic() + 60
        while not found and time.monotonic() < deadline:
            answer = protocol.ask(
                {"op": "query", "text": "rotate jwt signing keys", "project": None, "k": 3},
                10,
                home / "run",
            )
            found = str(note) in [r["path"] for r in answer.get("results", [])]
            time.sleep(0.3)
        assert found, "the daemon never picked up the other process's commit"
        assert "lancedb" not in _maps(daemon.pid)
    log = (home / "logs" / "daemon.log").read_text()
    assert "index exported and loaded" in log
    assert not (home / "cache" / "snapshot.npz").exists()
    assert json.dumps("Rotate the JWT") not in log  # the note's text is never logged


def test_a_damaged_store_is_retried_with_backoff(tmp_path: Path) -> None:
    index = tmp_path / "index"
    (index / "chunks.lance" / "_versions").mkdir(parents=True)
    (index / "chunks.lance" / "_versions" / "1.manifest").write_bytes(b"garbage")
    (index / "meta.lance").mkdir()  # looks like a store, is not one
    exporter = Exporter(index, tmp_path / "snap.npz")
    stamp = snapshot_file.fingerprint(index)
    for failures in (1, 2):
        exporter._finished = 0.0  # as if the gap had passed
        with pytest.raises(StoreError, match="export failed"):
            exporter.run()
        assert exporter.last_seconds >= 2.0**failures  # the next try waits that long
        assert not exporter.due(stamp)


def test_the_daemons_snapshot_ranks_conversations_by_words_too(
    tmp_path: Path, fake_embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The export child builds the word index from the text and the daemon, which never
    holds text, ranks conversations with it exactly as the in-process path does."""
    monkeypatch.setenv("PRECEDENTS_HOME", str(tmp_path / "state"))
    settings = settings_for(tmp_path / "state")
    store = Store(settings.index_dir, fake_embedder.model_id, fake_embedder.dimension)
    logs = {
        "/c/a.jsonl": ["we planned the trip and the trip budget and the trip dates"],
        "/c/b.jsonl": ["Priya adopted a greyhound called Biscuit", "the trip was fun"],
        "/c/c.jsonl": ["trip trip trip notes about nothing much"],
    }
    for path, texts in logs.items():
        vecs = fake_embedder.encode_passages(texts)
        doc = DocumentRecord("conversation", "p", path, Path(path).stem, "")
        file = FileRecord(path, "conversation", "p", f"{abs(hash(path)):064x}", 10, len(texts), 0.0)
        store.replace_documents([(file, doc, texts, vecs)])
    here = Recall(settings, fake_embedder)
    there = Recall(settings, fake_embedder, exported=True)
    try:
        assert there.snapshot.lexical is not None  # the daemon got the word index
        question = "the trip with Priya's greyhound Biscuit"
        a = [h.record.path for h in here.rank(question, None, ("conversation",), 3)]
        b = [h.record.path for h in there.rank(question, None, ("conversation",), 3)]
        assert a == b and a[0] == "/c/b.jsonl"
        vectors_alone = replace(here.thresholds, conversation_words=0.0)
        here.thresholds = vectors_alone
        plain = [h.record.path for h in here.rank(question, None, ("conversation",), 3)]
        assert plain != a  # the words are what moved it
    finally:
        here.close()
        there.close()
