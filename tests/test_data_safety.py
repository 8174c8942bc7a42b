"""Nothing lost, nothing doubled (issue #8, data safety): one writer, repairs after a
crash, full rebuilds beside the old index, batched commits, links that leave a folder.

Real parts: the bundled model, LanceDB on disk, writer processes as subprocesses.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from precedents import api
from precedents.config import load_settings
from precedents.ingest.indexer import Indexer
from precedents.ingest.sources import Sources, configured_sources, walk
from precedents.models.embedding import canonical_model_id
from precedents.runlock import WRITER, read_pid
from precedents.store import Store, beside, open_store

from .conftest import REPO, shared_path

# Built at run time so no real-looking token sits in the source.
GH_TOKEN = "ghp_" + "".join("Xk9mQ2vL7pRt4wZ8yB3nC6dF1gH5jK0sA"[i % 33] for i in range(36))


def copy_notes(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True)
    for path in sorted(shared_path("eval", "dev", "notes").glob("*.md"))[:count]:
        shutil.copy(path, folder / path.name)
    return folder


def chunk_rows(store: Store) -> list[tuple[str, str]]:
    table = store._chunks.search().select(["chunk_id", "path"]).limit(None).to_arrow()
    return list(
        zip(table.column("chunk_id").to_pylist(), table.column("path").to_pylist(), strict=True)
    )


def indexer_for(embedder: object) -> Indexer:
    settings = load_settings()
    return Indexer(settings, open_store(settings.index_dir, embedder), embedder)  # type: ignore[arg-type]


def walk_notes(notes: Path, project: str = "/proj") -> object:
    return walk(configured_sources(load_settings(), Sources(notes=(notes,), project=project)))


WRITER_SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from precedents import api
    from precedents.config import load_settings
    from precedents.ingest.sources import Sources

    def waiting(pid):
        print(f"waiting for writer pid {pid}", file=sys.stderr, flush=True)

    report = api.reindex(
        load_settings(),
        sources=Sources(notes=(Path(sys.argv[1]),), project=sys.argv[2]),
        on_wait=waiting,
    )
    print(report.files_indexed, report.files_unchanged, flush=True)
    """
)


@pytest.mark.slow
def test_two_writers_at_once_never_double_a_file(home: Path, tmp_path: Path) -> None:
    notes = copy_notes(tmp_path / "notes", 24)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    cmd = [sys.executable, "-c", WRITER_SCRIPT, str(notes), str(tmp_path)]
    first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    run_dir = load_settings().run_dir
    deadline = time.monotonic() + 60
    while read_pid(run_dir, WRITER) != first.pid and time.monotonic() < deadline:
        time.sleep(0.02)
    assert read_pid(run_dir, WRITER) == first.pid, "the first writer never took the lock"
    second = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out1, err1 = first.communicate(timeout=600)
    out2, err2 = second.communicate(timeout=600)
    assert first.returncode == 0 and second.returncode == 0, (err1, err2)
    assert f"waiting for writer pid {first.pid}" in err2.decode()
    assert out1.split() == [b"24", b"0"] and out2.split() == [b"0", b"24"]
    minilm = canonical_model_id("sentence-transformers/all-MiniLM-L6-v2")  # its runtime's id
    store = Store(load_settings().index_dir, minilm, 384)
    rows = chunk_rows(store)
    assert len(rows) == len({cid for cid, _ in rows}), "a chunk id is stored twice"
    assert len(store.files()) == 24 and len({p for _, p in rows}) == 24


class Killed(BaseException):
    """Stands for kill -9 between two commits: nothing after it runs."""


def test_a_crash_between_chunk_rows_and_file_row_is_repaired(
    home: Path, tmp_path: Path, embedder: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = copy_notes(tmp_path / "notes", 3)
    indexer_for(embedder).sync(walk_notes(notes))  # type: ignore[arg-type]
    new = notes / "new-note.md"
    new.write_text("# Deploy freeze\n\nNo deploys on Fridays after 3pm.\n")

    def die(self: Store, files: object) -> None:
        raise Killed

    with monkeypatch.context() as patch, pytest.raises(Killed):
        patch.setattr(Store, "_upsert_files", die)
        indexer_for(embedder).sync(walk_notes(notes))  # type: ignore[arg-type]
    new.unlink()  # the note is deleted before the next pass

    indexer = indexer_for(embedder)
    report = indexer.sync(walk_notes(notes))  # type: ignore[arg-type]
    assert str(new) not in {p for _, p in chunk_rows(indexer.store)}
    assert any("half-written" in p.reason for p in report.problems)
    assert len(indexer.store.files()) == 3


def test_an_interrupted_first_index_keeps_what_it_did(
    home: Path, tmp_path: Path, embedder: object
) -> None:
    notes = copy_notes(tmp_path / "notes", 40)

    def stop_late(done: int, total: int, chunks: int) -> None:
        if done == 36:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        indexer_for(embedder).sync(walk_notes(notes), stop_late)  # type: ignore[arg-type]
    kept = len(indexer_for(embedder).store.files())
    assert kept > 0, "an interrupted first index kept nothing"
    report = indexer_for(embedder).sync(walk_notes(notes))  # type: ignore[arg-type]
    assert report.files_unchanged == kept and report.files_indexed == 40 - kept


@pytest.mark.slow
def test_an_interrupted_full_rebuild_leaves_the_old_index(home: Path, tmp_path: Path) -> None:
    notes = copy_notes(tmp_path / "notes", 12)
    settings = load_settings()
    sources = Sources(notes=(notes,), project=str(tmp_path))
    api.reindex(settings, sources=sources)

    def interrupt(done: int, total: int, chunks: int) -> None:
        if done == 6:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        api.reindex(settings, full=True, sources=sources, progress=interrupt)
    status = api.status(settings)
    assert status["documents"] == 12, "the old index must keep serving"
    assert beside(settings.index_dir, "rebuild").exists()  # the half-built one, aside

    report = api.reindex(settings, full=True, sources=sources)
    assert report.files_indexed == 12 and api.status(settings)["documents"] == 12
    assert not beside(settings.index_dir, "rebuild").exists()
    assert not beside(settings.index_dir, "old").exists()


def test_an_adr_title_is_masked_before_it_is_stored(
    home: Path, tmp_path: Path, embedder: object
) -> None:
    adrs = tmp_path / "docs" / "adr"
    adrs.mkdir(parents=True)
    (adrs / "0001-rotate-the-deploy-token.md").write_text(
        f"# 1. Rotate the deploy token {GH_TOKEN}\n\nDate: 2024-01-01\n\n## Status\n\nAccepted\n\n"
        "## Context\n\nThe CI token leaked.\n\n## Decision\n\nRotate it monthly.\n"
    )
    settings = load_settings()
    indexer = indexer_for(embedder)
    sources = configured_sources(settings, Sources(adrs=(adrs,), project=str(tmp_path)))
    indexer.sync(walk(sources))
    table = indexer.store._chunks.search().select(["name", "description", "text"]).limit(None)
    stored = str(table.to_arrow().to_pylist())
    assert GH_TOKEN not in stored and "Rotate the deploy token" in stored


def test_links_that_leave_a_source_folder_are_not_followed(tmp_path: Path, home: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    secret = tmp_path / "elsewhere" / "secret.md"
    secret.parent.mkdir()
    secret.write_text("# not a note\n\npassword\n")
    (notes / "real.md").write_text("# a real note\n")
    (notes / "outside.md").symlink_to(secret)
    (notes / "inside.md").symlink_to(notes / "real.md")
    (notes / "sub").symlink_to(secret.parent, target_is_directory=True)
    found = walk_notes(notes)
    names = sorted(f.path.name for f in found.files)  # type: ignore[attr-defined]
    assert names == ["inside.md", "real.md"]
    reasons = {Path(p.path).name: p.reason for p in found.problems}  # type: ignore[attr-defined]
    assert "out of the source folder" in reasons["outside.md"]
    assert "out of the source folder" in reasons["sub"]


def test_the_watcher_does_not_follow_a_link_out_either(tmp_path: Path) -> None:
    from precedents.ingest.sources import SourceDir
    from precedents.watcher.watches import route

    notes = tmp_path / "notes"
    notes.mkdir()
    (tmp_path / "secret.md").write_text("x")
    (notes / "outside.md").symlink_to(tmp_path / "secret.md")
    (notes / "plain.md").write_text("y")
    src = [SourceDir("note", notes, "/p", (".md",), recursive=True)]
    assert route(src, str(notes / "outside.md")) is None
    assert route(src, str(notes / "plain.md")) is not None


def test_counts_are_what_they_say(home: Path, tmp_path: Path, embedder: object) -> None:
    # Guards the helpers above: a store with N files reports N distinct paths.
    notes = copy_notes(tmp_path / "notes", 5)
    indexer = indexer_for(embedder)
    indexer.sync(walk_notes(notes))  # type: ignore[arg-type]
    per_path = Counter(p for _, p in chunk_rows(indexer.store))
    assert len(per_path) == 5 and all(n >= 1 for n in per_path.values())


def can_mount_tmpfs() -> bool:
    if not shutil.which("unshare") or sys.platform != "linux":
        return False
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt"],
        capture_output=True,
        timeout=30,
        check=False,
    )
    return probe.returncode == 0


@pytest.mark.slow
def test_a_full_disk_is_one_line_about_the_disk(tmp_path: Path) -> None:
    if not can_mount_tmpfs():
        pytest.skip("needs `unshare -rm` and tmpfs mounts (Linux, root or user namespaces)")
    notes = copy_notes(tmp_path / "notes", 150)
    disk = tmp_path / "disk"
    disk.mkdir()
    # A private 4 MiB tmpfs, nearly filled: the index cannot fit; the mount dies with the shell.
    script = (
        'mount -t tmpfs -o size=4m tmpfs "$1" && '
        'dd if=/dev/zero of="$1/fill" bs=1k count=3700 2>/dev/null && '
        'exec "$2" -m precedents.cli reindex --notes "$3" --project "$4"'
    )
    env = {
        **os.environ,
        "PRECEDENTS_HOME": str(disk / "state"),
        "PRECEDENTS_CLAUDE_DIR": str(tmp_path / "claude"),
        "PYTHONPATH": str(REPO / "src"),
    }
    proc = subprocess.run(
        [
            "unshare",
            "-rm",
            "sh",
            "-c",
            script,
            "sh",
            str(disk),
            sys.executable,
            str(notes),
            str(tmp_path),
        ],
        capture_output=True,
        env=env,
        timeout=600,
        check=False,
    )
    err = proc.stderr.decode()
    lines = [line for line in err.splitlines() if line.startswith("precedents:")]
    assert proc.returncode == 1, err
    assert "Traceback" not in err and len(lines) == 1, err
    assert "disk" in lines[0] and "full" in lines[0], err
    assert "/rust/" not in err and ".rs:" not in err, err


def test_the_adr_graph_cache_and_answers_hold_no_secret(home: Path, tmp_path: Path) -> None:
    from precedents.adr_graph import build_graph
    from precedents.secrets.mask import mask_secrets

    adrs = tmp_path / "adr"
    adrs.mkdir()
    body = "The CI token leaked. A distinctive body sentence."
    (adrs / "0001-rotate.md").write_text(
        f"# 1. Rotate the deploy token {GH_TOKEN}\n\n## Status\n\nAccepted\n\n## Context\n\n"
        f"{body} Old value: {GH_TOKEN}\n"
    )
    cache = tmp_path / "cache"
    graph = build_graph(adrs, cache, mask_secrets)
    rec = graph.get("1")
    assert GH_TOKEN not in rec.title and "Rotate the deploy token" in rec.title
    assert GH_TOKEN not in graph.text_of(rec) and body in graph.text_of(rec)
    assert graph.find(["distinctive"]) == [rec]  # found by its text, read on demand
    stored = b"".join(p.read_bytes() for p in cache.rglob("*") if p.is_file())
    assert GH_TOKEN.encode() not in stored and b"distinctive body" not in stored
    assert all((p.stat().st_mode & 0o077) == 0 for p in cache.rglob("*") if p.is_file())
    again = build_graph(adrs, cache, mask_secrets)
    assert again.from_cache and GH_TOKEN not in again.get("1").title
    assert all(GH_TOKEN not in s["text"] for s in again.chain("1")["sources"].values())


def test_a_first_index_takes_documents_first_and_conversations_newest_first(
    tmp_path: Path,
) -> None:
    from precedents.ingest.indexer import first_things_first
    from precedents.ingest.sources import SourceFile

    files = []
    for i, kind in enumerate(["conversation", "note", "conversation", "adr", "conversation"]):
        path = tmp_path / f"{i}.{'jsonl' if kind == 'conversation' else 'md'}"
        path.write_text("x")
        os.utime(path, (1_000_000 + i * 10, 1_000_000 + i * 10))
        files.append(SourceFile(path, kind, "/p", tmp_path))  # type: ignore[arg-type]
    order = [f.path.name for f in first_things_first(files)]
    assert order == ["1.md", "3.md", "4.jsonl", "2.jsonl", "0.jsonl"]


def test_status_shows_a_pass_in_progress(home: Path, tmp_path: Path) -> None:
    from precedents.ingest.progress import PassProgress, read_progress

    run = load_settings().run_dir
    seen: list[tuple[int, int]] = []
    tracker = PassProgress(run, lambda d, t, c: seen.append((d, t)))
    tracker(3, 10, 12)
    assert seen == [(3, 10)]
    assert api.status(load_settings())["indexing"]["files_done"] == 3
    out = subprocess.run(
        [sys.executable, "-m", "precedents.cli", "status"],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )  # fmt: skip
    assert "indexing: 3/10 files" in out.stdout, out.stderr
    tracker.done()
    assert read_progress(run) is None and api.status(load_settings())["indexing"] is None
    (run / PassProgress.FILE).write_text('{"pid": 999999, "files_done": 1}')  # a killed pass
    assert read_progress(run) is None
