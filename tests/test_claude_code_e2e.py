"""The real client: Claude Code runs the installed hook, and the note reaches the model's request.

Claude Code is installed from npm once into ~/.cache/precedents-test (or
``PRECEDENTS_TEST_CACHE``), pointed at a small fake Messages API on 127.0.0.1
that records request bodies and streams a one-word reply. Skipped only where
node/npm are missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from precedents.hook.install import install

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import (  # noqa: E402 - after the rewrite registration
    RELATED,
    RELATED_HEADLINE,
    RELATED_NOTE,
    DevState,
    hook_env,
)

# The session index of the dev notes and the daemon over it (shared with the other modules).
pytest_plugins = ["tests.conftest_daemon"]

CLAUDE_CODE_VERSION = os.environ.get("PRECEDENTS_TEST_CLAUDE_CODE", "2.1.332")
CACHE = Path(os.environ.get("PRECEDENTS_TEST_CACHE", Path.home() / ".cache" / "precedents-test"))
CONTEXT_MARK = "UserPromptSubmit hook additional context:"


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


MESSAGE = {
    "id": "msg_test",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [],
    "stop_reason": None,
    "stop_sequence": None,
    "usage": {"input_tokens": 10, "output_tokens": 1},
}
STREAM = _sse(
    [
        {"type": "message_start", "message": MESSAGE},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "OK"}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 1},
        },
        {"type": "message_stop"},
    ]
)


class FakeApi(BaseHTTPRequestHandler):
    """Records every request body; answers /v1/messages with a minimal reply."""

    bodies: ClassVar[list[str]] = []

    def log_message(self, *args: Any) -> None:  # keep pytest output clean
        pass

    def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send(404, b'{"type":"error","error":{"type":"not_found_error","message":"no"}}')

    def do_HEAD(self) -> None:
        self._send(200, b"")

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length).decode("utf-8", "replace")
        type(self).bodies.append(raw)
        if not self.path.startswith("/v1/messages"):
            self._send(404, b'{"type":"error","error":{"type":"not_found_error","message":"no"}}')
            return
        if self.path.startswith("/v1/messages/count_tokens"):
            self._send(200, b'{"input_tokens": 10}')
            return
        try:
            streamed = bool(json.loads(raw).get("stream"))
        except ValueError:
            streamed = False
        if streamed:
            self._send(200, STREAM, "text/event-stream")
        else:
            reply = {
                **MESSAGE,
                "content": [{"type": "text", "text": "OK"}],
                "stop_reason": "end_turn",
            }
            self._send(200, json.dumps(reply).encode())


@pytest.fixture(scope="module")
def claude_bin() -> Path:
    npm = shutil.which("npm")
    if not shutil.which("node") or not npm:
        pytest.skip("node/npm are not installed: cannot install Claude Code")
    folder = CACHE / f"claude-code-{CLAUDE_CODE_VERSION}"
    exe = folder / "node_modules" / ".bin" / "claude"
    if not exe.exists():
        folder.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [
                npm,
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefix",
                str(folder),
                f"@anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert proc.returncode == 0 and exe.exists(), f"npm install failed: {proc.stderr[-2000:]}"
    return exe


@pytest.fixture
def fake_api() -> Iterator[tuple[str, list[str]]]:
    FakeApi.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeApi)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", FakeApi.bodies
    finally:
        server.shutdown()
        server.server_close()


def claude_env(home: Path, tmp_path: Path, api_url: str, **extra: str) -> dict[str, str]:
    """Claude Code's environment in a test: a private home and config folder, the
    stand-in Messages API, no telemetry or updates, the hook pointed at ``home``."""
    env = hook_env(
        home,
        HOME=str(tmp_path / "home"),
        CLAUDE_CONFIG_DIR=str(tmp_path / "claude-config"),
        ANTHROPIC_BASE_URL=api_url,
        ANTHROPIC_API_KEY="sk-ant-test-dummy",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
        DISABLE_ERROR_REPORTING="1",
        CLAUDE_CODE_ENABLE_TELEMETRY="0",
        # Wiring, not speed, is tested here: the CI box may be busy.
        PRECEDENTS_HOOK_BUDGET_MS="5000",
        **extra,
    )
    env.pop("CLAUDECODE", None)
    return env


def run_claude(exe: Path, project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``claude -p RELATED`` in ``project``, one turn."""
    return subprocess.run(
        [str(exe), "-p", RELATED, "--max-turns", "1"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


@pytest.mark.slow
def test_claude_code_sends_the_injected_note(
    tmp_path: Path,
    claude_bin: Path,
    fake_api: tuple[str, list[str]],
    dev_state: DevState,
    dev_daemon: Any,
) -> None:
    url, bodies = fake_api
    project = dev_state.project
    settings_file = project / ".claude" / "settings.json"
    report = install(settings_file, claude=str(claude_bin))
    try:
        assert report.exec_form  # this Claude Code takes `args`
        proc = run_claude(claude_bin, project, claude_env(dev_state.home, tmp_path, url))
    finally:
        install(settings_file, uninstall=True)
    messages = [b for b in bodies if CONTEXT_MARK in b]
    assert messages, (
        f"no request carried the hook's context; exit {proc.returncode}, "
        f"stdout {proc.stdout[-500:]!r}, stderr {proc.stderr[-1500:]!r}, {len(bodies)} requests"
    )
    body = messages[-1]
    assert RELATED_HEADLINE in body and RELATED_NOTE in body
    assert proc.returncode == 0, proc.stderr[-1500:]
