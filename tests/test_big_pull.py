"""A big pull (issue #28): hundreds of team notes arriving in one `git pull`.

Real git (a bare origin, two clones), the real watcher loading the real bundled
model itself, a reader view of the real LanceDB store. What is asserted is
behaviour, not speed (bench/big_pull.py measures 5,000 notes):

- every pulled note becomes searchable, and the notes land in several commits
  while the pull is indexed (a reader sees them arrive batch by batch, not all
  at the end); the pull is applied in groups of files, not as one batch;
- a pull of more files than a group is searchable by its heads first: every
  pulled note is in the store under a provisional hash (ingest/heads.py) before
  the full pass has finished, and the full pass then replaces every head;
- the pull is indexed by the watcher's child process (watcher/child.py), every
  thread of it at background priority (Linux: a waking hook is scheduled ahead
  of them); the watcher holds neither the model nor LanceDB, and the caller's
  own thread keeps its priority;
- a batch's memory goes back after it (the model keeps no arena of its largest
  batch), and the daemon's refresh exports run at background priority.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from precedents.config import load_settings
from precedents.ingest.background import BACKGROUND_NICE
from precedents.ingest.heads import provisional
from precedents.ingest.sources import Sources
from precedents.models.embedding import load_embedder
from precedents.recall.exported import Exporter
from precedents.store import Store
from precedents.watcher import Watcher, WatchTiming
from precedents.watcher.batches import APPLY_FILES, BURST_HEADS_FROM
from precedents.watcher.child import ChildSide
from tests.team_repos import git, team_repos

NOTES = 300
LINUX = sys.platform.startswith("linux")
BOUND_S = 600.0  # generous: 300 notes on a busy 2-core box; the bench measures speed
PARAGRAPHS = [
    "Deploys freeze from Friday noon until Monday morning, release candidates included.",
    "The staging database credentials rotate every quarter through the vault job.",
    "Webhook retries back off exponentially, capped at one hour between attempts.",
    "Feature flags live in the flags service, never in the shared settings module.",
    "Docker base images are pinned by digest so a rebuild never changes them silently.",
    "The nightly backup is restored on a spare host every week to prove it works.",
]


def note(i: int) -> str:
    body = " ".join(PARAGRAPHS[(i + k) % len(PARAGRAPHS)] for k in range(3))
    return (
        f"---\nname: Team decision {i}\ndescription: what we agreed in meeting {i}\n"
        f"author: Alice Example\ncreated: 2026-11-{1 + i % 28:02d}\n---\n{body}\n"
    )


def nice_of(tid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, tid)


def niced_threads(pid: int | str = "self") -> int:
    """Threads of a process at background priority (Linux)."""
    count = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        count += int(fields[16]) >= BACKGROUND_NICE
    return count


@pytest.mark.slow
def test_a_pull_of_300_notes_lands_in_batches_at_background_priority(
    home: Path, tmp_path: Path
) -> None:
    _, alice, bob = team_repos(tmp_path)
    folder = alice / ".precedents" / "notes"
    folder.mkdir(parents=True)
    (folder / "first.md").write_text(note(-1), encoding="utf-8")
    git(alice, "add", "-A")
    git(alice, "commit", "-q", "-m", "a first team note")
    git(alice, "push", "-q", "origin", "main")
    git(bob, "pull", "-q", "--ff-only", "origin", "main")

    settings = load_settings(discover_claude=False)
    main_nice = nice_of(threading.get_native_id())
    watcher = Watcher(settings, folders=Sources(project=str(bob)), timing=WatchTiming(0.3))
    with watcher:
        assert watcher.wait_ready(240)
        # The store side runs in the watcher's child: this process holds no store
        # and no model of the watcher's.
        side = watcher.side
        assert isinstance(side, ChildSide)
        model = load_embedder(settings.model_spec())
        reader = Store(settings.index_dir, model.model_id, model.dimension, reader=True)

        def notes() -> list[str]:
            return [p for p, f in reader.files().items() if f.kind == "note"]

        assert len(notes()) == 1
        batches = watcher.stats.batches

        for i in range(NOTES):
            (folder / f"note-{i:03d}.md").write_text(note(i), encoding="utf-8")
        git(alice, "add", "-A")
        git(alice, "commit", "-q", "-m", f"{NOTES} team notes")
        git(alice, "push", "-q", "origin", "main")
        git(bob, "pull", "-q", "--ff-only", "origin", "main")

        seen: set[int] = set()
        headed = 0
        niced: set[int] = set()
        background = 0
        deadline = time.monotonic() + BOUND_S
        while len(indexed := notes()) < NOTES + 1:
            assert time.monotonic() < deadline, f"{len(indexed)} of {NOTES + 1} indexed"
            seen.add(len(indexed))
            headed = max(headed, sum(provisional(f) for f in reader.files().values()))
            child = side.pid
            if LINUX and child is not None:
                try:
                    niced.add(nice_of(child))
                    background = max(background, niced_threads(child))
                except OSError:
                    pass  # it ended (recycled) between the two reads
            time.sleep(0.2)
        # Every note there at once: by its head (the full pass, ~8 s here, follows).
        headed = max(headed, sum(provisional(f) for f in reader.files().values()))
        # The pull, due at once, was applied in groups (watcher/batches.py), each its
        # own hold of the writer lock.
        groups = -(-NOTES // APPLY_FILES)
        deadline = time.monotonic() + 30
        while watcher.stats.batches - batches < groups and time.monotonic() < deadline:
            time.sleep(0.1)
        assert watcher.stats.batches - batches >= groups
        # Then the full pass replaces every head: each note's row has its file's hash.
        deadline = time.monotonic() + BOUND_S
        while any(provisional(f) for f in reader.files().values()):
            assert time.monotonic() < deadline, "heads left after the full pass"
            time.sleep(0.2)
        rows = reader.files()
        for i in range(NOTES):
            path = bob / ".precedents" / "notes" / f"note-{i:03d}.md"
            want = hashlib.sha256(path.read_bytes()).hexdigest()
            assert rows[str(path)].sha256 == want, path

    assert len([p for p in indexed if "/note-" in p]) == NOTES
    # Searchable batch by batch: a reader saw the count grow in steps (the heads pass
    # commits every HEAD_BATCH files), not all at the end.
    assert {n for n in seen if 1 < n < NOTES + 1}, sorted(seen)
    # Searchable by their heads first: the pull reached the worker in bursts (each
    # path is due 0.3 s after its own last event), and those of more than
    # BURST_HEADS_FROM files were stored by their heads before any full document.
    assert watcher.stats.headed >= NOTES - BURST_HEADS_FROM, watcher.stats.headed
    assert headed > 0
    # The caller's thread is never lowered, whatever the watcher's threads run at.
    assert nice_of(threading.get_native_id()) == main_nice
    if LINUX:
        assert niced and min(niced) >= BACKGROUND_NICE, niced
        # Every thread of the child (ONNX Runtime's compute threads among them) was
        # born at background priority: the child lowered its main thread first.
        assert background >= (2 if (os.cpu_count() or 1) >= 2 else 1), background


@pytest.mark.skipif(not LINUX, reason="per-thread nice values and /proc are Linux's")
def test_the_model_loaded_by_the_watcher_computes_at_background_priority(home: Path) -> None:
    """ONNX Runtime's compute threads are created when the model loads: loaded through
    the watcher's factory, they inherit its background priority."""
    code = textwrap.dedent(
        """
        import os, threading
        from precedents.config import load_settings
        from precedents.models.embedding import load_embedder
        from precedents.watcher.embcache import background_model

        spec = load_settings(discover_claude=False).model_spec()
        before = set(os.listdir("/proc/self/task"))
        out = {}
        keep = []  # the model alive: a freed session joins its pool's threads
        def load():
            model = background_model(lambda: load_embedder(spec))
            model.encode_passages(["a sentence to embed"] * 8)
            keep.append(model)
            out["loader"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        t = threading.Thread(target=load)
        t.start(); t.join()
        new = set(os.listdir("/proc/self/task")) - before
        nice = [int(open(f"/proc/self/task/{n}/stat").read().rsplit(")", 1)[1].split()[16])
                for n in new if os.path.exists(f"/proc/self/task/{n}/stat")]
        out["threads"] = nice
        out["main"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        print(json.dumps(out))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", "import json\n" + code],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["loader"] >= BACKGROUND_NICE and out["main"] == 0
    # The compute threads still alive (ONNX Runtime's pool) were born niced.
    assert out["threads"] and min(out["threads"]) >= BACKGROUND_NICE, out


@pytest.mark.skipif(not LINUX, reason="VmRSS is read from /proc")
def test_embedding_a_batch_keeps_no_arena_of_it(home: Path) -> None:
    """The resident memory after embedding batches of 64 long passages stays near what
    the model alone holds (+1 MiB measured): ONNX Runtime's arena kept +85 MiB of the
    largest batch for the life of the watcher and the daemon."""
    code = textwrap.dedent(
        """
        from precedents.config import load_settings
        from precedents.models.embedding import load_embedder
        from precedents.watcher.embcache import CachedEmbedder

        def rss():
            for line in open("/proc/self/status"):
                if line.startswith("VmRSS"):
                    return int(line.split()[1]) / 1024

        model = CachedEmbedder(load_embedder(load_settings(discover_claude=False).model_spec()))
        model.encode_passages(["warm up"])
        before = rss()
        words = "the release train leaves on friday and the staging database rotates".split()
        for batch in range(3):
            texts = [" ".join(words[(i + j + batch) % len(words)] for j in range(200))
                     for i in range(64)]
            model.encode_passages(texts)
        model.encode_passages(["one more"])  # frees what the last batch left
        print(rss() - before)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    grew = float(done.stdout.splitlines()[-1])
    assert grew < 30, f"resident memory grew {grew:.0f} MiB over three batches"


@pytest.mark.skipif(not LINUX, reason="a process's nice value is read with getpriority")
def test_the_daemons_refresh_exports_run_at_background_priority(tmp_path: Path) -> None:
    """The start-up export (a first prompt may wait for it) and a single save's run at
    normal priority; the third on of a burst (the watcher committing a pull), each soon
    after the last, at background priority."""
    exporter = Exporter(tmp_path / "no-index", tmp_path / "snapshot.npz")
    priorities = []
    for _ in range(3):
        exporter.start()
        child = exporter._child
        assert child is not None
        priorities.append(os.getpriority(os.PRIO_PROCESS, child.pid))
        assert exporter.run() is None  # no index there: the child says so and exits
    normal = os.getpriority(os.PRIO_PROCESS, 0)
    assert priorities[0] == normal and priorities[1] == normal
    assert priorities[2] >= BACKGROUND_NICE
    exporter._finished -= 60  # a save after a quiet minute: not a burst
    exporter.start()
    assert exporter._child is not None
    assert os.getpriority(os.PRIO_PROCESS, exporter._child.pid) == normal
    assert exporter.run() is None


@pytest.mark.slow
def test_the_stores_lancedb_caches_stay_bounded_over_many_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer commits for hours: LanceDB's caches keep an entry per version, 26 MiB
    per ~1,200 commits by default; the stores' shared session caps them."""
    import lancedb
    import numpy as np

    from precedents.store import DocumentRecord, FileRecord
    from precedents.store.session import CACHE_BYTES, session

    def commits(store: Store, n: int) -> None:
        rng = np.random.default_rng(7)
        for i in range(n):
            path = f"/n/{i}.md"
            vectors = rng.standard_normal((3, 384)).astype(np.float32)
            file = FileRecord(path, "note", "/p", f"{i:064x}", 100, 3, time.time())
            doc = DocumentRecord("note", "/p", path, f"note {i}", "about it")
            store.replace_documents([(file, doc, ["a" * 600, "b" * 600, "c" * 600], vectors)])
            store.maybe_compact()

    commits(Store(tmp_path / "ours", "m", 384), 400)
    assert 0 < session().size_bytes <= CACHE_BYTES

    default = lancedb.Session()  # what LanceDB gives a connection that names none
    original = lancedb.connect
    monkeypatch.setattr(
        lancedb, "connect", lambda *a, **k: original(*a, **{**k, "session": default})
    )
    commits(Store(tmp_path / "default", "m", 384), 400)
    assert default.size_bytes > CACHE_BYTES  # the cap is what keeps ours small
