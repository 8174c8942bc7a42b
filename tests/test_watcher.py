"""The watcher with real watchdog observers and a real LanceDB store in tmp_path.

Most tests use the fast FakeEmbedder; one uses the real bundled model. Every
check polls the store up to a timeout: nothing here asserts a latency.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from precedents.config import DEFAULT_MODEL, load_settings
from precedents.ingest.sources import Sources
from precedents.models.embedding import canonical_model_id
from precedents.recall import search
from precedents.runlock import read_pid
from precedents.store import Store, open_store
from precedents.store.opening import LazyStore
from precedents.watcher import ROLE, Watcher, WatcherRunning, WatchTiming
from precedents.watcher.debounce import Debouncer

from .conftest import FakeEmbedder

PID_NAME = f"{ROLE}.pid"
PROJECT = "/proj-watch"
FAST = WatchTiming(quiet_s=0.1, conversation_quiet_s=0.3, max_wait_s=2.0, rescan_s=60.0)
TIMEOUT = 15.0


def wait_for(check: Callable[[], bool], timeout: float = TIMEOUT) -> bool:
    """Poll ``check`` until it holds or ``timeout`` passes."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.05)
    return check()


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_note(folder: Path, name: str, topic: str) -> Path:
    path = folder / name
    path.write_text(
        f"---\nname: {topic}\ndescription: about {topic}\n---\nWhat we decided on {topic}.\n",
        encoding="utf-8",
    )
    return path


class Env:
    """A notes folder, a writer store for the watcher and a reader store for the checks."""

    def __init__(self, home: Path, tmp: Path, emb: Any = None) -> None:
        self.settings = load_settings()
        self.emb = emb or FakeEmbedder()
        self.query_emb = FakeEmbedder() if emb is None else emb
        self.notes = tmp / "notes"
        self.notes.mkdir(exist_ok=True)
        self.store = open_store(self.settings.index_dir, self.emb)
        self.reader = Store(
            self.settings.index_dir, self.emb.model_id, self.emb.dimension, reader=True
        )

    def watcher(self, timing: WatchTiming = FAST, **kw: Any) -> Watcher:
        kw.setdefault("notes", [self.notes])
        return Watcher(
            self.settings,
            folders=Sources(project=PROJECT, **kw),
            store=self.store,
            embedder=self.emb,
            timing=timing,
        )

    def files(self) -> dict[str, str]:
        return {p: f.sha256 for p, f in self.reader.files().items()}

    def found(self, text: str, path: Path) -> bool:
        vec = self.query_emb.encode_queries([text])[0]
        hits = search(self.reader, vec, [PROJECT], k=20)
        return any(h.record.path == str(path) and h.score > 0.3 for h in hits)

    def has(self, path: Path) -> bool:
        return self.files().get(str(path)) == (sha(path) if path.exists() else None)


@pytest.fixture
def env(home: Path, tmp_path: Path) -> Env:
    return Env(home, tmp_path)


@pytest.fixture
def running(env: Env) -> Iterator[Watcher]:
    write_note(env.notes, "a.md", "postgres vacuum")
    write_note(env.notes, "b.md", "git rebase")
    w = env.watcher()
    w.start()
    assert w.wait_ready(TIMEOUT)
    yield w
    w.stop()


def test_saved_note_searchable_and_edit_reembeds_only_that_file(env: Env, running: Watcher) -> None:
    assert wait_for(lambda: env.has(env.notes / "a.md") and env.has(env.notes / "b.md"))
    c = write_note(env.notes, "c.md", "kubernetes ingress controller")
    # Both commits of c (its chunks, then its file row) before the snapshot below:
    # a reader may see the first a few milliseconds before the second.
    assert wait_for(lambda: env.found("kubernetes ingress controller", c) and env.has(c))

    before = env.reader.files()
    texts = env.emb.texts
    b = write_note(env.notes, "b.md", "zebracorn migration plan")
    assert wait_for(lambda: env.has(b) and env.found("zebracorn migration plan", b))
    after = env.reader.files()
    assert env.emb.texts - texts == after[str(b)].chunks == 1
    for other in ("a.md", "c.md"):  # untouched files keep their rows as they were
        assert after[str(env.notes / other)] == before[str(env.notes / other)]


def test_delete_and_move(env: Env, running: Watcher) -> None:
    a, b = env.notes / "a.md", env.notes / "b.md"
    assert wait_for(lambda: env.has(a) and env.has(b))
    a.unlink()
    assert wait_for(lambda: str(a) not in env.files())
    (env.notes / "sub").mkdir()
    moved = env.notes / "sub" / "b2.md"
    b.rename(moved)
    assert wait_for(lambda: env.has(moved) and str(b) not in env.files())
    assert env.found("git rebase", moved)
    # A whole folder moved out of the source takes its notes' rows with it.
    shutil.move(str(env.notes / "sub"), str(env.notes.parent / "elsewhere"))
    assert wait_for(lambda: env.files() == {})


def test_watched_folder_deleted_and_recreated(env: Env) -> None:
    timing = WatchTiming(quiet_s=0.1, rescan_s=0.5)
    first = write_note(env.notes, "first.md", "before the folder went away")
    with env.watcher(timing) as w:
        assert w.wait_ready(TIMEOUT) and env.has(first)
        shutil.rmtree(env.notes)
        assert wait_for(lambda: env.files() == {})
        env.notes.mkdir()  # no parent is watched: the periodic rescan re-attaches
        again = write_note(env.notes, "again.md", "after the folder came back")
        assert wait_for(lambda: env.has(again))
        later = write_note(env.notes, "later.md", "seen through the new watch")
        assert wait_for(lambda: env.has(later))
        assert w.stats.failures == 0


def test_vim_style_save_is_one_index_and_no_temp_rows(env: Env, running: Watcher) -> None:
    note = write_note(env.notes, "note.md", "first draft of the queue design")
    assert wait_for(lambda: env.has(note))
    indexed = running.stats.files_indexed
    # What vim does on :w with backupcopy=no, plus its swap file and emacs' lock.
    (env.notes / ".note.md.swp").write_bytes(b"swap")
    (env.notes / ".#note.md").write_text("lock")
    (env.notes / "4913").write_text("")
    (env.notes / "4913").unlink()
    note.rename(env.notes / "note.md~")
    write_note(env.notes, "note.md", "final queue design with retries")
    (env.notes / "note.md~").unlink()
    (env.notes / "#note.md#").write_text("emacs autosave")
    assert wait_for(lambda: env.has(note) and env.found("final queue design retries", note))
    time.sleep(0.5)  # let any straggling event be processed before counting
    assert set(env.files()) == {str(p) for p in (note, env.notes / "a.md", env.notes / "b.md")}
    assert running.stats.files_indexed - indexed == 1
    hits = search(env.reader, env.query_emb.encode_queries(["queue design"])[0], [PROJECT], k=50)
    assert [h.record.path for h in hits].count(str(note)) == 1


def test_reconcile_on_start(env: Env) -> None:
    keep, gone = write_note(env.notes, "keep.md", "cache"), write_note(env.notes, "gone.md", "tls")
    with env.watcher() as w:
        assert w.wait_ready(TIMEOUT)
        assert wait_for(lambda: env.has(keep) and env.has(gone))
    gone.unlink()
    new = write_note(env.notes, "new.md", "created while no watcher ran")
    with env.watcher() as w:
        assert w.wait_ready(TIMEOUT)
        assert w.stats.reconciles == 1
        assert set(env.files()) == {str(keep), str(new)}


def test_bad_files_are_reported_and_the_watcher_goes_on(
    home: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class Exploding(FakeEmbedder):
        def encode_passages(self, texts: Any) -> Any:
            if any("kaboom" in t for t in texts):
                raise RuntimeError("secret text kaboom must not be logged")
            return super().encode_passages(texts)

    env = Env(home, tmp_path, Exploding())
    caplog.set_level(logging.INFO, logger="precedents")
    with env.watcher() as w:
        assert w.wait_ready(TIMEOUT)
        binary = env.notes / "binary.md"
        binary.write_bytes(b"\x00\x01 not text")
        bad = write_note(env.notes, "bad.md", "kaboom")
        assert wait_for(lambda: w.stats.failures >= 1)
        good = write_note(env.notes, "good.md", "still indexing after a failure")
        assert wait_for(lambda: env.has(good))
        assert wait_for(lambda: f"{binary}: skipped: binary file" in caplog.text)
    assert str(bad) in caplog.text and "RuntimeError" in caplog.text
    assert "kaboom must not" not in caplog.text and "What we decided" not in caplog.text
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert errors and all(r.name == "precedents.watcher" for r in errors)


def test_a_store_that_always_fails_backs_off_and_still_stops(home: Path, tmp_path: Path) -> None:
    class Broken(FakeEmbedder):
        def encode_passages(self, texts: Any) -> Any:
            raise OSError("disk on fire")

    env = Env(home, tmp_path, Broken())
    w = env.watcher()
    w.start()
    assert w.wait_ready(TIMEOUT)
    for i in range(3):
        write_note(env.notes, f"n{i}.md", f"note {i}")
        time.sleep(0.3)
    assert wait_for(lambda: w.stats.failures >= 2)
    w.stop()  # wakes the worker from its back-off wait
    assert not any(t.name == "precedents-watcher" for t in threading.enumerate())
    assert not (env.settings.run_dir / PID_NAME).exists()


def test_stop_removes_pid_and_joins_threads(env: Env) -> None:
    pid_file = env.settings.run_dir / PID_NAME
    w = env.watcher()
    w.start()
    assert read_pid(env.settings.run_dir, ROLE) == os.getpid()
    assert oct(env.settings.run_dir.stat().st_mode & 0o777) == "0o700"
    w.stop()
    assert not pid_file.exists()
    names = {t.name for t in threading.enumerate()}
    assert "precedents-watcher" not in names


def test_second_watcher_refuses_and_stale_pid_is_recovered(env: Env) -> None:
    with env.watcher():
        with pytest.raises(WatcherRunning, match=f"pid {os.getpid()}"):
            env.watcher().start()
        assert read_pid(env.settings.run_dir, ROLE) == os.getpid()  # the loser did not touch it
    (env.settings.run_dir / PID_NAME).write_text("999999\n")  # a watcher that crashed
    with env.watcher():
        assert read_pid(env.settings.run_dir, ROLE) == os.getpid()
    assert not (env.settings.run_dir / PID_NAME).exists()


def test_new_claude_project_folder_is_picked_up_and_vanishes_safely(env: Env) -> None:
    projects = env.settings.claude_dir / "projects"  # does not exist yet
    w = Watcher(env.settings, store=env.store, embedder=env.emb, timing=FAST)
    with w:
        assert w.wait_ready(TIMEOUT)
        memory = projects / "-tmp-newproj" / "memory"
        memory.mkdir(parents=True)
        note = write_note(memory, "n.md", "a note in a folder that did not exist")
        assert wait_for(lambda: env.has(note))
        later = write_note(memory, "m.md", "written once the folder is watched")
        assert wait_for(lambda: env.has(later))
        shutil.rmtree(projects / "-tmp-newproj")
        assert wait_for(lambda: env.files() == {})
        other = projects / "-tmp-other" / "memory"
        other.mkdir(parents=True)
        third = write_note(other, "o.md", "the observer survived")
        assert wait_for(lambda: env.has(third))
        assert w.stats.failures == 0


def test_conversation_log_reindexed_whole_with_cached_vectors(env: Env, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    session = logs / "s1.jsonl"

    def exchange(prompt: str, answer: str) -> str:
        user = {"type": "user", "message": {"role": "user", "content": prompt}}
        reply = {"type": "assistant", "message": {"id": prompt, "role": "assistant"}}
        reply["message"]["content"] = [{"type": "text", "text": answer}]  # type: ignore[index]
        base = {"entrypoint": "cli", "cwd": PROJECT, "timestamp": "2026-01-02T03:04:05Z"}
        return json.dumps({**user, **base}) + "\n" + json.dumps({**reply, **base}) + "\n"

    session.write_text(exchange("how do we rotate tokens", "with the vault cron job"))
    with env.watcher(notes=[], conversations=[logs]) as w:
        assert w.wait_ready(TIMEOUT)
        assert wait_for(lambda: env.has(session))
        texts = env.emb.texts
        with session.open("a") as fh:
            fh.write(exchange("and the staging database", "restore it from the nightly dump"))
        assert wait_for(lambda: env.has(session))
        assert env.reader.files()[str(session)].chunks == 2
        assert env.emb.texts - texts == 1  # only the new exchange was embedded
    # The rows equal a whole re-read's: a fresh reindex finds nothing to change.
    from precedents.ingest.indexer import Indexer
    from precedents.ingest.sources import Sources, configured_sources, walk

    srcs = configured_sources(env.settings, Sources(conversations=[logs], project=PROJECT))
    report = Indexer(env.settings, env.store, env.emb).sync(walk(srcs))
    assert (report.files_indexed, report.files_unchanged) == (0, 1)


def test_debouncer_coalesces_a_burst() -> None:
    deb = Debouncer(max_wait_s=5.0)
    for _ in range(20):
        deb.add(("file", "x"), 0.05)
    deb.add(("file", "y"), 0.05)
    assert sorted(deb.take_due(2.0)) == [("file", "x"), ("file", "y")]  # type: ignore[type-var]
    assert deb.take_due(0.05) == [] and deb.pending() == 0


def test_real_model_note_searchable_by_meaning(home: Path, tmp_path: Path, embedder: Any) -> None:
    env = Env(home, tmp_path, embedder)
    with env.watcher() as w:
        assert w.wait_ready(TIMEOUT)
        note = env.notes / "money.md"
        note.write_text(
            "---\nname: Store money as integer cents\ndescription: never floats for prices\n"
            "---\nFloating point cannot represent 0.10 exactly; keep prices in cents.\n"
        )
        assert wait_for(lambda: env.has(note), 60.0)
        vec = embedder.encode_queries(["can I keep prices as floating point numbers?"])[0]
        hits = search(env.reader, np.asarray(vec), [PROJECT], k=3)
        assert hits and hits[0].record.path == str(note)


def test_watch_command_runs_until_sigterm(home: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    settings = load_settings()
    # A store that records the bundled model: the command opens it without loading the model,
    # and an empty folder gives it nothing to embed, so this test stays fast.
    Store(settings.index_dir, canonical_model_id(DEFAULT_MODEL), 384)
    cmd = [sys.executable, "-m", "precedents.watcher"]
    cmd += ["--notes", str(notes), "--project", str(tmp_path)]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    pid_file = settings.run_dir / PID_NAME
    try:
        assert wait_for(lambda: read_pid(settings.run_dir, ROLE) == proc.pid, 30.0)
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert not pid_file.exists()
    assert "watching 1 source folder" in err and "watcher stopped" in err

    # A second one, while the first is running, refuses with exit 2 and one line.
    first = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: read_pid(settings.run_dir, ROLE) == first.pid, 30.0)
        second = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        assert second.returncode == 2
        assert "already running" in second.stderr and "Traceback" not in second.stderr
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=30)
    assert first.returncode == 0


def test_stop_waits_for_the_model_still_loading(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """stop() returns only once the background model load has finished: a process
    that exited under onnxruntime's native start-up aborted (-6, "terminate called
    without an active exception"; `precedents watch` stopped 1.5 s after starting)."""
    notes = tmp_path / "notes"
    notes.mkdir()
    settings = load_settings()
    Store(settings.index_dir, FakeEmbedder.model_id, FakeEmbedder.dimension)
    started, finished = threading.Event(), threading.Event()

    def slow_load() -> FakeEmbedder:
        started.set()
        time.sleep(1.0)
        finished.set()
        return FakeEmbedder()

    def lazy(s: Any, index_dir: Path | None = None) -> LazyStore[FakeEmbedder]:
        return LazyStore(s.index_dir, FakeEmbedder.model_id, slow_load)

    monkeypatch.setattr("precedents.watcher.side.lazy_store", lazy)
    watcher = Watcher(
        settings, folders=Sources(project=PROJECT, notes=[notes]), timing=FAST, inline=True
    )
    watcher.start()
    assert watcher.wait_ready(TIMEOUT)
    assert started.wait(TIMEOUT)
    watcher.stop()
    assert finished.is_set()


def test_project_rule_files_are_watched_in_every_format(env: Env, tmp_path: Path) -> None:
    """A project's rules, found without config (docs/rules.md): a new rule in a watched
    rule folder, a new root file, a deleted rule, and (by the rescan) a new nested
    AGENTS.md are all brought in line; a dependency's rule file never is."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    rules = repo / ".cursor" / "rules"
    rules.mkdir(parents=True)
    first = rules / "api.mdc"
    first.write_text("---\nglobs: src/api/**\n---\n# API\nValidate input.\n")
    settings = env.settings.with_overrides(repos=(repo,), discover_claude=False)
    timing = WatchTiming(quiet_s=0.1, conversation_quiet_s=0.3, max_wait_s=2.0, rescan_s=1.0)
    with Watcher(settings, store=env.store, embedder=env.emb, timing=timing) as w:
        assert w.wait_ready(TIMEOUT)
        assert wait_for(lambda: env.has(first))
        second = rules / "tests.mdc"
        second.write_text("---\nglobs: **/*.test.ts\n---\n# Tests\nUse vitest.\n")
        assert wait_for(lambda: env.has(second))
        root = repo / "AGENTS.md"
        root.write_text("# Agents\nUse pnpm.\n")
        assert wait_for(lambda: env.has(root))
        first.unlink()
        assert wait_for(lambda: str(first) not in env.files())
        nested = repo / "web" / "AGENTS.md"
        nested.parent.mkdir()
        nested.write_text("# Web\nRun the web tests.\n")
        assert wait_for(lambda: env.has(nested))
        dependency = repo / "node_modules" / "pkg" / "AGENTS.md"
        dependency.parent.mkdir(parents=True)
        dependency.write_text("# not ours\n")
        time.sleep(2.5)  # two rescans
        assert str(dependency) not in env.files()
        assert w.stats.failures == 0
