"""The query daemon: lifecycle, protocol, transports, and real answers over a real socket."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from precedents import protocol
from precedents.query_daemon.server import Daemon, DaemonRunning
from precedents.recall.core import Recall

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import (  # noqa: E402 - after the rewrite registration
    ADR_PROMPT,
    RELATED,
    RELATED_HEADLINE,
    RELATED_NOTE,
    DevState,
    FakeRecall,
    build_index,
    hook_env,
    run_in_thread,
    settings_for,
    start_daemon,
    stop_daemon,
)

# The session index of the dev notes and the daemon over it (shared with the other modules).
pytest_plugins = ["tests.conftest_daemon"]


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
    # Questions 0.6 s apart against a 3 s idle timeout: 2.4 s to spare for each
    # answer on a busy machine.
    daemon = Daemon(settings_for(home), idle_timeout_s=3.0, recall_factory=lambda s: FakeRecall())
    thread, _ = run_in_thread(daemon)
    for _ in range(6):
        time.sleep(0.6)
        assert ask(home, {"op": "context", "prompt": "a question", "cwd": "/x"})["ok"]
    assert thread.is_alive()  # 3.6 s in, but never 3 s without a question
    thread.join(10)
    assert not thread.is_alive()


def test_sigterm_removes_socket_and_pid(home: Path) -> None:
    script = (
        "import sys; from tests.conftest_daemon import FakeRecall; "
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
    # Long enough that one after another (20 x 0.25 s) and in parallel (two rounds
    # of 16 workers) stay far apart on a busy machine too.
    recall = FakeRecall(delay=0.25)
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
    assert elapsed < 20 * 0.25 / 2  # served in parallel: not half the serial time


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
def test_sees_another_process_index_update_within_two_seconds(
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
            time.sleep(0.2)  # a question every 0.2 s: not a load of the test's own
        # SPEC §7: a saved note searchable within 2 s (the daemon exports the store in a
        # child process, recall/exported.py). bench/watch.py --daemon measures that bar,
        # idle and loaded (docs/benchmarks.md); here, where `make test-loaded` keeps both
        # cores busy beside the test, the bound is generous: it catches an export held
        # back seconds behind another (the start-up export once spaced the first save
        # by twice its own time).
        assert seen is not None and seen <= 3.0, seen
    finally:
        stop_daemon(proc)


def test_serve_status_and_stop_commands(home: Path, fake_daemon: Daemon) -> None:
    import typer
    from typer.testing import CliRunner

    from precedents.cli.daemon import register

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


# -- reliability (docs/reliability.md) ---------------------------------------------------


class RecordingEmbedder:
    """Wraps an embedder and records the length of every text handed to the model."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dimension = inner.dimension
        self.device = "cpu"
        self.lengths: list[int] = []

    def encode_queries(self, texts: Any) -> Any:
        self.lengths.extend(len(t) for t in texts)
        return self.inner.encode_queries(texts)

    def encode_passages(self, texts: Any) -> Any:
        return self.inner.encode_passages(texts)


def test_the_model_never_sees_more_than_the_prompt_cap(
    home: Path, tmp_path: Path, fake_embedder: Any
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "kettle.md").write_text("# Descale the kettle\n\nUse citric acid monthly.\n")
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    build_index(home, fake_embedder, project, notes, None)
    recording = RecordingEmbedder(fake_embedder)
    huge = "how do I descale the kettle? " + "limescale " * 500_000  # 5 MB
    for batch in (False, True):
        recall = Recall(settings_for(home), recording, batch=batch)  # type: ignore[arg-type]
        try:
            recording.lengths.clear()
            answer = recall.context(huge, str(project))
            assert answer.selection is not None  # it was searched, not skipped
            recall.rank(huge, project, k=50)  # `precedents query` embeds through embed()
            assert recording.lengths and max(recording.lengths) <= protocol.MAX_PROMPT_CHARS
        finally:
            recall.close()
    # Normal prompts reach the model untouched; long ones start at their first word.
    assert protocol.clip_prompt("  a normal prompt  ") == "  a normal prompt  "
    clipped = protocol.clip_prompt(" " * 10_000 + "the question" + "x" * 10_000)
    assert clipped.startswith("the question") and len(clipped) == protocol.MAX_PROMPT_CHARS
    assert protocol.clip_prompt(clipped) == clipped


def test_an_over_long_request_line_is_refused_and_closed(home: Path, fake_daemon: Daemon) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(str(home / "run" / protocol.SOCKET_NAME))
        sender = threading.Thread(
            target=lambda: _send_quietly(s, b'{"v": 1, "op": "ping", "x": "' + b"y" * (3 << 20))
        )
        sender.start()
        reader = s.makefile("rb")
        assert json.loads(reader.readline())["error"] == "too long"
        # Closed: the rest is not parsed as more requests (Linux resets a UNIX
        # socket closed with unread data, hence the error as well as EOF).
        with contextlib.suppress(ConnectionResetError):
            assert reader.readline() == b""
        sender.join(10)
    assert ask(home, {"op": "ping"})["ok"]


def _send_quietly(sock: socket.socket, data: bytes) -> None:
    with contextlib.suppress(OSError):  # the daemon closes the connection part-way
        sock.sendall(data)


@pytest.mark.slow
def test_a_huge_request_is_embedded_like_a_normal_one(dev_state: DevState, dev_daemon: Any) -> None:
    from tests.conftest_daemon import daemon_answers

    cwd = str(dev_state.project)
    filler = " ".join(f"word{i % 997}" for i in range(200_000))  # ~1.7 MB, ~1 MB sent

    def embed_ms(prompt: str) -> float:
        assert ask(dev_state.home, {"op": "context", "prompt": prompt, "cwd": cwd})["ok"]
        return float(daemon_answers(dev_state.home)[-1]["ms"]["embed"])

    # A normal prompt that already fills the model's 256 tokens; the best of two
    # of each so that a busy machine does not decide the ratio.
    normal = min(embed_ms(RELATED + " " + filler[:1500]) for _ in range(2))
    # Sent directly (the hook would clip it): the daemon must clip it itself.
    huge_prompt = RELATED + " " + filler[: protocol.MAX_LINE_BYTES - 4096]
    huge = min(embed_ms(huge_prompt) for _ in range(2))
    assert daemon_answers(dev_state.home)[-1]["chars"] == len(huge_prompt)
    assert huge < 5 * normal, (huge, normal)


def test_refuses_a_peer_of_another_uid(caplog: pytest.LogCaptureFixture) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("SO_PEERCRED is checked on Linux; other systems are not tested here")
    if os.geteuid() != 0:
        pytest.skip("connecting as another uid needs root (os.setuid)")
    import shutil
    import tempfile

    # Under /tmp, opened up: pytest's own tmp folders are 0700 and nobody could reach them.
    base = Path(tempfile.mkdtemp(prefix="precedents-peer-"))
    os.chmod(base, 0o755)
    home = base / "state"
    daemon = Daemon(settings_for(home), recall_factory=lambda s: FakeRecall())
    thread, _ = run_in_thread(daemon)
    sock_path = home / "run" / protocol.SOCKET_NAME
    script = (
        "import os, socket, sys\n"
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "os.setgroups([]); os.setgid(65534); os.setuid(65534)\n"
        "s.settimeout(5)\n"
        "s.connect(sys.argv[1])\n"
        "data = b''\n"
        "try:\n"
        '    s.sendall(b\'{"v": 1, "op": "ping"}\\n\')\n'
        "    while not data.endswith(b'\\n'):\n"
        "        chunk = s.recv(65536)\n"
        "        if not chunk:\n"
        "            break\n"
        "        data += chunk\n"
        "except OSError as exc:\n"
        "    print('oserror', exc)\n"
        "print(data.decode() or 'closed')\n"
    )
    try:
        # What a mistaken chmod (or another user's reachable folder) would allow.
        os.chmod(home, 0o755)
        os.chmod(home / "run", 0o755)
        os.chmod(sock_path, 0o666)
        with caplog.at_level("WARNING", logger="precedents.daemon"):
            proc = subprocess.run(
                [sys.executable, "-I", "-c", script, str(sock_path)],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        assert proc.returncode == 0, proc.stderr  # it could connect: only the uid stops it
        last = proc.stdout.strip().splitlines()[-1]
        if last.startswith("{"):
            assert json.loads(last)["ok"] is False, last
        assert '"pid"' not in proc.stdout  # no answer to its ping
        assert any("65534" in r.getMessage() for r in caplog.records), caplog.text
        # The same ping from the daemon's own uid is answered, and the daemon lives on.
        assert ask(home, {"op": "ping"})["pid"] == os.getpid()
    finally:
        daemon.stop()
        thread.join(10)
        shutil.rmtree(base, ignore_errors=True)


def test_a_removed_or_replaced_socket_is_recreated(home: Path) -> None:
    from precedents.query_daemon.presence import status
    from tests.conftest_daemon import start_fake_daemon

    proc = start_fake_daemon(home)
    run = home / "run"
    sock_path = run / protocol.SOCKET_NAME
    try:
        pid = ask(home, {"op": "ping"})["pid"]
        assert pid == proc.pid
        for fault in ("removed", "replaced by a regular file"):
            sock_path.unlink()
            if fault.startswith("replaced"):
                sock_path.write_text("not a socket")
            lost = time.monotonic()
            back = None
            while time.monotonic() - lost < 20:
                try:
                    if protocol.ask({"op": "ping"}, 1.0, run)["pid"] == pid:
                        back = time.monotonic() - lost
                        break
                except protocol.Unavailable:
                    time.sleep(0.02)
            # Recreated within ACCEPT_POLL_S on an idle machine; generous for a busy one.
            assert back is not None and back < 15.0, f"socket {fault}: still down"
            assert stat.S_ISSOCK(sock_path.stat().st_mode)
            assert stat.S_IMODE(sock_path.stat().st_mode) == 0o600
            # `serve --status` agrees with `serve`: one is running.
            now = status(run)
            assert now["running"] and now["answering"] and now["pid"] == pid
        assert "recreated" in (home / "logs" / "daemon.log").read_text()
    finally:
        assert stop_daemon(proc) == 0
    assert not sock_path.exists()
    assert not status(run, wait_s=0.2)["running"]


def test_a_deleted_run_folder_ends_the_daemon(home: Path) -> None:
    import shutil

    from tests.conftest_daemon import start_fake_daemon

    proc = start_fake_daemon(home)
    try:
        assert ask(home, {"op": "ping"})["pid"] == proc.pid
        # Its lock file goes too: a new daemon could start beside it, so it leaves.
        shutil.rmtree(home / "run")
        assert proc.wait(10) == 0
    finally:
        stop_daemon(proc)
    assert "run folder lost" in (home / "logs" / "daemon.log").read_text()


def test_status_sees_a_running_daemon_that_does_not_answer(home: Path) -> None:
    from precedents import runlock
    from precedents.query_daemon.presence import status

    run = home / "run"
    assert status(run, wait_s=0.1) == {"running": False, "answering": False, "pid": None}
    # A pid file naming a live process that holds no lock: stale (serve would start).
    run.mkdir(parents=True, exist_ok=True)
    (run / protocol.PID_NAME).write_text(f"{os.getppid()}\n")
    assert status(run, wait_s=0.1)["running"] is False
    # The lock held, no socket (a daemon that hangs, or one between socket files).
    claim = runlock.Claim(run, protocol.DAEMON_ROLE)
    assert claim.acquire()
    try:
        started = time.monotonic()
        now = status(run, wait_s=0.5)
        assert now == {"running": True, "answering": False, "pid": os.getpid()}
        assert time.monotonic() - started >= 0.4  # it waited for a socket to come back
    finally:
        claim.release()


def test_the_idle_clock_starts_when_the_daemon_is_ready(home: Path) -> None:
    def slow_load(settings: Any) -> FakeRecall:
        time.sleep(2.0)  # a model load slower than the idle timeout
        return FakeRecall()

    daemon = Daemon(settings_for(home), idle_timeout_s=1.0, recall_factory=slow_load)
    ready_at: float | None = None
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(daemon.serve()), daemon=True)
    started = time.monotonic()
    thread.start()
    while thread.is_alive() and time.monotonic() - started < 20:
        if ready_at is None and daemon.recall is not None:
            # The daemon's own clock: a poll here may see it late on a busy machine.
            ready_at = daemon._last_question
        time.sleep(0.01)
    exited_at = time.monotonic()
    assert not thread.is_alive()
    assert ready_at is not None, f"exited while loading: {result}"
    assert ready_at - started >= 1.9  # the idle clock started after the 2 s load
    assert exited_at - ready_at >= 0.95, (exited_at - ready_at, result)
    assert str(result[0]).startswith("idle")
