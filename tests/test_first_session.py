"""A project known from its first session, with only the plugin installed (issue #29).

Nothing was indexed and no watcher runs: the first hook of a session has the daemon
register the project, serve its rule files straight from disk (the file hook's first
Read gets its rule), and index the project in one background process; then a prompt
recalls its team note and `status` lists it. A second session starts no second
index; a session in the home folder indexes nothing.

Real parts: the hook as Claude Code runs it (``python -I -S launch.py``), which starts
the real daemon (the bundled model), the real background index into a LanceDB store
in a temp state folder, git repositories made here, and the real CLI. The unit tests
below them use the real files and parsers, no model.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from precedents import protocol
from precedents.config import load_settings, model_cache_dir
from precedents.ingest.registry import (
    WATCHER_ROLE,
    in_registry,
    refused_root,
    register,
    registered,
    registry_path,
    watcher_running,
)
from precedents.ingest.sources import configured_sources, project_sources, source_rows
from precedents.recall.files import FileScopes
from precedents.recall.provisional import ProvisionalRules, read_rules
from precedents.runlock import FileLock

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import (  # noqa: E402 - after the rewrite registration
    alive,
    file_json,
    hook_env,
    prompt_json,
    run_hook,
)
from tests.team_repos import git, init_repo  # noqa: E402

RULE = "Validate every request body with zod before touching it."
# What the file hook shows of it: its headline (name and description).
RULE_LINE = "API handlers — How API handlers validate their input"
NOTE_TITLE = "Ledger retries"
NOTE = (
    f"---\nname: {NOTE_TITLE}\ndescription: Failed payouts are retried by the ledger worker\n"
    "author: Alice Example\ndate: 2026-11-30\n---\n"
    "Failed payouts are retried by the ledger worker with exponential backoff, never by "
    "the HTTP handler: a handler that retries double-charges the customer.\n"
)
QUESTION = "who retries a failed payout, the handler or the ledger worker?"
# Generous: the machine is shared; the figures are printed, the bounds only catch a hang.
RULE_BOUND_S = 120.0
NOTE_BOUND_S = 300.0


def make_project(folder: Path) -> Path:
    """A repository with a Cursor rule for src/api/**, a team note and an ADR."""
    project = init_repo(folder)
    files = {
        ".cursor/rules/api.mdc": (
            "---\ndescription: How API handlers validate their input\n"
            f"globs: src/api/**\nalwaysApply: false\n---\n# API handlers\n\n{RULE}\n"
        ),
        ".precedents/notes/x.md": NOTE,
        "docs/adr/0001-use-postgres.md": (
            "# 1. Use PostgreSQL\n\nDate: 2026-11-01\n\n## Status\n\nAccepted\n\n"
            "## Context\n\nWe need one database.\n\n## Decision\n\nPostgreSQL 16.\n"
        ),
        "src/api/users.ts": "export const users = [];\n",
    }
    for rel, text in files.items():
        path = project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "start")
    return project


def session_json(cwd: Path, session: str) -> bytes:
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": str(cwd / f"{session}.jsonl"),
            "cwd": str(cwd),
            "hook_event_name": "SessionStart",
            "source": "startup",
        }
    ).encode()


def daemon_log(home: Path) -> str:
    path = home / "logs" / "daemon.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def index_pids(home: Path) -> list[int]:
    """The background indexes the daemon said it started."""
    marker = "in the background "
    return [
        json.loads(line.split(marker, 1)[1])["pid"]
        for line in daemon_log(home).splitlines()
        if "first session: indexing" in line
    ]


def stop_pid(pid: int, limit: float = 30) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + limit
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive(pid):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def plugin_env(home: Path, tmp_path: Path) -> Iterator[dict[str, str]]:
    """What the hooks run with: the test's state and Claude Code folders; every process
    they started (the daemon, its background index) is stopped after the test."""
    claude = Path(os.environ["PRECEDENTS_CLAUDE_DIR"])
    env = {
        "PRECEDENTS_CLAUDE_DIR": str(claude),
        "PRECEDENTS_FIRST_PROMPT_BUDGET_MS": "120000",
        # A HOME of the test's (the home-folder rule is tested with it); the built model
        # stays where this machine keeps it.
        "HOME": str(tmp_path / "user"),
        "PRECEDENTS_MODEL_CACHE": str(model_cache_dir()),
    }
    (tmp_path / "user").mkdir()
    yield env
    pids = index_pids(home)
    with contextlib.suppress(OSError, ValueError):
        stop_pid(int((home / "run" / protocol.PID_NAME).read_text()))
    for pid in pids:
        stop_pid(pid)


def hook(home: Path, stdin: bytes, mode: str, cwd: Path, env: dict[str, str]) -> str:
    out = run_hook(home, stdin, mode, cwd=cwd, budget_ms=None, env=env, timeout=180)
    assert out.returncode == 0
    assert not out.stderr, out.stderr.decode()
    return out.stdout.decode()


def cli(home: Path, cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "precedents.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=hook_env(home, **env),
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_a_project_is_known_from_its_first_session(
    home: Path, tmp_path: Path, plugin_env: dict[str, str]
) -> None:
    project = make_project(tmp_path / "shop")
    started = time.monotonic()
    hook(home, session_json(project, "s-1"), "session", project, plugin_env)
    # The first Read of the session, right after SessionStart: the rule, from the file.
    read = hook(
        home, file_json(project / "src/api/users.ts", project, "s-1"), "file", project, plugin_env
    )
    rule_s = time.monotonic() - started
    served = json.loads(read)["hookSpecificOutput"]["additionalContext"]
    assert RULE_LINE in served and ".cursor/rules/api.mdc" in served
    assert rule_s < RULE_BOUND_S
    print(f"\nrule served {rule_s:.1f} s after SessionStart (daemon start included)")
    assert registered(home) == [str(project)]

    # A second session in the same project: no second index.
    hook(home, session_json(project, "s-2"), "session", project, plugin_env)
    [pid] = index_pids(home)

    # The team note becomes searchable once the background index is done.
    recalled = ""
    while time.monotonic() - started < NOTE_BOUND_S:
        recalled = hook(home, prompt_json(QUESTION, project), "prompt", project, plugin_env)
        if NOTE_TITLE in recalled:
            break
        time.sleep(1.0)
    note_s = time.monotonic() - started
    assert NOTE_TITLE in recalled, daemon_log(home)
    print(f"team note searchable {note_s:.1f} s after SessionStart")
    assert index_pids(home) == [pid]
    while "background index done" not in daemon_log(home):
        assert time.monotonic() - started < NOTE_BOUND_S, daemon_log(home)
        time.sleep(0.2)
    assert '"exit": 0' in daemon_log(home)
    assert not alive(pid)

    # The rule is served from the store now, still once per session.
    again = hook(
        home, file_json(project / "src/api/v2.ts", project, "s-3"), "file", project, plugin_env
    )
    assert RULE_LINE in again

    status = cli(home, project, plugin_env, "status", "--json")
    assert status.returncode == 0, status.stderr
    info = json.loads(status.stdout)
    assert str(project) in {row["project"] for row in info["sources"]}
    assert str(project) in info["projects"]


@pytest.mark.slow
def test_a_session_in_the_home_folder_indexes_nothing(
    home: Path, tmp_path: Path, plugin_env: dict[str, str]
) -> None:
    user = Path(plugin_env["HOME"])
    rules = user / ".cursor" / "rules"
    rules.mkdir(parents=True)
    (rules / "api.mdc").write_text(f"---\nglobs: src/api/**\n---\n# API\n\n{RULE}\n")
    (user / "src" / "api").mkdir(parents=True)
    hook(home, session_json(user, "s-home"), "session", user, plugin_env)
    read = hook(
        home, file_json(user / "src/api/users.ts", user, "s-home"), "file", user, plugin_env
    )
    assert read == ""
    deadline = time.monotonic() + 30
    while "not indexed" not in daemon_log(home) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "is the home folder: not indexed" in daemon_log(home)
    assert index_pids(home) == []
    assert not registry_path(home).exists()
    assert not (home / "index").exists()


@pytest.mark.slow
def test_with_a_watcher_running_the_daemon_starts_no_index(
    home: Path, tmp_path: Path, plugin_env: dict[str, str]
) -> None:
    """The watcher (its lock held here) learns of the project from the registry; the
    daemon registers it and serves its rules, and starts no index of its own."""
    project = make_project(tmp_path / "shop")
    (home / "run").mkdir(parents=True)
    watcher = FileLock(home / "run" / f"{WATCHER_ROLE}.lock")
    assert watcher.acquire()
    try:
        hook(home, session_json(project, "s-w"), "session", project, plugin_env)
        read = hook(
            home,
            file_json(project / "src/api/users.ts", project, "s-w"),
            "file",
            project,
            plugin_env,
        )
        assert RULE_LINE in read
        deadline = time.monotonic() + 30
        while "the running watcher indexes" not in daemon_log(home):
            assert time.monotonic() < deadline, daemon_log(home)
            time.sleep(0.1)
    finally:
        watcher.release()
    assert registered(home) == [str(project)]
    assert index_pids(home) == []


# -- the parts, without a daemon ---------------------------------------------------------


def test_the_home_folder_and_above_are_refused(tmp_path: Path) -> None:
    user = tmp_path / "home" / "alice"
    assert refused_root("/", user) == "the file system's root"
    assert refused_root(str(user), user) == "the home folder"
    assert refused_root(str(tmp_path / "home"), user) == "a folder above the home folder"
    assert refused_root(str(user / "code" / "shop"), user) is None
    assert refused_root(str(tmp_path / "elsewhere"), user) is None
    state = tmp_path / "state"
    assert refused_root(str(state / "run"), user, state) == "in the state folder"


def test_a_registered_project_is_a_source_once(home: Path, tmp_path: Path) -> None:
    project = make_project(tmp_path / "shop")
    settings = load_settings()
    assert str(project) not in {s.project for s in configured_sources(settings)}
    assert register(home, str(project)) is True
    assert register(home, str(project)) is False  # already there: not twice
    assert registered(home) == [str(project)]
    rows = source_rows(configured_sources(load_settings(repos=[project])))
    own = sorted(str(r["root"]) for r in source_rows(project_sources(project)))
    # The configured repo's sources, not again the registry's.
    assert sorted(str(r["root"]) for r in rows if r["project"] == str(project)) == own
    found = configured_sources(settings)
    assert {s.kind for s in found if s.project == str(project)} == {"adr", "note", "rule"}
    assert in_registry(home, str(registry_path(home)))


def test_a_damaged_registry_registers_nothing(home: Path) -> None:
    registry_path(home).parent.mkdir(parents=True)
    registry_path(home).write_text("{not json")
    assert registered(home) == []


def test_rules_are_read_from_the_files_and_served_by_scope(tmp_path: Path) -> None:
    project = make_project(tmp_path / "shop")
    rows = read_rules(str(project), 1_000_000)
    assert [Path(r["path"]).name for r in rows] == ["api.mdc"]
    provisional = ProvisionalRules()
    provisional.put(str(project), rows)
    scopes = FileScopes(provisional.rows())
    scopes.compile()
    keys = [str(project)]
    assert [s.record.name for s in scopes.attached(keys, "src/api/users.ts")] == ["API handlers"]
    assert scopes.attached(keys, "src/web/app.ts") == []
    # The stored row of the same path wins (the snapshot's rows come first).
    stored = {**rows[0], "name": "stored", "source_hash": "x"}
    both = FileScopes([stored, *provisional.rows()])
    both.compile()
    assert [s.record.name for s in both.attached(keys, "src/api/users.ts")] == ["stored"]
    assert provisional.drop(str(project)) and provisional.rows() == []


def test_a_rule_read_from_its_file_is_masked(tmp_path: Path) -> None:
    project = make_project(tmp_path / "shop")
    token = "ghp_" + "".join("Xk9mQ2vL7pRt4wZ8yB3nC6dF1gH5jK0sA"[i % 33] for i in range(36))
    (project / ".cursor/rules/deploy.mdc").write_text(
        f"---\ndescription: The deploy bot uses {token}\nglobs: deploy/**\n---\n# Deploy\n"
    )
    [row] = [r for r in read_rules(str(project), 1_000_000) if r["path"].endswith("deploy.mdc")]
    assert token not in json.dumps(row)
    assert "[MASKED:github-token]" in row["description"]


def test_the_background_index_walks_that_project_alone(home: Path, tmp_path: Path) -> None:
    from precedents.ingest.first_session import project_only_sources
    from precedents.ingest.sources import encode_project_path

    project = make_project(tmp_path / "shop")
    claude = Path(os.environ["PRECEDENTS_CLAUDE_DIR"]) / "projects"
    (claude / encode_project_path(str(project)) / "memory").mkdir(parents=True)
    (claude / encode_project_path(str(tmp_path / "other")) / "memory").mkdir(parents=True)
    found = project_only_sources(load_settings(), str(project))
    assert {s.project for s in found} == {str(project)}
    assert {s.kind for s in found} == {"adr", "rule", "note", "conversation"}
    assert all("other" not in str(s.root) for s in found)


def test_a_folder_with_nothing_to_index_is_left_alone(home: Path, tmp_path: Path) -> None:
    from precedents.ingest.first_session import has_sources

    settings = load_settings()
    scratch = tmp_path / "scratch"
    (scratch / "src").mkdir(parents=True)
    assert has_sources(settings, str(scratch)) is False
    (scratch / ".cursor" / "rules").mkdir(parents=True)
    assert has_sources(settings, str(scratch)) is True
    assert has_sources(settings, str(init_repo(tmp_path / "repo"))) is True  # its history


def test_the_background_index_says_how_to_call_it(home: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "precedents.ingest.first_session", "relative/path"],
        capture_output=True,
        text=True,
        env=hook_env(home),
        timeout=120,
        check=False,
    )
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "usage: python -m precedents.ingest.first_session ROOT"
    ]


def test_a_running_watcher_takes_on_a_registered_project_at_once(
    home: Path, tmp_path: Path
) -> None:
    from precedents.store import Store, open_store
    from precedents.watcher import Watcher, WatchTiming
    from tests.conftest import FakeEmbedder

    settings = load_settings()
    emb = FakeEmbedder()
    store = open_store(settings.index_dir, emb)
    reader = Store(settings.index_dir, emb.model_id, emb.dimension, reader=True)
    # No rescan during the test: only the registry's watch can tell it.
    timing = WatchTiming(quiet_s=0.1, conversation_quiet_s=0.3, max_wait_s=2.0, rescan_s=600.0)
    watcher = Watcher(settings, store=store, embedder=emb, timing=timing)
    watcher.start()
    try:
        assert watcher.wait_ready(30)
        project = make_project(tmp_path / "shop")
        note = project / ".precedents/notes/x.md"
        register(home, str(project))
        deadline = time.monotonic() + 30
        while str(note) not in reader.files() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert reader.files()[str(note)].project == str(project)
        assert str(project / ".cursor/rules/api.mdc") in reader.files()
    finally:
        watcher.stop()


def test_a_daemon_with_no_engine_keeps_no_hook_waiting(home: Path, tmp_path: Path) -> None:
    import threading

    from precedents.query_daemon.projects import FirstSessions

    first = FirstSessions(load_settings(), threading.Event())
    pending = first.note(str(tmp_path))
    assert not pending.is_set() and first.note(str(tmp_path)) is pending  # noted once
    first.attach(object())  # type: ignore[arg-type] - a test's stand-in for Recall
    assert pending.is_set()
    assert first.note(str(tmp_path / "other")).is_set()


def test_a_running_watcher_is_seen_by_its_lock(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    assert watcher_running(run) is False
    lock = FileLock(run / f"{WATCHER_ROLE}.lock")
    assert lock.acquire()
    try:
        assert watcher_running(run) is True
    finally:
        lock.release()
    assert watcher_running(run) is False
    from precedents.watcher import ROLE

    assert ROLE == WATCHER_ROLE
