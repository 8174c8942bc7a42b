"""The daemon's HTTP listener for Claude Code's ``"type": "http"`` hooks; `install-hook --http`.

Real HTTP over real sockets: an in-process daemon with the fake recall for the
protocol and refusals, a real daemon subprocess (the real model and index) for
"the same answer the command hook gives", and, where npm is available, the
real Claude Code POSTing to it.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import stat
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from precedents.cli.daemon import register
from precedents.config import record_http_port
from precedents.errors import UsageError
from precedents.hook.install import TOKEN_ENV, TOKEN_HEADER, install, is_ours
from precedents.protocol import hook_output
from precedents.query_daemon.http import (
    MAX_BODY_BYTES,
    PATH,
    ensure_secret,
    port_free,
    secret_path,
)

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.claude_api_stub import StubApi  # noqa: E402
from tests.conftest_daemon import (  # noqa: E402 - after the rewrite registration
    RELATED,
    RELATED_HEADLINE,
    RELATED_NOTE,
    DevState,
    FakeRecall,
    copy_state,
    prompt_json,
    run_hook,
    run_in_thread,
    running_daemon,
    settings_for,
)
from tests.test_claude_code_e2e import (  # noqa: E402
    CONTEXT_MARK,
    claude_bin,  # noqa: F401 - the fixture that installs Claude Code from npm
    claude_env,
    run_claude,
)

pytest_plugins = ["tests.conftest_daemon"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def post(
    port: int,
    body: bytes,
    token: str | None,
    *,
    path: str = PATH,
    method: str = "POST",
    headers: dict[str, str] | None = None,
    conn: http.client.HTTPConnection | None = None,
) -> tuple[int, bytes]:
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        sent = {"Content-Type": "application/json", **(headers or {})}
        if token is not None:
            sent[TOKEN_HEADER] = token
        conn.request(method, path, body=body, headers=sent)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        if own:
            conn.close()


def session_json(cwd: Path | str) -> bytes:
    return json.dumps(
        {"session_id": "s", "cwd": str(cwd), "hook_event_name": "SessionStart", "source": "startup"}
    ).encode()


@pytest.fixture
def http_daemon(home: Path) -> Any:
    """An in-process daemon answering with FakeRecall, its HTTP listener on a free port."""
    from precedents.query_daemon.server import Daemon

    port = free_port()
    daemon = Daemon(
        settings_for(home).with_overrides(http_port=port), recall_factory=lambda s: FakeRecall()
    )
    thread, _ = run_in_thread(daemon)
    yield daemon, port, ensure_secret(home)
    daemon.stop()
    thread.join(10)


def test_answers_like_the_command_hook(http_daemon: Any, tmp_path: Path) -> None:
    _, port, token = http_daemon
    prompt = "how do I keep untracked files in a stash?"
    status, body = post(port, prompt_json(prompt, tmp_path), token)
    assert status == 200
    assert body.decode() == hook_output(f"ctx {len(prompt)} {tmp_path}")
    status, body = post(port, session_json(tmp_path), token)
    assert (status, body.decode()) == (200, hook_output(f"session {tmp_path}", "SessionStart"))
    # A prompt the command hook would not send gets nothing, as there.
    assert post(port, prompt_json("hi", tmp_path), token) == (200, b"{}")
    # A long prompt is cut as the command hook cuts it.
    status, body = post(port, prompt_json("x" * 100_000, tmp_path), token)
    assert status == 200 and json.loads(body)["hookSpecificOutput"]["additionalContext"] == (
        f"ctx 4096 {tmp_path}"
    )


def test_a_wrong_or_missing_token_gets_403_and_nothing(
    http_daemon: Any, home: Path, tmp_path: Path
) -> None:
    daemon, port, token = http_daemon
    calls = daemon.recall.calls
    stdin = prompt_json(RELATED, tmp_path)
    for given in (None, "", "0" * 64, token[:-1], token + "0"):
        status, body = post(port, stdin, given)
        assert status == 403 and b"ctx" not in body
    # A page in a browser reaching 127.0.0.1 through a rebound DNS name: refused too.
    assert post(port, stdin, token, headers={"Host": "evil.example:80"})[0] == 403
    assert daemon.recall.calls == calls
    assert stat.S_IMODE(os.stat(secret_path(home)).st_mode) == 0o600
    assert post(port, stdin, token)[0] == 200


def test_bad_requests_get_4xx_and_it_keeps_serving(http_daemon: Any, tmp_path: Path) -> None:
    _, port, token = http_daemon
    cases: list[tuple[bytes, dict[str, str], str, str, int]] = [
        (b"not json", {}, "POST", PATH, 400),
        (b"[1, 2]", {}, "POST", PATH, 400),
        (b"\xff\xfe", {}, "POST", PATH, 400),
        (b"[" * 100_000, {}, "POST", PATH, 400),
        (json.dumps({"hook_event_name": "UserPromptSubmit"}).encode(), {}, "POST", PATH, 400),
        (
            json.dumps({"cwd": "/x", "hook_event_name": "PreToolUse"}).encode(),
            {},
            "POST",
            PATH,
            400,
        ),
        (json.dumps({"cwd": "/x", "hook_event_name": "Stop"}).encode(), {}, "POST", PATH, 400),
        (prompt_json(RELATED, tmp_path), {}, "GET", PATH, 405),
        (prompt_json(RELATED, tmp_path), {}, "POST", "/other", 404),
    ]
    for body, headers, method, path, code in cases:
        assert post(port, body, token, headers=headers, method=method, path=path)[0] == code
    # Over 5 MiB: refused from its length, the body unread.
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(
            (
                f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{TOKEN_HEADER}: {token}\r\n"
                f"Content-Length: {MAX_BODY_BYTES + 1}\r\n\r\n"
            ).encode()
        )
        assert s.recv(100).startswith(b"HTTP/1.1 413")
    # No length at all.
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(f"POST {PATH} HTTP/1.1\r\nHost: x\r\n{TOKEN_HEADER}: {token}\r\n\r\n".encode())
        reply = s.recv(100)
        assert reply.startswith(b"HTTP/1.1 403")  # the Host is checked first
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(
            f"POST {PATH} HTTP/1.1\r\nHost: localhost\r\n{TOKEN_HEADER}: {token}\r\n\r\n".encode()
        )
        assert s.recv(100).startswith(b"HTTP/1.1 411")
    # Garbage that is no HTTP at all.
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"\x00\x01garbage\r\n\r\n")
        s.recv(100)  # answered 400 or closed: either way, nothing else
    # Still answering, on one kept-alive connection too.
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for _ in range(3):
        status, body = post(port, prompt_json(RELATED, tmp_path), token, conn=conn)
        assert status == 200 and b"ctx" in body
    conn.close()


@pytest.mark.skipif(sys.platform != "linux", reason="127.0.0.2 reaches lo on Linux only")
def test_bound_to_127_0_0_1_only(http_daemon: Any, tmp_path: Path) -> None:
    daemon, port, token = http_daemon
    assert daemon._http._server.server_address[0] == "127.0.0.1"
    # Another loopback address (as any other interface) is not listened on.
    with pytest.raises(OSError), socket.create_connection(("127.0.0.2", port), timeout=5):
        pass
    assert post(port, prompt_json(RELATED, tmp_path), token)[0] == 200


def test_the_port_is_freed_on_stop(home: Path) -> None:
    from precedents.query_daemon.server import Daemon

    port = free_port()
    daemon = Daemon(
        settings_for(home).with_overrides(http_port=port), recall_factory=lambda s: FakeRecall()
    )
    thread, result = run_in_thread(daemon)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    assert post(port, session_json(home), ensure_secret(home), conn=conn)[0] == 200
    assert not port_free(port)
    daemon.stop()
    thread.join(10)
    assert result and not thread.is_alive()
    assert port_free(port)
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=5):
        pass
    conn.close()


def test_a_taken_port_leaves_the_socket_serving(home: Path) -> None:
    from precedents import protocol
    from precedents.query_daemon.server import Daemon

    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen(1)
        port = other.getsockname()[1]
        daemon = Daemon(
            settings_for(home).with_overrides(http_port=port), recall_factory=lambda s: FakeRecall()
        )
        thread, _ = run_in_thread(daemon)
        try:
            answer = protocol.ask({"op": "session", "cwd": "/x"}, 5.0, home / "run")
            assert answer["context"] == "session /x"
            assert daemon._http is None
        finally:
            daemon.stop()
            thread.join(10)


def test_the_secret_is_made_once(home: Path) -> None:
    first = ensure_secret(home)
    assert len(first) == 64 and int(first, 16) >= 0
    assert ensure_secret(home) == first
    assert stat.S_IMODE(os.stat(secret_path(home)).st_mode) == 0o600


@pytest.mark.slow
def test_a_real_daemon_answers_http_as_the_command_hook(
    dev_state: DevState, tmp_path: Path
) -> None:
    home = copy_state(dev_state, tmp_path)
    port = free_port()
    (home / "config.toml").write_text(f"http_port = {port}\n")
    token = ensure_secret(home)
    project = dev_state.project
    with running_daemon(home):
        command = run_hook(home, prompt_json(RELATED, project), "prompt").stdout.decode().strip()
        assert RELATED_NOTE in command and RELATED_HEADLINE in command
        status, body = post(port, prompt_json(RELATED, project), token)
        assert (status, body.decode()) == (200, command)
        session = run_hook(home, session_json(project), "session").stdout.decode().strip()
        assert "ADR" in session
        assert post(port, session_json(project), token) == (200, session.encode())
        assert post(port, prompt_json(RELATED, project), "bad")[0] == 403
        assert post(port, b"{", token)[0] == 400
        assert post(port, prompt_json(RELATED, project), token) == (200, command.encode())
    assert port_free(port)
    # The prompt is in no file the daemon wrote.
    for path in (home / "logs").rglob("*"):
        if path.is_file():
            assert "brand-new files" not in path.read_text(errors="replace"), path


# -- install-hook --http ---------------------------------------------------------------


def fake_claude(folder: Path, version: str) -> Path:
    exe = folder / "claude"
    exe.write_text(f"#!/bin/sh\necho '{version} (Claude Code)'\n")
    exe.chmod(0o755)
    return exe


def app() -> typer.Typer:
    a = typer.Typer()

    @a.callback()
    def _root() -> None:
        """Root."""

    register(a)
    return a


def test_install_http_entries_hold_no_secret(tmp_path: Path) -> None:
    claude = fake_claude(tmp_path, "2.1.332")
    path = tmp_path / "settings.json"
    url = "http://127.0.0.1:27401/hook"
    report = install(path, python="/py", claude=str(claude), http_url=url)
    assert report.action == "installed" and report.http
    hooks = json.loads(path.read_text())["hooks"]
    assert hooks["UserPromptSubmit"] == [
        {
            "hooks": [
                {
                    "type": "http",
                    "url": url,
                    "timeout": 5,
                    "headers": {TOKEN_HEADER: f"${TOKEN_ENV}"},
                    "allowedEnvVars": [TOKEN_ENV],
                }
            ]
        }
    ]
    # Claude Code skips http hooks for SessionStart: that one stays a command.
    session = hooks["SessionStart"][0]["hooks"][0]
    assert session["type"] == "command" and session["args"][-1] == "session"
    assert install(path, python="/py", claude=str(claude), http_url=url).action == "unchanged"
    # Switching back replaces the http entry; and again.
    install(path, python="/py", claude=str(claude))
    data = json.loads(path.read_text())["hooks"]
    assert [g["hooks"][0]["type"] for g in data["UserPromptSubmit"]] == ["command"]
    install(path, python="/py", claude=str(claude), http_url=url)
    data = json.loads(path.read_text())["hooks"]
    assert [g["hooks"][0]["type"] for g in data["UserPromptSubmit"]] == ["http"]
    assert all(is_ours(g["hooks"][0]) for groups in data.values() for g in groups)
    assert install(path, uninstall=True).removed == 4  # InstructionsLoaded too (2.1.332)
    assert "hooks" not in json.loads(path.read_text())


def test_install_http_refuses_an_old_or_unknown_claude_code(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    url = "http://127.0.0.1:27401/hook"
    old = fake_claude(tmp_path, "2.1.62")
    with pytest.raises(UsageError, match=r"2\.1\.62 has no http hooks .*2\.1\.63"):
        install(path, claude=str(old), http_url=url)
    with pytest.raises(UsageError, match="cannot tell"):
        install(path, claude=str(tmp_path / "missing"), http_url=url)
    assert not path.exists()
    assert install(path, claude=str(fake_claude(tmp_path, "2.1.63")), http_url=url).http


def test_cli_install_http_records_a_port_and_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text('model = "sentence-transformers/all-MiniLM-L6-v2"\n')
    monkeypatch.setenv("PRECEDENTS_HOME", str(state))
    monkeypatch.setenv("PRECEDENTS_CLAUDE_DIR", str(tmp_path / "claude"))
    monkeypatch.delenv("PRECEDENTS_HTTP_PORT", raising=False)
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_claude(bin_dir, "2.1.332")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    runner = CliRunner()
    result = runner.invoke(app(), ["install-hook", "--http"])
    assert result.exit_code == 0, result.output
    assert "http form" in result.output and TOKEN_ENV in result.output
    config = (state / "config.toml").read_text()
    port = int(config.split("http_port = ")[1].split()[0])
    assert config.startswith('model = "')
    settings_file = tmp_path / "claude" / "settings.json"
    text = settings_file.read_text()
    secret = ensure_secret(state)
    assert secret not in text and f'"${TOKEN_ENV}"' in text
    entry = json.loads(text)["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    assert entry["url"] == f"http://127.0.0.1:{port}{PATH}"
    # Again: the same port, nothing changed.
    again = runner.invoke(app(), ["install-hook", "--http", "--json"])
    assert json.loads(again.stdout)["action"] == "unchanged"
    assert (state / "config.toml").read_text() == config
    # Too old a Claude Code: one line, exit 2, nothing written.
    fake_claude(bin_dir, "2.1.50")
    settings_file.unlink()
    result = runner.invoke(app(), ["install-hook", "--http"])
    assert result.exit_code == 2 and not settings_file.exists()


def test_record_http_port_goes_above_the_first_table(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('model = "m"\n[thresholds."m"]\nmin_top = 0.5')
    record_http_port(config, 27555)
    import tomllib

    data = tomllib.loads(config.read_text())
    assert data["http_port"] == 27555 and data["thresholds"]["m"]["min_top"] == 0.5
    fresh = tmp_path / "new" / "config.toml"
    record_http_port(fresh, 27556)
    assert tomllib.loads(fresh.read_text()) == {"http_port": 27556}


# -- the real Claude Code ----------------------------------------------------------------


@pytest.mark.slow
def test_claude_code_posts_to_the_daemon(
    dev_state: DevState,
    tmp_path: Path,
    claude_bin: Path,  # noqa: F811 - the fixture imported above
) -> None:
    """Claude Code calls the http hook with the token from its environment; the note
    reaches the model's request."""
    exe = claude_bin
    home = copy_state(dev_state, tmp_path)
    port = free_port()
    (home / "config.toml").write_text(f"http_port = {port}\n")
    token = ensure_secret(home)
    project = dev_state.project
    settings_file = project / ".claude" / "settings.local.json"
    report = install(settings_file, claude=str(exe), http_url=f"http://127.0.0.1:{port}{PATH}")
    assert report.http
    api = StubApi().start()
    try:
        with running_daemon(home):
            env = claude_env(home, tmp_path, api.url, **{TOKEN_ENV: token})
            started = time.monotonic()
            proc = run_claude(exe, project, env)
            assert time.monotonic() - started < 170
    finally:
        install(settings_file, uninstall=True)
        api.stop()
    messages = [b for b in api.bodies if CONTEXT_MARK in b]
    assert messages, (
        f"no request carried the hook's context; exit {proc.returncode}, "
        f"stderr {proc.stderr[-1500:]!r}, {len(api.bodies)} requests"
    )
    assert RELATED_HEADLINE in messages[-1] and RELATED_NOTE in messages[-1]
    assert proc.returncode == 0, proc.stderr[-1500:]
    # The http hook answered it, not the command hook (SessionStart's only).
    prompts = (
        [
            line
            for line in (home / "logs" / "hook.log").read_text().splitlines()
            if '"prompt"' in line
        ]
        if (home / "logs" / "hook.log").exists()
        else []
    )
    assert prompts == []


def test_no_nagle_and_a_backlog_for_bursts() -> None:
    """Both measured (bench/http_hook.py): Nagle cost a kept-alive connection ~40 ms a
    request; a backlog of 5 made 10 simultaneous connects wait 1 s for a SYN retransmit."""
    from precedents.query_daemon import http as listener

    assert listener._Handler.disable_nagle_algorithm
    assert listener._Server.request_queue_size >= 64
