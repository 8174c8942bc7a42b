"""A daemon that answered and then died is started again by the next hook, at once; one
that never became ready is not started on every message (issue #29, item 9).

Real parts: a store holding one note indexed with the bundled model, the daemon as
the hook starts it (``python -m precedents.query_daemon``), the hook as Claude Code
runs it (``python -I -S launch.py``), ``kill -9``. And the layering the starter's move
restored: nothing on the daemon's side reads the hook's code.
"""

from __future__ import annotations

import ast
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from precedents import protocol
from precedents.query_daemon import starter

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import (  # noqa: E402 - after the rewrite registration
    LAUNCHER,
    build_index,
    hook_env,
    prompt_json,
    run_hook,
)

pytest_plugins = ["tests.conftest_daemon"]

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "precedents"

NOTE_NAME = "rotate-staging-db-password.md"
NOTE = """# Rotating the staging database password

The staging Postgres password lives in the vault under `staging/db`. To rotate it,
run `make rotate-staging-db`, which writes a new password to the vault, then
restart the API pods so that they read it: `kubectl rollout restart deploy/api -n staging`.
"""
PROMPT = "how do I rotate the staging database password and get the API pods to pick it up?"
# Generous: the goal is 3 s (docs/daemon.md); a busy 2-core box with other agents is slower.
RESTART_BOUND_S = 20.0


def claude(**extra: str) -> dict[str, str]:
    """The hooks' extra environment: the ``home`` fixture's empty Claude Code folder (the
    hook's environment drops every PRECEDENTS_ variable), never the real ~/.claude."""
    return {"PRECEDENTS_CLAUDE_DIR": os.environ["PRECEDENTS_CLAUDE_DIR"], **extra}


def hook_log(home: Path) -> list[dict[str, Any]]:
    path = home / "logs" / "hook.log"
    if not path.exists():
        return []
    return [json.loads(line.split(": ", 1)[1]) for line in path.read_text().splitlines()]


def daemon_starts(home: Path) -> int:
    """How many daemon processes ran: each logs its pid when it listens or when it
    exits (one refused by its settings exits before it listens)."""
    path = home / "logs" / "daemon.log"
    if not path.exists():
        return 0
    text = path.read_text()
    return len(set(re.findall(r"daemon (\d+) (?:listening|exited) \(", text)))


def gone(pid: int) -> bool:
    """Whether ``pid`` is no longer a running process (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state == "Z"


def stop_by_pid_file(home: Path) -> None:
    """SIGTERM whatever daemon this test's hooks started (by its pid file), and wait."""
    pid_file = home / "run" / protocol.PID_NAME
    try:
        pid = int(pid_file.read_text())
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        return
    deadline = time.monotonic() + 30
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.fixture
def one_note(home: Path, tmp_path: Path, embedder: Any) -> Iterator[tuple[Path, Path]]:
    """(state folder, project): one note indexed with the real model; the daemon the
    test's hooks start is stopped after it."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / NOTE_NAME).write_text(NOTE, encoding="utf-8")
    build_index(home, embedder, project, notes, None)
    yield home, project
    stop_by_pid_file(home)


def answered(out: subprocess.CompletedProcess[bytes]) -> bool:
    return out.returncode == 0 and NOTE_NAME.encode() in out.stdout


@pytest.mark.slow
def test_a_killed_daemon_is_started_again_by_the_next_hook(one_note: tuple[Path, Path]) -> None:
    home, project = one_note
    run = home / "run"
    # The first prompt starts the daemon (the hook's own start) and waits for it.
    first = run_hook(
        home,
        prompt_json(PROMPT, project),
        cwd=project,
        budget_ms=None,
        env=claude(PRECEDENTS_FIRST_PROMPT_BUDGET_MS="120000"),
    )
    assert answered(first), first
    assert hook_log(home)[-1]["started_daemon"] is True
    # Ready: the daemon dated back the stamp the hook's start wrote.
    assert (run / protocol.SPAWN_STAMP).stat().st_mtime == 0
    pid = int((run / protocol.PID_NAME).read_text())

    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    while not gone(pid):
        assert time.monotonic() - killed < 10, "kill -9 did not end the daemon"
        time.sleep(0.01)
    # Prompts come as Claude Code sends them: the real budgets (300 ms warm, 8 s first).
    outcomes: list[dict[str, Any]] = []
    while True:
        out = run_hook(
            home, prompt_json(PROMPT, project), cwd=project, budget_ms=None, env=claude()
        )
        outcomes.append(hook_log(home)[-1])
        if answered(out):
            break
        assert time.monotonic() - killed < RESTART_BOUND_S, outcomes
    after = time.monotonic() - killed
    log = (home / "logs" / "daemon.log").read_text(encoding="utf-8")
    ready = log.rpartition(" ready: model ")[2].partition("\n")[0]
    print(f"\nkill -9 to the first hook with context: {after:.2f} s (the new daemon: {ready})")
    print(f"hooks after the kill: {outcomes}")
    assert after < RESTART_BOUND_S
    # The first hook after the kill started the new daemon: no minute's wait.
    assert outcomes[0]["started_daemon"] is True
    assert sum(o.get("started_daemon") is True for o in outcomes) == 1
    assert int((run / protocol.PID_NAME).read_text()) != pid
    assert daemon_starts(home) == 2


def test_a_daemon_that_never_gets_ready_is_not_started_on_every_message(
    home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    bad = claude(PRECEDENTS_MODEL="no-such-org/no-such-model")  # the daemon exits before ready
    outcomes = []
    for _ in range(6):
        out = run_hook(home, prompt_json(PROMPT, project), cwd=project, budget_ms=None, env=bad)
        assert out.returncode == 0 and out.stdout == b""
        outcomes.append(hook_log(home)[-1])
    log = home / "logs" / "daemon.log"
    deadline = time.monotonic() + 60
    while " exited " not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, "the daemon with a missing model did not exit"
        time.sleep(0.1)
    # One more message, with the doomed daemon gone: still within RESPAWN_S of its start.
    run_hook(home, prompt_json(PROMPT, project), cwd=project, budget_ms=None, env=bad)
    outcomes.append(hook_log(home)[-1])
    assert [o.get("started_daemon") is True for o in outcomes] == [True] + [False] * 6, outcomes
    assert daemon_starts(home) == 1
    stamp = home / "run" / protocol.SPAWN_STAMP
    assert time.time() - stamp.stat().st_mtime < starter.RESPAWN_S  # never dated back


def test_hooks_racing_on_a_dead_daemon_start_one(home: Path, tmp_path: Path) -> None:
    """A daemon that was ready, then killed: six hooks at once start one new daemon."""
    project = tmp_path / "project"
    project.mkdir()
    run = home / "run"
    run.mkdir(parents=True, mode=0o700)
    (run / protocol.PID_NAME).write_text("999999\n")  # what kill -9 leaves
    stamp = run / protocol.SPAWN_STAMP
    stamp.write_text("999999\n")
    os.utime(stamp, (0, 0))  # it had become ready
    procs = [
        subprocess.Popen(
            [sys.executable, "-I", "-S", str(LAUNCHER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=project,
            env=hook_env(home, **claude(PRECEDENTS_FIRST_PROMPT_BUDGET_MS="120000")),
        )
        for _ in range(6)
    ]
    try:
        for proc in procs:  # all of their input at once, as Claude Code writes it
            assert proc.stdin is not None
            proc.stdin.write(prompt_json(PROMPT, project))
            proc.stdin.close()
        for proc in procs:
            assert proc.stdout is not None and proc.stderr is not None
            assert proc.wait(180) == 0
            assert proc.stdout.read() == b"" and proc.stderr.read() == b""
        entries = hook_log(home)
        assert len(entries) == 6
        assert sum(e.get("started_daemon") is True for e in entries) == 1, entries
        # The others waited for it, and all got its answer (empty: nothing is indexed).
        assert {e["outcome"] for e in entries} == {"none"}, entries
        assert daemon_starts(home) == 1
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(30)
        stop_by_pid_file(home)


def test_a_caller_that_waited_for_the_starter_lock_starts_no_second_daemon(home: Path) -> None:
    """The race, made certain: a second caller that found the stamp dated back (the last
    daemon had been ready) but the lock held goes by what the holder did: no start."""
    import fcntl

    run = home / "run"
    run.mkdir(parents=True, mode=0o700)
    stamp = run / protocol.SPAWN_STAMP
    stamp.write_text("999999\n")
    os.utime(stamp, (0, 0))
    script = (
        "import sys; from precedents.query_daemon import starter; "
        "print('go', flush=True); print(starter.start_daemon(sys.argv[1]), flush=True)"
    )
    with open(run / starter.STARTER_LOCK, "w") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # another caller, starting one
        second = subprocess.Popen(
            [sys.executable, "-c", script, str(home)],
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(PACKAGE.parent)},
        )
        assert second.stdout is not None
        assert second.stdout.readline() == b"go\n"
        time.sleep(0.5)  # it asks for the lock now
        # What the holder's start leaves: a fresh stamp naming a live process (this one).
        stamp.write_text(f"{os.getpid()}\n")
    said = second.stdout.read()
    assert second.wait(30) == 0
    if said != b"False\n":  # it started one (the failure this test is for): stop it
        deadline = time.monotonic() + 30
        while not (run / protocol.PID_NAME).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        stop_by_pid_file(home)
    assert said == b"False\n"
    assert stamp.read_text() == f"{os.getpid()}\n"


def test_a_fresh_stamp_of_a_start_that_never_got_ready_holds_the_next_back(home: Path) -> None:
    """The starter itself: a start under RESPAWN_S ago that is not dated back starts none;
    dated back, the stamp holds nothing back (the daemon is started: then stopped here)."""
    run = home / "run"
    run.mkdir(parents=True, mode=0o700)
    stamp = run / protocol.SPAWN_STAMP
    stamp.write_text("999999\n")
    assert starter.start_daemon(str(home)) is False
    assert stamp.read_text() == "999999\n"  # untouched: no start was made
    starter.allow_respawn(str(home))
    try:
        assert starter.start_daemon(str(home)) is True
        assert stamp.read_text().strip() != "999999"  # the new start's pid
        assert starter.coming_up(str(run))
        assert starter.start_daemon(str(home)) is False  # one on its way up: no second
    finally:
        for child in starter.SPAWNED:
            child.terminate()  # type: ignore[attr-defined]
            child.wait(30)  # type: ignore[attr-defined]
        starter.SPAWNED.clear()


def test_nothing_on_the_daemons_side_imports_the_hook() -> None:
    """The hook is one of the daemon's clients: query_daemon reads none of its code."""
    offenders = []
    for path in sorted((PACKAGE / "query_daemon").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                # A relative import resolved from precedents.query_daemon (`from .. import hook`).
                anchor = ["precedents", "query_daemon"][: 3 - node.level]
                base = ".".join([*anchor, node.module] if node.module else anchor)
                base = base if node.level else node.module or ""
                names = [base, *(f"{base}.{a.name}" for a in node.names)]
            else:
                continue
            if any(n == "precedents.hook" or n.startswith("precedents.hook.") for n in names):
                offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == []
    assert (PACKAGE / "query_daemon" / "starter.py").is_file()
    assert not (PACKAGE / "hook" / "spawn.py").exists()
