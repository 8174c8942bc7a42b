"""A `reindex` killed with SIGKILL keeps every batch it committed; the next one embeds the rest
(issue #21: an interrupted incremental reindex embedded 96 files again, 82 s).

Real parts: `python -m precedents.cli reindex` as a subprocess with the bundled model,
LanceDB on disk, kill -9 as soon as a batch is committed. Also the `make run` summary
that called 11 automated sessions "indexed".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from precedents.config import load_settings
from precedents.ingest.indexer import CHUNKER_VERSION, Indexer, IndexReport
from precedents.ingest.sources import Sources, configured_sources, walk
from precedents.models.embedding import canonical_model_id
from precedents.store import FileRecord, Store, open_store

from .conftest import FakeEmbedder

NOTES = 60
WORDS = (  # noqa: SIM905 - a sentence's words, not a list to read
    "deploy rollback migration cache invalidation queue retry backoff index vacuum "
    "schema review release branch token rotation latency budget replica failover "
    "snapshot compaction tracing sampling quota shard lease heartbeat"
).split()


def write_notes(folder: Path, count: int = NOTES) -> Path:
    """``count`` notes of ~1,900 characters (four chunks each), each its own words."""
    folder.mkdir(parents=True)
    for i in range(count):
        words = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(260)]
        body = " ".join(words)
        (folder / f"note-{i:03d}.md").write_text(
            f"---\nname: Note {i}\ndescription: about {WORDS[i % len(WORDS)]}\n---\n{body}\n"
        )
    return folder


def reindex_cmd(notes: Path, project: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "precedents.cli",
        "reindex",
        "--notes",
        str(notes),
        "--project",
        str(project),
        "--json",
    ]


def file_commits(index: Path) -> int:
    """Commits of the file table so far: each batch ends with one."""
    try:
        return sum(n.endswith(".manifest") for n in os.listdir(index / "files.lance" / "_versions"))
    except OSError:
        return 0


def kill_after_a_batch(cmd: list[str], index: Path, before: int) -> None:
    """Run ``cmd`` and kill -9 it as soon as it has committed a batch of files."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while file_commits(index) <= before and proc.poll() is None:
        assert time.monotonic() < deadline, "no batch was committed in 300 s"
        time.sleep(0.01)
    assert proc.poll() is None, "the pass ended before it could be interrupted"
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)


def stored_files(home: Path) -> dict[str, FileRecord]:
    minilm = canonical_model_id("sentence-transformers/all-MiniLM-L6-v2")
    return Store(home / "index", minilm, 384, create=False).files()


def run_json(cmd: list[str]) -> dict[str, Any]:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stderr
    report: dict[str, Any] = json.loads(out.stdout)
    return report


@pytest.mark.slow
def test_a_killed_reindex_keeps_its_batches_and_the_next_one_goes_on(
    home: Path, tmp_path: Path
) -> None:
    notes = write_notes(tmp_path / "notes")
    cmd = reindex_cmd(notes, tmp_path)
    index = home / "index"

    # A first index, killed after its first batch (the table's creation is one commit).
    kill_after_a_batch(cmd, index, before=1)
    kept = stored_files(home)
    assert 0 < len(kept) < NOTES
    report = run_json(cmd)
    assert (report["files_unchanged"], report["files_indexed"]) == (len(kept), NOTES - len(kept))
    done = stored_files(home)
    total_chunks = sum(f.chunks for f in done.values())
    assert report["chunks_embedded"] == total_chunks - sum(f.chunks for f in kept.values())

    # A store read by an older parser is read again, every file: killed after a batch,
    # the next pass re-reads only what the killed one had not committed.
    Store(index, canonical_model_id("sentence-transformers/all-MiniLM-L6-v2"), 384).stamp(
        chunker="5"
    )
    before = file_commits(index)
    kill_after_a_batch(cmd, index, before)
    reread = {p for p, f in stored_files(home).items() if f.indexed_at > done[p].indexed_at}
    assert 0 < len(reread) < NOTES
    report = run_json(cmd)
    assert report["files_unchanged"] == len(reread), report
    assert report["files_indexed"] == NOTES - len(reread)
    left = sum(f.chunks for p, f in done.items() if p not in reread)
    assert report["chunks_embedded"] == left
    # Then the parser's version is recorded: nothing is read again.
    assert run_json(cmd)["files_indexed"] == 0


def test_an_interrupted_reread_goes_on_where_it_stopped(home: Path, tmp_path: Path) -> None:
    """The same with the fake model, in-process: the embedding calls are counted."""
    notes = write_notes(tmp_path / "notes", 30)
    settings = load_settings()
    emb = FakeEmbedder()
    store = open_store(settings.index_dir, emb)  # type: ignore[arg-type]
    files = walk(configured_sources(settings, Sources(notes=(notes,), project="/p")))
    Indexer(settings, store, emb).sync(files)  # type: ignore[arg-type]
    store.stamp(chunker="5")  # version 6 changed notes

    def stop(done: int, total: int, chunks: int) -> None:
        if done == 25:  # past the first commit (64 chunks: 16 notes of four)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Indexer(settings, store, emb).sync(files, stop)  # type: ignore[arg-type]
    committed = store.meta()
    assert committed["chunker"] != CHUNKER_VERSION and committed["rereading"] == CHUNKER_VERSION
    emb.texts = 0
    report = Indexer(settings, store, emb).sync(files)  # type: ignore[arg-type]
    assert 0 < report.files_unchanged < 30 and report.files_indexed == 30 - report.files_unchanged
    assert emb.texts == report.chunks_embedded < 30 * 4
    assert store.meta()["chunker"] == CHUNKER_VERSION
    again = Indexer(settings, store, emb).sync(files)  # type: ignore[arg-type]
    assert (again.files_indexed, again.files_unchanged) == (0, 30)


def test_the_summary_does_not_call_automated_sessions_indexed() -> None:
    from precedents.cli.index import _summary

    report = IndexReport(files_seen=12, files_indexed=12, skipped_sessions=11, chunks_embedded=3)
    line = _summary(report)
    assert line.startswith("12 files: 1 indexed, 11 skipped (11 automated sessions: nothing")
    report = IndexReport(files_seen=3, files_indexed=2, files_empty=1, files_unchanged=1)
    assert _summary(report).startswith("3 files: 1 indexed, 1 skipped (1 empty file: nothing")
    plain = _summary(IndexReport(files_seen=20, files_indexed=20))
    assert plain.startswith("20 files: 20 indexed, 0 unchanged, 0 removed;")


@pytest.mark.slow
def test_reindex_says_how_many_files_hold_nothing_to_search(home: Path, tmp_path: Path) -> None:
    notes = write_notes(tmp_path / "notes", 1)
    logs = tmp_path / "logs"
    logs.mkdir()
    for i in range(3):  # `claude -p` runs: automated, nothing of the user's to recall
        line = {
            "type": "user",
            "entrypoint": "sdk-cli",
            "cwd": str(tmp_path),
            "sessionId": f"s{i}",
            "message": {"role": "user", "content": f"summarise the build log number {i}"},
        }
        (logs / f"s{i}.jsonl").write_text(json.dumps(line) + "\n")
    cmd = [*reindex_cmd(notes, tmp_path)[:-1], "--conversations", str(logs)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(
        "4 files: 1 indexed, 3 skipped (3 automated sessions: nothing to search), 0 unchanged"
    ), out.stdout
