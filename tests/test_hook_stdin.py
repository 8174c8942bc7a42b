"""The hook reads stdin within its budget (issue #20, item 3).

Real hook processes (``python -I -S launch.py``, as Claude Code runs them)
whose stdin is a pipe the test never closes: before, the hook waited for ever.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import (  # noqa: E402 - after the rewrite registration
    LAUNCHER,
    RELATED,
    hook_env,
    prompt_json,
    start_fake_daemon,
    stop_daemon,
)

BUDGET_MS = 300
# Generous: Python's start on a busy 2-core box can take a second on its own.
EXIT_WITHIN_S = 5.0


def log_lines(home: Path) -> list[dict[str, Any]]:
    path = home / "logs" / "hook.log"
    if not path.exists():
        return []
    return [
        json.loads(line.split("precedents.hook: ", 1)[1]) for line in path.read_text().splitlines()
    ]


def hook_with_open_stdin(
    home: Path, written: bytes, *args: str, budget_ms: int = BUDGET_MS
) -> tuple[int, bytes, float]:
    """Run the hook, write ``written`` to its stdin and never close it; (exit code, stdout, s)."""
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", str(LAUNCHER), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=hook_env(home, PRECEDENTS_HOOK_BUDGET_MS=str(budget_ms)),
    )
    started = time.monotonic()
    assert proc.stdin is not None and proc.stdout is not None
    try:
        if written:
            proc.stdin.write(written)
            proc.stdin.flush()
        try:
            code = proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
            raise AssertionError("the hook waited on an open stdin for 30 s") from None
        elapsed = time.monotonic() - started
        return code, proc.stdout.read(), elapsed
    finally:
        proc.stdin.close()
        proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.mark.parametrize(
    "written",
    [b"", b'{"session_id": "s", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit", "pro'],
    ids=["nothing", "half-an-object"],
)
def test_a_stdin_never_closed_ends_at_the_budget(home: Path, written: bytes) -> None:
    code, out, elapsed = hook_with_open_stdin(home, written, "prompt")
    assert (code, out) == (0, b"")
    assert elapsed < EXIT_WITHIN_S, elapsed
    assert [line["outcome"] for line in log_lines(home)] == ["stdin-timeout"]
    assert not (home / "run" / "daemon.spawned").exists()  # nothing was asked or started


def test_a_whole_object_on_a_stdin_left_open_is_answered(home: Path, tmp_path: Path) -> None:
    # A long budget: the daemon's first answer may be slow here; stdin must not wait for it.
    budget_ms = 30_000
    daemon = start_fake_daemon(home)
    try:
        code, out, elapsed = hook_with_open_stdin(
            home, prompt_json(RELATED, tmp_path), "prompt", budget_ms=budget_ms
        )
    finally:
        stop_daemon(daemon)
    assert code == 0 and elapsed < budget_ms / 1000 / 2, elapsed
    assert out, log_lines(home)
    answer = json.loads(out)["hookSpecificOutput"]
    assert answer["additionalContext"] == f"ctx {len(RELATED)} {tmp_path}"
    assert [line["outcome"] for line in log_lines(home)] == ["injected"]


def test_the_session_hook_gets_its_own_budget_for_stdin_too(home: Path) -> None:
    code, out, elapsed = hook_with_open_stdin(home, b"{", "session")
    assert (code, out) == (0, b"") and elapsed < EXIT_WITHIN_S + 1
    assert [line["outcome"] for line in log_lines(home)] == ["stdin-timeout"]


def test_stdin_over_the_cap_is_not_read_on(monkeypatch: pytest.MonkeyPatch) -> None:
    from precedents.hook import core as hook

    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb") as reader, os.fdopen(write_end, "wb") as writer:
        writer.write(b"[" * 5000)  # never an object, never closed
        writer.flush()
        monkeypatch.setattr(hook, "MAX_STDIN_BYTES", 4096)
        monkeypatch.setattr(sys, "stdin", type("S", (), {"fileno": reader.fileno})())
        data, why = hook.read_stdin(time.perf_counter() + 5)
        assert (data, why) == (b"", "bad-input")
