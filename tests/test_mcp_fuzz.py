"""Every JSON-RPC request `precedents mcp` can read gets a reply (issue #20, item 3).

The real server (``python -m precedents.cli mcp``) over its real stdio, spoken
to byte for byte (the SDK's client would refuse to send most of these): a
lone surrogate (``"\\ud800"``, valid JSON, never answered before), NUL,
numbers of thousands of digits, 100,000-deep nesting, a 17 MiB line, wrong
types, then hypothesis over JSON-RPC messages. And the ADR tools stay inside
the project and the configured ADR folders.
"""

from __future__ import annotations

import json
import math
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import REPO, hook_env, write_adrs  # noqa: E402

pytest_plugins = ["tests.conftest_daemon"]

# Generous: a 2-core box shared with other work; a reply usually takes milliseconds.
REPLY_S = 20.0
NO_ID = object()


def same_id(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


def expected_id(request: Any) -> Any:
    """The id a reply to ``request`` must carry; NO_ID when none is due (a notification)."""
    if not isinstance(request, dict):
        return None  # an invalid request: id null
    if "id" not in request:
        # A notification gets nothing back; an object that is not even that gets id null.
        return NO_ID if "method" in request or "result" in request or "error" in request else None
    rid = request["id"]
    if isinstance(rid, bool) or not isinstance(rid, str | int | float):
        return None
    if isinstance(rid, float) and not math.isfinite(rid):
        return None
    if "method" not in request and ("result" in request or "error" in request):
        return NO_ID  # a reply to the server: nobody waits for an answer to it
    return rid


class McpProcess:
    """`precedents mcp` as a subprocess: send raw lines, wait for replies by id."""

    def __init__(self, cwd: Path, home: Path, claude: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "precedents.cli", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=hook_env(home, PRECEDENTS_CLAUDE_DIR=str(claude), PYTHONPATH=str(REPO / "src")),
        )
        self.replies: queue.Queue[Any] = queue.Queue()
        self.garbage: list[bytes] = []
        self.stderr: list[bytes] = []
        self._probe = 0
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        init = {
            "jsonrpc": "2.0",
            "id": "init",
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "fuzz", "version": "1"},
            },
        }
        assert "result" in self.call(init)
        self.send_raw(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.replies.put(json.loads(line))
            except ValueError:
                self.garbage.append(line)

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)

    def send_raw(self, text: str | bytes) -> None:
        assert self.proc.stdin is not None
        data = text.encode("ascii") if isinstance(text, str) else text
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def wait_for(self, rid: Any) -> dict[str, Any]:
        """The next message carrying ``rid``; others (late or unrelated) are skipped."""
        deadline = time.monotonic() + REPLY_S
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"no reply with id {rid!r} within {REPLY_S}s; server alive: "
                    f"{self.proc.poll() is None}; stderr: {b''.join(self.stderr)[-2000:]!r}"
                )
            try:
                msg = self.replies.get(timeout=left)
            except queue.Empty:
                continue
            # A reply (no "method": not a request of the server's own) carrying the id.
            if isinstance(msg, dict) and "method" not in msg and same_id(msg.get("id", NO_ID), rid):
                return msg

    def call(self, request: Any) -> dict[str, Any]:
        self.send_raw(json.dumps(request))  # ensure_ascii: "\ud800" goes as its escape
        return self.wait_for(expected_id(request))

    def probe(self) -> None:
        """A ping that must be answered: the server is alive and reading."""
        self._probe += 1
        rid = f"probe-{self._probe}"
        self.send_raw(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "ping"}))
        assert self.wait_for(rid)["result"] == {}

    def check(self, request: Any) -> None:
        """Send ``request``; its reply must come, or (a notification) the server must
        still answer a ping after it."""
        rid = expected_id(request)
        self.send_raw(json.dumps(request))
        if rid is NO_ID:
            self.probe()
            return
        reply = self.wait_for(rid)
        assert ("result" in reply) != ("error" in reply), reply

    def close(self) -> int:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            return self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(5)


@pytest.fixture
def mcp(tmp_path: Path) -> Any:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    write_adrs(project / "docs" / "adr")
    claude = tmp_path / "claude"
    claude.mkdir()
    server = McpProcess(project, tmp_path / "state", claude)
    yield server, project
    assert server.close() == 0
    assert server.garbage == []  # every line the server wrote was JSON


def tool_call(rid: Any, name: str, arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def test_a_lone_surrogate_nul_huge_and_deep_values_are_answered(mcp: Any) -> None:
    server, _ = mcp
    deep = "[" * 100_000 + "]" * 100_000
    cases: list[tuple[str, Any]] = [
        ("lone surrogate in an argument", tool_call(1, "adr_find", {"words": "\ud800"})),
        ("lone low surrogate", tool_call(2, "adr_status", {"id": "\udfff\ud800"})),
        ("lone surrogate in a key", tool_call(3, "adr_find", {"words": "x", "\ud800": 1})),
        ("lone surrogate in the method", {"jsonrpc": "2.0", "id": 4, "method": "\ud800"}),
        ("lone surrogate in the tool name", tool_call(5, "adr_\ud800", {})),
        ("lone surrogate in the id", {"jsonrpc": "2.0", "id": "a\ud800", "method": "ping"}),
        ("NUL in an argument", tool_call(6, "adr_find", {"words": "a\x00b"})),
        ("NUL in a path", tool_call(7, "adr_chain", {"id": "1", "dir": "docs\x00/adr"})),
        ("a float id", {"jsonrpc": "2.0", "id": 1.5, "method": "ping"}),
        ("an id that is a list", {"jsonrpc": "2.0", "id": [9], "method": "ping"}),
        ("a null id", {"jsonrpc": "2.0", "id": None, "method": "ping"}),
        ("params that are a list", {"jsonrpc": "2.0", "id": 10, "method": "ping", "params": [1]}),
        ("wrong types", tool_call(11, "adr_find", {"words": ["x"], "dir": 5})),
        ("arguments not an object", tool_call(12, "adr_find", "words")),
        ("a 2 MB argument", tool_call(13, "adr_find", {"words": "x " * 1_000_000})),
        ("no jsonrpc member", {"id": 14, "method": "ping"}),
        ("a top-level string", "ping"),
        ("a top-level number", 15),
        ("a batch", [{"jsonrpc": "2.0", "id": 16, "method": "ping"}]),
    ]
    answered = 0
    for why, request in cases:
        if isinstance(request, list):
            server.send_raw(json.dumps(request))
            assert "error" in server.wait_for(16), why
        else:
            reply = server.call(request)
            assert ("result" in reply) != ("error" in reply), (why, reply)
        answered += 1
    # Numbers of 5,000 digits (Python's int reading stops at 4,300).
    huge = "1" + "0" * 4999
    server.send_raw(
        '{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": '
        '{"name": "adr_status", "arguments": {"id": ' + huge + "}}}"
    )
    assert server.wait_for(8)["error"]["message"] == "a number too long to read"
    server.send_raw('{"jsonrpc": "2.0", "id": ' + huge + ', "method": "ping"}')
    assert "error" in server.wait_for(None)  # an id nobody can read back: null
    # Text the server cannot parse at all: nested past any parser, cut short, not JSON.
    server.send_raw('{"jsonrpc": "2.0", "id": 17, "method": "ping", "params": {"a": ' + deep + "}}")
    assert server.wait_for(17)["error"]["message"] == "nested too deeply"
    server.send_raw(b'{"jsonrpc": "2.0", "id": 18, "method": "ping", "params": {"x": "\xff\xfe"}}')
    assert server.wait_for(18)["result"] == {}  # invalid UTF-8 read as U+FFFD
    server.send_raw("{not json")
    assert server.wait_for(None)["error"]["code"] == -32700
    # A line over the 16 MiB limit: skipped to its end, answered with an error for its id.
    big = '{"jsonrpc": "2.0", "id": 19, "method": "ping", "params": {"x": "' + "y" * (17 << 20)
    server.send_raw(big + '"}}')
    assert "over 16 MiB" in server.wait_for(19)["error"]["message"]
    server.probe()
    # The id with a lone surrogate came back exactly as sent.
    server.send_raw('{"jsonrpc": "2.0", "id": "b\\udc00", "method": "ping"}')
    assert server.wait_for("b\udc00")["result"] == {}
    assert answered == len(cases)


def test_adr_tools_stay_inside_the_project(mcp: Any, tmp_path: Path) -> None:
    server, project = mcp
    outside = tmp_path / "elsewhere"
    write_adrs(outside)
    (project / "docs" / "link").symlink_to(outside)
    for n, folder in enumerate(["/", str(outside), "..", "docs/link", str(Path.home())]):
        for tool, args in (
            ("adr_find", {"words": "load balancer", "dir": folder}),
            ("adr_status", {"id": "1", "dir": folder}),
            ("adr_chain", {"id": "1", "dir": folder}),
        ):
            started = time.monotonic()
            reply = server.call(tool_call(f"{tool}-{n}", tool, args))
            result = reply["result"]
            assert result["isError"], (folder, tool, result)
            text = result["content"][0]["text"]
            assert "outside the project" in text and "\n" not in text, text
            assert time.monotonic() - started < 15  # refused, not walked (that takes minutes)
    # Inside the project: answered as before, relative paths from the project.
    found = server.call(tool_call("in", "adr_find", {"words": "load balancer", "dir": "docs/adr"}))
    paths = [r["path"] for r in found["result"]["structuredContent"]["result"]]
    assert paths == ["0003-deploy-with-blue-green.md"]
    default = server.call(tool_call("default", "adr_status", {"id": "2"}))
    assert not default["result"]["isError"]


# -- hypothesis over JSON-RPC messages -------------------------------------------------

CHARS = st.one_of(
    st.characters(),
    st.characters(categories=["Cs"]),  # lone surrogates
    st.sampled_from(["\x00", "\ud800", "\udfff", "\u202e", "\ufeff", "\n", '"', "\\"]),
)
TEXT = st.text(CHARS, max_size=40)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=16,
)
IDS = st.one_of(st.integers(), st.integers(min_value=-(10**30), max_value=10**30), TEXT, VALUES)
METHODS = st.one_of(
    st.sampled_from(
        [
            "ping",
            "tools/list",
            "tools/call",
            "resources/list",
            "resources/read",
            "prompts/list",
            "prompts/get",
            "completion/complete",
            "logging/setLevel",
            "initialize",
            "notifications/cancelled",
            "notifications/progress",
        ]
    ),
    TEXT,
)
ADR_ARGS = st.dictionaries(
    st.sampled_from(["words", "id", "dir"]) | TEXT,
    VALUES | st.sampled_from([".", "docs/adr", "/", "..", "1", "ADR-0002"]),
    max_size=4,
)
PARAMS = st.one_of(
    VALUES,
    st.fixed_dictionaries(
        {
            "name": st.sampled_from(["adr_find", "adr_status", "adr_chain"]) | TEXT,
            "arguments": ADR_ARGS | VALUES,
        }
    ),
)


@st.composite
def messages(draw: st.DrawFn) -> Any:
    """A JSON-RPC-shaped message with any member missing or of any type, or any JSON value."""
    if draw(st.integers(0, 9)) == 0:
        return draw(VALUES)
    msg: dict[str, Any] = {}
    if draw(st.integers(0, 9)):
        msg["jsonrpc"] = draw(st.just("2.0") | TEXT)
    if draw(st.integers(0, 4)):
        msg["id"] = draw(IDS)
    if draw(st.integers(0, 9)):
        msg["method"] = draw(METHODS)
    if draw(st.booleans()):
        msg["params"] = draw(PARAMS)
    if draw(st.integers(0, 9)) == 0:
        msg[draw(TEXT)] = draw(VALUES)
    return msg


def test_hypothesis_every_request_gets_a_reply(mcp: Any) -> None:
    server, _ = mcp
    sent: list[int] = []

    @settings(
        max_examples=300,
        deadline=None,
        database=None,  # nothing written into the repository
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(messages())
    def one(message: Any) -> None:
        server.check(message)
        sent.append(1)

    one()
    server.probe()
    assert len(sent) >= 300


@pytest.mark.slow
def test_recall_and_remember_answer_whatever_they_are_given(dev_state: Any, tmp_path: Path) -> None:
    """The two tools that reach the daemon and the disk, with the real model and index."""
    from tests.conftest_daemon import RELATED, copy_state, running_daemon

    home = copy_state(dev_state, tmp_path)
    claude = tmp_path / "claude"
    claude.mkdir()
    project = str(dev_state.project)
    with running_daemon(home):
        server = McpProcess(dev_state.project, home, claude)
        try:
            calls = [
                ("recall", {"query": "\ud800 " + RELATED}, False),
                ("recall", {"query": "a\x00b " + RELATED, "project": project}, False),
                ("recall", {"query": RELATED * 20_000}, False),  # 1.8 MB
                ("recall", {"query": RELATED, "project": "/tmp\x00/x"}, True),
                ("recall", {"query": RELATED, "k": 10**30}, True),
                ("recall", {"query": {"nested": [RELATED]}}, True),
                ("remember", {"text": "Lone \ud800 surrogate and NUL \x00 kept apart."}, False),
                ("remember", {"text": "x", "title": ["not", "a", "string"]}, True),
            ]
            for n, (tool, args, is_error) in enumerate(calls):
                reply = server.call(tool_call(n, tool, args))
                assert reply["result"]["isError"] is is_error, (tool, args, reply)
                if not is_error and tool == "recall":
                    assert reply["result"]["structuredContent"]["records"], reply
            server.probe()
        finally:
            assert server.close() == 0
    notes = list(claude.rglob("*.md"))
    assert len(notes) == 1
    text = notes[0].read_text(encoding="utf-8")
    assert "Lone \ufffd surrogate" in text
