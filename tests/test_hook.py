"""The hook as Claude Code runs it: a real subprocess (`python -I -S launch.py`), a real socket."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from precedents import protocol

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import (  # noqa: E402 - after the rewrite registration
    RELATED,
    RELATED_HEADLINE,
    RELATED_NOTE,
    UNRELATED,
    DevState,
    prompt_json,
    run_hook,
)

# The session index of the dev notes and the daemon over it (shared with the other modules).
pytest_plugins = ["tests.conftest_daemon"]

HEAVY = (
    "torch",
    "sentence_transformers",
    "lancedb",
    "pyarrow",
    "pydantic",
    "numpy",
    "typer",
    "logging",
    "subprocess",
)


def hook_log(home: Path) -> list[dict[str, Any]]:
    path = home / "logs" / "hook.log"
    if not path.exists():
        return []
    return [json.loads(line.split(": ", 1)[1]) for line in path.read_text().splitlines()]


def assert_silent(proc: subprocess.CompletedProcess[bytes]) -> None:
    assert proc.returncode == 0
    assert proc.stdout == b""


def test_import_is_light() -> None:
    code = (
        "import sys, json; import precedents.hook.core; "
        f"print(json.dumps(sorted(m for m in {list(HEAVY)!r} if m in sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert json.loads(out.stdout) == []


def test_hook_imports_only_c_level_stdlib_under_the_launcher() -> None:
    # The slow pure-Python layers (json's re, socket's enum, typing, pathlib) stay out.
    src = str(Path(__file__).resolve().parents[1] / "src")
    code = (
        f"import sys; sys.path.insert(0, {src!r}); import precedents.hook.core; "
        "print(sorted(sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True
    ).stdout
    loaded = set(eval(out))  # a printed list of names
    assert not loaded & {"json", "socket", "re", "enum", "typing", "pathlib", *HEAVY}


def test_codec_matches_json() -> None:
    samples: list[Any] = [
        {"a": '日本語 ⚠️ "quoted" \\ \n\t\x01', "n": 1, "f": 0.25, "t": True, "z": None},
        ["x", 1, [2.5, {"k": False}]],
        "",
        0,
        -3.0,
    ]
    for value in samples:
        assert protocol.dumps(value) == json.dumps(value, ensure_ascii=False)
        assert protocol.loads(json.dumps(value)) == value
    context = "Possibly related\nnote  x — 説明 (path)"
    assert protocol.hook_output(context) == json.dumps(
        {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": context}},
        ensure_ascii=False,
    )
    for bad in ("", "{", "[1,]", "{} x", "nul"):
        with pytest.raises(ValueError):
            protocol.loads(bad)


def test_launcher_runs_with_no_site_packages(tmp_path: Path) -> None:
    # -I -S: only the standard library and our package, found by the launcher itself.
    proc = run_hook(tmp_path / "state", b"{}")
    assert_silent(proc)
    assert proc.stderr == b""


@pytest.mark.slow
def test_related_prompt_injects_the_right_note(dev_state: DevState, dev_daemon: Any) -> None:
    proc = run_hook(dev_state.home, prompt_json(RELATED, dev_state.project), cwd=dev_state.project)
    assert proc.returncode == 0 and proc.stderr == b""
    assert proc.stdout.endswith(b"\n") and proc.stdout.count(b"\n") == 1
    out = json.loads(proc.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    lines = out["hookSpecificOutput"]["additionalContext"].split("\n")
    assert lines[0] == protocol.HEADER
    assert lines[1].startswith(RELATED_HEADLINE) and RELATED_NOTE in lines[1]
    assert len(proc.stdout) <= 2048


@pytest.mark.slow
def test_unrelated_prompt_injects_nothing(dev_state: DevState, dev_daemon: Any) -> None:
    proc = run_hook(dev_state.home, prompt_json(UNRELATED, dev_state.project))
    assert_silent(proc)
    assert hook_log(dev_state.home)[-1]["outcome"] == "none"


@pytest.mark.slow
def test_short_prompt_is_not_sent(dev_state: DevState, dev_daemon: Any) -> None:
    proc = run_hook(dev_state.home, prompt_json("stash", dev_state.project))
    assert_silent(proc)
    assert hook_log(dev_state.home)[-1]["outcome"] == "short"


@pytest.mark.slow
def test_session_start_mode(dev_state: DevState, dev_daemon: Any) -> None:
    stdin = json.dumps(
        {
            "session_id": "s",
            "cwd": str(dev_state.project),
            "hook_event_name": "SessionStart",
            "source": "startup",
        }
    ).encode()
    proc = run_hook(dev_state.home, stdin, "session")
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    assert "Keep user login sessions in Redis" in out["additionalContext"]
    assert "MySQL" not in out["additionalContext"]


@pytest.mark.slow
def test_prompt_text_is_never_written(dev_state: DevState, dev_daemon: Any) -> None:
    marker = "zebra-quokka-7731 how do I shelve brand-new untracked files in git stash?"
    run_hook(dev_state.home, prompt_json(marker, dev_state.project))
    for path in dev_state.home.rglob("*"):
        if path.is_file() and path.suffix in (".log", ".pid", ".json", ".txt", ""):
            assert b"zebra-quokka" not in path.read_bytes(), path


BAD_STDIN = {
    "empty": b"",
    "malformed": b"{not json",
    "binary": b"\xff\xfe\x00\x01\x80",
    "deeply nested array": b"[" * 100_000,
    "deeply nested object": b'{"a": ' * 100_000,
    "deep inside a good object": b'{"prompt": "how do I shelve untracked files?", "x": '
    + b"[" * 100_000
    + b"]" * 100_000
    + b"}",
    "non-object": b"[1, 2]",
    "prompt not a string": b'{"prompt": 42}',
    "missing prompt": b'{"cwd": "/tmp", "hook_event_name": "UserPromptSubmit"}',
}


@pytest.mark.parametrize("stdin", BAD_STDIN.values(), ids=BAD_STDIN.keys())
def test_bad_stdin_gives_nothing(tmp_path: Path, stdin: bytes) -> None:
    home = tmp_path / "state"
    proc = run_hook(home, stdin)
    assert_silent(proc)
    assert [e["outcome"] for e in hook_log(home)] == ["bad-input"]  # exactly one line
    assert b"shelve" not in (home / "logs" / "hook.log").read_bytes()
    assert not (home / "run").exists()  # nothing was asked, nothing started


def test_lone_surrogates_are_answered_and_logged_once(
    home: Path, tmp_path: Path, fake_daemon: Any
) -> None:
    # Valid JSON (Node escapes a lone surrogate so): a pasted half of an emoji.
    stdin = (
        b'{"hook_event_name": "UserPromptSubmit", "cwd": "/x/\\udcff\\ud800", '
        b'"prompt": "zebra-quokka \\ud83d how do I shelve untracked files?"}'
    )
    data = json.loads(stdin)
    assert "\ud800" in data["cwd"] and "\ud83d" in data["prompt"]
    proc = run_hook(home, stdin)
    assert proc.returncode == 0 and proc.stderr == b""
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    # The daemon got the whole prompt (the surrogate replaced), and a cwd.
    assert context.startswith(f"ctx {len(data['prompt'])} /x/")
    assert [e["outcome"] for e in hook_log(home)] == ["injected"]
    assert b"zebra" not in (home / "logs" / "hook.log").read_bytes()


def test_an_unexpected_failure_is_logged_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from precedents.hook import core as hook

    home = tmp_path / "state"
    monkeypatch.setenv("PRECEDENTS_HOME", str(home))

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("zebra-quokka: a bug")

    monkeypatch.setattr(hook.DaemonClient, "hook", broken)
    assert hook.run([], prompt_json("how do I shelve untracked files?", tmp_path)) is None
    assert [(e["outcome"], e["error"]) for e in hook_log(home)] == [("error", "RuntimeError")]
    assert b"zebra" not in (home / "logs" / "hook.log").read_bytes()


def test_a_huge_prompt_is_clipped_by_the_hook(home: Path, tmp_path: Path, fake_daemon: Any) -> None:
    huge = "how do I shelve untracked files? " + "stash " * 900_000  # 5.4 MB
    proc = run_hook(home, prompt_json(huge, tmp_path))
    assert proc.returncode == 0 and proc.stderr == b""
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    received = int(context.split()[1])  # FakeRecall answers "ctx <characters received> <cwd>"
    assert 0 < received <= protocol.MAX_PROMPT_CHARS
    assert [e["outcome"] for e in hook_log(home)] == ["injected"]


@pytest.mark.slow
def test_a_huge_prompt_costs_no_more_than_a_normal_one(
    dev_state: DevState, dev_daemon: Any
) -> None:
    from tests.conftest_daemon import daemon_answers

    filler = " ".join(f"word{i % 997}" for i in range(700_000))  # ~6 MB

    def embed_ms(prompt: str) -> dict[str, Any]:
        proc = run_hook(dev_state.home, prompt_json(prompt, dev_state.project))
        assert proc.returncode == 0 and proc.stderr == b""
        assert hook_log(dev_state.home)[-1]["outcome"] in ("injected", "none")
        return daemon_answers(dev_state.home)[-1]

    # A normal prompt that already fills the model's 256 tokens; the best of three of
    # each, so that a moment of a busy machine does not decide the ratio (issue #21).
    normal = min((embed_ms(RELATED + " " + filler[:1500]) for _ in range(3)), key=_embed)
    huge = min((embed_ms(RELATED + " " + filler) for _ in range(3)), key=_embed)
    assert huge["chars"] <= protocol.MAX_PROMPT_CHARS  # what the daemon received
    assert _embed(huge) < 10 * _embed(normal), (huge, normal)


def _embed(answer: dict[str, Any]) -> float:
    return float(answer["ms"]["embed"])


def test_daemon_that_hangs_past_the_budget(tmp_path: Path) -> None:
    home = tmp_path / "state"
    run = home / "run"
    run.mkdir(parents=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(run / protocol.SOCKET_NAME))
    server.listen(5)
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(server.accept()[0]), daemon=True).start()
    try:
        started = time.monotonic()
        proc = run_hook(home, prompt_json(RELATED, tmp_path), budget_ms=None)
        elapsed = time.monotonic() - started
    finally:
        server.close()
    assert_silent(proc)
    assert hook_log(home)[-1]["outcome"] == "timeout"
    assert held, "the hook did connect"
    # Its own clock says it gave up at the 300 ms budget (a generous margin for a busy
    # machine); the whole process, interpreter start included, ended too.
    assert hook_log(home)[-1]["ms"] < 300 + 1000
    assert elapsed < 15.0


GARBAGE_ANSWERS = {
    "not json": b"garbage\n",
    "binary": b"\xff\xfe\x00\n",
    "not an object": b"[1, 2]\n",
    "context not a string": b'{"v": 1, "ok": true, "context": 42}\n',
    "context with a lone surrogate": b'{"v": 1, "ok": true, "context": "x \\ud800"}\n',
    "deeply nested": b"[" * 100_000 + b"\n",
    "no newline, then closed": b'{"v": 1, "ok": true, "context": "half',
    "closed at once": b"",
}


@pytest.mark.parametrize("reply", GARBAGE_ANSWERS.values(), ids=GARBAGE_ANSWERS.keys())
def test_a_daemon_speaking_garbage(tmp_path: Path, reply: bytes) -> None:
    home = tmp_path / "state"
    run = home / "run"
    run.mkdir(parents=True)
    (run / "daemon.spawned").touch()  # a daemon was just started: start no other one
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(run / protocol.SOCKET_NAME))
    server.listen(5)

    def serve() -> None:
        conn = server.accept()[0]
        with conn:
            conn.recv(65536)
            conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        proc = run_hook(home, prompt_json(RELATED, tmp_path))
    finally:
        thread.join(5)
        server.close()
    assert_silent(proc)
    assert proc.stderr == b""
    assert [e["outcome"] for e in hook_log(home)] in (["down"], ["error"], ["none"])


def test_a_killed_daemon_leaves_a_socket_nobody_listens_on(tmp_path: Path) -> None:
    home = tmp_path / "state"
    run = home / "run"
    run.mkdir(parents=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(run / protocol.SOCKET_NAME))
    dead.close()  # what `kill -9` leaves: the file, nobody behind it
    (run / protocol.PID_NAME).write_text("999999\n")
    (run / "daemon.spawned").touch()  # one was just started: this test starts none
    started = time.monotonic()
    proc = run_hook(home, prompt_json(RELATED, tmp_path), budget_ms=None)
    assert_silent(proc)
    assert time.monotonic() - started < 15  # no wait for a daemon that is not coming
    assert hook_log(home) == [{**hook_log(home)[0], "outcome": "down", "started_daemon": False}]


def test_daemon_down_starts_it(tmp_path: Path) -> None:
    home = tmp_path / "state"
    # The first-prompt budget raised: what is tested is that it waits, not how long.
    wait = {"PRECEDENTS_FIRST_PROMPT_BUDGET_MS": "120000"}
    proc = run_hook(home, prompt_json(RELATED, tmp_path), budget_ms=None, env=wait)
    assert_silent(proc)
    entry = hook_log(home)[-1]
    # Started, and waited for (issue #21): the answer came, empty as nothing is indexed.
    assert entry["started_daemon"] is True and entry["waited"] is True
    assert entry["outcome"] == "none", entry
    pid_file = home / "run" / protocol.PID_NAME
    deadline = time.monotonic() + 60
    while not pid_file.exists():
        assert time.monotonic() < deadline, "the daemon was not started"
        time.sleep(0.05)
    pid = int(pid_file.read_text())
    try:
        os.kill(pid, 0)  # alive, detached from the hook that started it
        # A second hook while it starts must not start another one.
        proc = run_hook(home, prompt_json(RELATED, tmp_path), budget_ms=None)
        assert_silent(proc)
        assert hook_log(home)[-1].get("started_daemon") in (False, None)
    finally:
        os.kill(pid, 15)
    deadline = time.monotonic() + 30
    while pid_file.exists():
        assert time.monotonic() < deadline, "the daemon did not clean up"
        time.sleep(0.05)


def test_a_daemon_that_cannot_start_is_not_restarted_on_every_message(tmp_path: Path) -> None:
    home = tmp_path / "state"
    env = {"PRECEDENTS_MODEL": "no-such-org/no-such-model"}  # the daemon will exit at once
    first = run_hook(home, prompt_json(RELATED, tmp_path), budget_ms=None, env=env)
    assert_silent(first)
    assert hook_log(home)[-1]["started_daemon"] is True
    for _ in range(3):
        again = run_hook(home, prompt_json(RELATED, tmp_path), budget_ms=None, env=env)
        assert_silent(again)
        # "starting" while the doomed daemon loads, "down" once it is gone: never a new one.
        assert hook_log(home)[-1].get("started_daemon") in (False, None)
    daemon_log = home / "logs" / "daemon.log"
    deadline = time.monotonic() + 60
    while not daemon_log.exists() or " exited " not in daemon_log.read_text():
        assert time.monotonic() < deadline, "the daemon with a missing model did not exit"
        time.sleep(0.1)
    again = run_hook(home, prompt_json(RELATED, tmp_path), budget_ms=None, env=env)
    assert hook_log(home)[-1] == {**hook_log(home)[-1], "outcome": "down", "started_daemon": False}
    stamp = home / "run" / "daemon.spawned"
    os.utime(stamp, (time.time() - 120, time.time() - 120))  # a minute later: one more try
    later = run_hook(home, prompt_json(RELATED, tmp_path), budget_ms=None, env=env)
    assert_silent(later)
    assert hook_log(home)[-1]["started_daemon"] is True


def test_hook_main_always_exits_zero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from precedents.hook import core as hook

    monkeypatch.setenv("PRECEDENTS_HOME", str(tmp_path / "state"))
    assert hook.run([], prompt_json("hi", tmp_path)) is None
    monkeypatch.setattr(hook, "run", lambda *a: 1 / 0)  # even a bug in the hook
    monkeypatch.setattr(sys, "stdin", None)
    assert hook.main([]) == 0


def test_state_dir_matches_config() -> None:
    from precedents.config import state_dir

    saved = os.environ.pop("PRECEDENTS_HOME", None)
    try:  # one definition (protocol's) serves both; this guards a second one creeping back
        assert Path(protocol.default_home()) == state_dir(create=False)
    finally:
        if saved is not None:
            os.environ["PRECEDENTS_HOME"] = saved
