"""The first prompt of a session gets its context (issue #21, item 2).

A prompt that comes while the daemon is starting (down and started by this
hook, or still loading its model) waits for it within the first-prompt
budget, not the 300 ms of a warm daemon; SessionStart starts and warms the
daemon. Real parts: the hook as Claude Code runs it, real daemons (a fake
recall that loads slowly, and the real model over the dev notes).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from precedents import protocol
from precedents.hook.core import STARTING_MARK

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import (  # noqa: E402 - after the rewrite registration
    RELATED,
    RELATED_NOTE,
    REPO,
    DevState,
    copy_state,
    daemon_answers,
    hook_env,
    prompt_json,
    run_hook,
    stop_daemon,
)

pytest_plugins = ["tests.conftest_daemon"]

# Generous: these tests check what happens, not how fast (a busy CI box is slow).
LONG_MS = "120000"


def hook_log(home: Path) -> list[dict[str, Any]]:
    path = home / "logs" / "hook.log"
    if not path.exists():
        return []
    return [json.loads(line.split(": ", 1)[1]) for line in path.read_text().splitlines()]


def session_json(cwd: Path, session: str = "s-first") -> bytes:
    return json.dumps(
        {
            "session_id": session,
            "cwd": str(cwd),
            "hook_event_name": "SessionStart",
            "source": "startup",
        }
    ).encode()


def slow_daemon(home: Path, load_s: float, fail: bool = False) -> subprocess.Popen[bytes]:
    """A daemon process whose recall takes ``load_s`` to load (then answers as
    :class:`~tests.conftest_daemon.FakeRecall`, or fails to load when ``fail``);
    returns once its socket is bound."""
    script = """
import sys, time
from pathlib import Path
from tests.conftest_daemon import FakeRecall, settings_for
from precedents.errors import ModelError
from precedents.query_daemon.server import Daemon, configure_logging

def load(_):
    time.sleep(float(sys.argv[2]))
    if sys.argv[3] == "1":
        raise ModelError("no such model")
    return FakeRecall()

s = settings_for(Path(sys.argv[1]))
configure_logging(s)
Daemon(s, recall_factory=load).serve()
"""
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(home), str(load_s), "1" if fail else "0"],
        cwd=REPO,
        env=hook_env(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not (home / "run" / protocol.SOCKET_NAME).exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_daemon(proc)
            raise AssertionError("the slow daemon did not bind its socket")
        time.sleep(0.02)
    return proc


def ready(home: Path) -> bool:
    return bool(protocol.ask({"op": "ping"}, 10.0, home / "run").get("ready"))


def test_a_prompt_while_the_daemon_loads_waits_for_it(home: Path, tmp_path: Path) -> None:
    proc = slow_daemon(home, load_s=3.0)
    try:
        assert not ready(home)  # still loading when the prompt comes
        assert (home / "run" / STARTING_MARK).exists()
        out = run_hook(
            home,
            prompt_json(RELATED, tmp_path),
            budget_ms=None,  # the warm budget is the real 300 ms...
            env={"PRECEDENTS_FIRST_PROMPT_BUDGET_MS": LONG_MS},  # ...this one is waited
        )
        assert out.returncode == 0
        answer = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
        assert answer == f"ctx {len(RELATED)} {tmp_path}"
        entry = hook_log(home)[-1]
        assert entry["outcome"] == "injected" and entry["waited"] is True
        assert "started_daemon" not in entry  # it was up, only not loaded
        assert not (home / "run" / STARTING_MARK).exists()  # gone once loaded
        # The daemon answered the very request (same id), once loaded: no second ask.
        assert [a.get("rid") for a in daemon_answers(home) if a["op"] == "context"] == [
            entry["rid"]
        ]
    finally:
        stop_daemon(proc)
    assert not (home / "run" / STARTING_MARK).exists()


def test_the_first_prompt_budget_bounds_the_wait(home: Path, tmp_path: Path) -> None:
    proc = slow_daemon(home, load_s=600.0)
    try:
        started = time.monotonic()
        out = run_hook(
            home,
            prompt_json(RELATED, tmp_path),
            budget_ms=None,
            env={"PRECEDENTS_FIRST_PROMPT_BUDGET_MS": "1000"},
        )
        elapsed = time.monotonic() - started
        assert out.returncode == 0 and out.stdout == b""
        entry = hook_log(home)[-1]
        # What happened, said: the daemon was still starting when the budget ran out.
        assert entry["outcome"] == "starting" and entry["waited"] is True
        assert elapsed < 1.0 + 10  # the budget, plus interpreter start on a busy machine
        [said] = [a for a in daemon_answers(home) if a.get("rid") == entry["rid"]]
        assert said["reason"] == "starting" and said["project"] == str(tmp_path)
    finally:
        stop_daemon(proc)


def test_a_daemon_that_fails_to_load_lets_the_waiting_hook_go(home: Path, tmp_path: Path) -> None:
    proc = slow_daemon(home, load_s=1.0, fail=True)
    try:
        started = time.monotonic()
        out = run_hook(
            home,
            prompt_json(RELATED, tmp_path),
            budget_ms=None,
            env={"PRECEDENTS_FIRST_PROMPT_BUDGET_MS": LONG_MS},
        )
        assert out.returncode == 0 and out.stdout == b""
        assert time.monotonic() - started < 60  # not the 120 s budget: the load ended
        entry = hook_log(home)[-1]
        assert entry["waited"] is True
        assert entry["outcome"] in ("error", "down"), entry  # "stopping", or already gone
        assert proc.wait(30) == 0 or proc.returncode is not None
    finally:
        stop_daemon(proc)


def test_no_wait_when_nothing_is_starting(tmp_path: Path) -> None:
    """A stale socket, a dead pid and a spawn stamp a minute old: down, at once."""
    home = tmp_path / "state"
    run = home / "run"
    run.mkdir(parents=True)
    (run / protocol.PID_NAME).write_text("999999\n")
    stamp = run / "daemon.spawned"
    stamp.write_text("999999\n")  # the pid of the daemon it started, long gone
    (run / STARTING_MARK).touch()  # left by a daemon killed while it loaded
    os.utime(stamp, (time.time() - 30, time.time() - 30))  # too recent to start another
    started = time.monotonic()
    out = run_hook(home, prompt_json(RELATED, tmp_path), budget_ms=None)
    assert out.returncode == 0 and out.stdout == b""
    assert time.monotonic() - started < 8  # no first-prompt wait for a daemon that is not there
    entry = hook_log(home)[-1]
    assert entry["outcome"] == "down" and entry["started_daemon"] is False


def test_first_budget_resolves_env_then_argument_then_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from precedents.hook import core as hook

    monkeypatch.delenv("PRECEDENTS_FIRST_PROMPT_BUDGET_MS", raising=False)
    assert hook._first_budget(None, 0.3) == hook.FIRST_BUDGET_MS / 1000
    assert hook._first_budget(2500, 0.3) == 2.5
    assert hook._first_budget(100, 0.3) == 0.3  # never below the warm budget
    monkeypatch.setenv("PRECEDENTS_FIRST_PROMPT_BUDGET_MS", "4000")
    assert hook._first_budget(2500, 0.3) == 4.0
    monkeypatch.setenv("PRECEDENTS_FIRST_PROMPT_BUDGET_MS", "soon")
    assert hook._first_budget(2500, 0.3) == hook.FIRST_BUDGET_MS / 1000
    assert hook._parse_args(["prompt", "--first-budget-ms", "900", "--budget-ms", "x"]) == (
        "prompt",
        None,
        900.0,
    )


def test_install_hook_sets_claude_codes_timeout_above_the_first_budget(tmp_path: Path) -> None:
    from precedents.hook.core import FIRST_BUDGET_MS
    from precedents.hook.install import hook_timeout, install

    assert hook_timeout() * 1000 > FIRST_BUDGET_MS
    path = tmp_path / "settings.json"
    install(path, python=sys.executable, exec_form=True, first_budget_ms=20000)
    hooks = json.loads(path.read_text())["hooks"]
    for event in ("UserPromptSubmit", "SessionStart", "PreToolUse"):
        [entry] = hooks[event][0]["hooks"]
        assert entry["args"][-2:] == ["--first-budget-ms", "20000"]
        assert entry["timeout"] > 20
    plugin = json.loads((REPO / "plugin" / "hooks" / "hooks.json").read_text())["hooks"]
    for groups in plugin.values():
        assert groups[0]["hooks"][0]["timeout"] * 1000 > FIRST_BUDGET_MS


# -- the real model ------------------------------------------------------------------------


@pytest.fixture
def cold_home(dev_state: DevState, tmp_path: Path) -> Iterator[Path]:
    """A copy of the dev notes' state with no daemon; whatever daemon a test's hook
    starts is stopped after it."""
    home = copy_state(dev_state, tmp_path)
    yield home
    pid_file = home / "run" / protocol.PID_NAME
    if pid_file.exists():
        try:
            os.kill(int(pid_file.read_text()), signal.SIGTERM)
        except (OSError, ValueError):
            return
        deadline = time.monotonic() + 30
        while pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)


@pytest.mark.slow
def test_the_first_prompt_after_a_cold_start_gets_its_context(
    dev_state: DevState, cold_home: Path
) -> None:
    out = run_hook(
        cold_home,
        prompt_json(RELATED, dev_state.project),
        cwd=dev_state.project,
        budget_ms=None,
        env={"PRECEDENTS_FIRST_PROMPT_BUDGET_MS": LONG_MS},
    )
    assert out.returncode == 0
    assert RELATED_NOTE in out.stdout.decode()
    entry = hook_log(cold_home)[-1]
    assert entry["outcome"] == "injected"
    assert entry["started_daemon"] is True and entry["waited"] is True


@pytest.mark.slow
def test_session_start_starts_and_warms_the_daemon(dev_state: DevState, cold_home: Path) -> None:
    first = run_hook(
        cold_home,
        session_json(dev_state.project),
        "session",
        cwd=dev_state.project,
        budget_ms=None,
        env={"PRECEDENTS_FIRST_PROMPT_BUDGET_MS": LONG_MS},
    )
    out = json.loads(first.stdout)["hookSpecificOutput"]
    assert "Keep user login sessions in Redis" in out["additionalContext"]  # a live ADR
    entry = hook_log(cold_home)[-1]
    assert entry["event"] == "session" and entry["outcome"] == "injected"
    assert entry["started_daemon"] is True
    # The prompt that follows finds it warm: answered, not waited for.
    prompt = run_hook(cold_home, prompt_json(RELATED, dev_state.project), cwd=dev_state.project)
    assert RELATED_NOTE in prompt.stdout.decode()
    entry = hook_log(cold_home)[-1]
    assert entry["outcome"] == "injected" and "waited" not in entry
