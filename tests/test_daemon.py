"""The query daemon: lifecycle, protocol, transports, and real answers over a real socket."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from precedents import protocol
from precedents.query_daemon.server import Daemon, DaemonRunning
from precedents.recall.core import Answer, Recall

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import (  # noqa: E402 - after the rewrite registration
    ADR_PROMPT,
    RELATED,
    RELATED_HEADLINE,
    RELATED_NOTE,
    DevState,
    build_index,
    hook_env,
    settings_for,
    start_daemon,
    stop_daemon,
)

# The session index of the dev notes and the daemon over it (shared with the other modules).
pytest_plugins = ["tests.conftest_daemon"]


class FakeRecall:
    """Answers without a model: for lifecycle and protocol tests."""

    embedder = type("E", (), {"model_id": "fake"})()

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.calls = 0

    def context(self, text: str, cwd: str) -> Answer:
        self.calls += 1
        time.sleep(self.delay)
        return Answer(f"ctx {len(text)} {cwd}")

    def session_context(self, cwd: str) -> str:
        return f"session {cwd}"

    def refresh(self) -> bool:
        return False

    def close(self) -> None:
        pass


def run_in_thread(daemon: Daemon) -> tuple[threading.Thread, list[Any]]:
    ready = threading.Event()
    result: list[Any] = []

    def target() -> None:
        try:
            result.append(daemon.serve(ready))
        except BaseException as exc:  # handed to the test
            result.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    assert ready.wait(10), result
    deadline = time.monotonic() + 10
    while daemon.recall is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return thread, result


@pytest.fixture
def fake_daemon(home: Path) -> Iterator[Daemon]:
    daemon = Daemon(settings_for(home), recall_factory=lambda s: FakeRecall())
    thread, _ = run_in_thread(daemon)
    yield daemon
    daemon.stop()
    thread.join(10)


def ask(home: Path, request: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return protocol.ask(request, 5.0, home / "run", **kw)


# -- lifecycle -------------------------------------------------------------------------


def test_private_folder_socket_and_pid(home: Path, fake_daemon: Daemon) -> None:
    run = home / "run"
    assert stat.S_IMODE(run.stat().st_mode) == 0o700
    assert stat.S_ISSOCK((run / protocol.SOCKET_NAME).stat().st_mode)
    assert stat.S_IMODE((run / protocol.SOCKET_NAME).stat().st_mode) == 0o600
    assert (run / protocol.PID_NAME).read_text().strip() == str(os.getpid())
    answer = ask(home, {"op": "ping"})
    assert answer["ok"] and answer["ready"] and answer["v"] == protocol.PROTOCOL_VERSION


def test_refuses_to_start_twice(home: Path, fake_daemon: Daemon) -> None:
    second = Daemon(settings_for(home), recall_factory=lambda s: FakeRecall())
    with pytest.raises(DaemonRunning, match=r"already running .*pid"):
        second.serve()
    # The refused one removed nothing of the running one.
    assert ask(home, {"op": "ping"})["ok"]


def test_refuses_to_start_twice_as_processes(home: Path, fake_daemon: Daemon) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "precedents.query_daemon"],
        env=hook_env(home),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0  # a racing hook's start is not an error
    assert ask(home, {"op": "ping"})["pid"] == os.getpid()


def test_recovers_from_a_stale_socket_and_pid(home: Path) -> None:
    run = home / "run"
    run.mkdir(parents=True)
    crashed = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    crashed.bind(str(run / protocol.SOCKET_NAME))
    crashed.close()  # what a killed daemon leaves: a socket file nobody listens on
    (run / protocol.PID_NAME).write_text("999999\n")
    daemon = Daemon(settings_for(home), recall_factory=lambda s: FakeRecall())
    thread, _ = run_in_thread(daemon)
    try:
        assert ask(home, {"op": "ping"})["pid"] == os.getpid()
    finally:
        daemon.stop()
        thread.join(10)


def test_idle_timeout_exits_and_cleans_up(home: Path) -> None:
    daemon = Daemon(settings_for(home), idle_timeout_s=1.0, recall_factory=lambda s: FakeRecall())
    thread, result = run_in_thread(daemon)
    thread.join(10)
    assert not thread.is_alive()
    assert result and str(result[0]).startswith("idle")
    assert sorted(p.name for p in (home / "run").iterdir()) == [f"{protocol.DAEMON_ROLE}.lock"]


def test_a_question_resets_the_idle_clock(home: Path) -> None:
    daemon = Daemon(settings_for(home), idle_timeout_s=1.5, recall_factory=lambda s: FakeRecall())
    thread, _ = run_in_thread(daemon)
    for _ in range(4):
        time.sleep(0.6)
        assert ask(home, {"op": "context", "prompt": "a question", "cwd": "/x"})["ok"]
    assert thread.is_alive()  # 2.4 s in, but never 1.5 s without a question
    thread.join(10)
    assert not thread.is_alive()


def test_sigterm_removes_socket_and_pid(home: Path) -> None:
    script = (
        "import sys; from tests.test_daemon import FakeRecall; "
        "from tests.conftest_daemon import settings_for; from pathlib import Path; "
        "from precedents.query_daemon.server import Daemon; "
        "Daemon(settings_for(Path(sys.argv[1])), recall_factory=lambda s: FakeRecall()).serve()"
    )
    repo = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(home)],
        cwd=repo,
        env=hook_env(home),
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while not (home / "run" / protocol.SOCKET_NAME).exists():
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr
        time.sleep(0.05)
    assert stop_daemon(proc) == 0
    assert not (home / "run" / protocol.SOCKET_NAME).exists()
    assert not (home / "run" / protocol.PID_NAME).exists()


# -- protocol ----------------------------------------------------------------------------


def test_protocol_errors_are_answers(home: Path, fake_daemon: Daemon) -> None:
    assert ask(home, {"op": "nope"})["ok"] is False
    assert ask(home, {"op": "context", "cwd": "/x"})["error"] == "prompt missing"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        s.connect(str(home / "run" / protocol.SOCKET_NAME))
        s.sendall(b"not json\n" + json.dumps({"v": 99, "op": "ping"}).encode() + b"\n")
        reader = s.makefile("rb")
        assert json.loads(reader.readline())["error"] == "bad request"
        assert json.loads(reader.readline())["error"] == "version"


def test_many_clients_at_once(home: Path) -> None:
    recall = FakeRecall(delay=0.05)
    daemon = Daemon(settings_for(home), recall_factory=lambda s: recall)
    thread, _ = run_in_thread(daemon)
    answers: list[dict[str, Any]] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        a = ask(home, {"op": "context", "prompt": f"question {i:03d}", "cwd": f"/p{i}"})
        with lock:
            answers.append(a)

    started = time.monotonic()
    workers = [threading.Thread(target=one, args=(i,)) for i in range(20)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(20)
    elapsed = time.monotonic() - started
    daemon.stop()
    thread.join(10)
    assert sorted(a["context"] for a in answers) == sorted(f"ctx 12 /p{i}" for i in range(20))
    assert elapsed < 20 * 0.05  # served in parallel, not one after another


def test_tcp_transport_needs_the_secret_and_tags_answers(home: Path) -> None:
    daemon = Daemon(settings_for(home), transport="tcp", recall_factory=lambda s: FakeRecall())
    thread, _ = run_in_thread(daemon)
    run = home / "run"
    try:
        assert stat.S_IMODE((run / protocol.SECRET_NAME).stat().st_mode) == 0o600
        answer = ask(home, {"op": "context", "prompt": "a question", "cwd": "/x"}, tcp=True)
        assert answer["context"] == "ctx 10 /x" and len(answer["tag"]) == 32
        port = int((run / protocol.PORT_NAME).read_text())
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(protocol.encode({"v": 1, "op": "ping", "auth": "wrong", "nonce": "n"}))
            reply = json.loads(s.makefile("rb").readline())
        assert reply == {"v": 1, "ok": False, "error": "unauthorized"}
        # A listener that does not know the secret cannot produce the tag.
        (run / protocol.SECRET_NAME).write_text("another secret")
        with pytest.raises(protocol.Unavailable):
            ask(home, {"op": "ping"}, tcp=True)
    finally:
        daemon.stop()
        thread.join(10)
    assert not (run / protocol.PORT_NAME).exists()


# -- real model, real index --------------------------------------------------------------


@pytest.mark.slow
def test_related_question_gets_the_right_note(dev_state: DevState, dev_daemon: Any) -> None:
    cwd = str(dev_state.project)
    answer = ask(dev_state.home, {"op": "context", "prompt": RELATED, "cwd": cwd})
    lines = answer["context"].split("\n")
    assert lines[0] == protocol.HEADER
    assert lines[1].startswith(RELATED_HEADLINE) and RELATED_NOTE in lines[1]


@pytest.mark.slow
def test_superseded_adr_ranked_first_carries_its_mark(dev_state: DevState, dev_daemon: Any) -> None:
    cwd = str(dev_state.project / "src")  # a subfolder: the project is its git root
    answer = ask(dev_state.home, {"op": "context", "prompt": ADR_PROMPT, "cwd": cwd})
    first = answer["context"].split("\n")[1]
    assert first.startswith("⚠️superseded → ")
    assert "0002" in first.split(" adr  ")[0]
    assert "0001-store-login-sessions-in-mysql.md" in first


@pytest.mark.slow
def test_session_start_lists_live_adrs_only(dev_state: DevState, dev_daemon: Any) -> None:
    answer = ask(dev_state.home, {"op": "session", "cwd": str(dev_state.project)})
    text = answer["context"]
    assert "Keep user login sessions in Redis" in text
    assert "Deploy the web tier blue-green" in text
    assert "MySQL" not in text


@pytest.mark.slow
def test_auto_context_is_what_the_daemon_answers(
    dev_state: DevState, dev_daemon: Any, embedder: Any
) -> None:
    recall = Recall(settings_for(dev_state.home), embedder)
    for prompt in (RELATED, ADR_PROMPT, "good morning! how was your weekend?"):
        mine = recall.context(prompt, str(dev_state.project)).context
        theirs = ask(
            dev_state.home, {"op": "context", "prompt": prompt, "cwd": str(dev_state.project)}
        )["context"]
        assert mine == theirs


@pytest.mark.slow
def test_sees_another_process_index_update_within_a_second(
    tmp_path: Path, dev_state: DevState, embedder: Any
) -> None:
    home = tmp_path / "state"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "kettle.md").write_text("# Descale the kettle\n\nUse citric acid monthly.\n")
    build_index(home, embedder, dev_state.project, notes, None)
    proc = start_daemon(home)
    try:
        from tests.conftest_daemon import wait_ready

        wait_ready(home, proc)
        prompt = "how do I get rid of limescale in the office espresso machine boiler?"
        cwd = str(dev_state.project)
        before = ask(home, {"op": "context", "prompt": prompt, "cwd": cwd})["context"] or ""
        assert "espresso" not in before
        (notes / "espresso.md").write_text(
            "---\nname: Espresso machine limescale\ndescription: descale the espresso machine "
            "boiler with citric acid, never vinegar\n---\nRun the descaling cycle monthly.\n"
        )
        build_index(home, embedder, dev_state.project, notes, None)  # the watcher's write
        committed = time.monotonic()
        seen = None
        while time.monotonic() - committed < 5:
            text = ask(home, {"op": "context", "prompt": prompt, "cwd": cwd})["context"] or ""
            if "Espresso machine limescale" in text:
                seen = time.monotonic() - committed
                break
            time.sleep(0.05)
        assert seen is not None and seen <= 1.0, seen
    finally:
        stop_daemon(proc)


def test_serve_status_and_stop_commands(home: Path, fake_daemon: Daemon) -> None:
    import typer
    from typer.testing import CliRunner

    from precedents.cli_daemon import register

    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """Root."""

    register(app)
    runner = CliRunner()
    status = runner.invoke(app, ["serve", "--status"])
    assert status.exit_code == 0 and json.loads(status.output)["pid"] == os.getpid()
    assert runner.invoke(app, ["serve", "--stop"]).exit_code == 0
    deadline = time.monotonic() + 10
    while (home / "run" / protocol.SOCKET_NAME).exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    down = runner.invoke(app, ["serve", "--status"])
    assert down.exit_code == 1 and "no daemon" in down.output
