"""`precedents mcp` answers the handshake before the SDK has loaded (issue #21: 2.9 s to
answer `initialize`, and Claude Code's first request went out without the tools).

Real parts: `python -m precedents.cli mcp` over its real stdio; the SDK's own server
(no front) for the answers the front must give; an SDK that never finishes importing
(a stand-in package first on the path) to show the handshake does not wait for it.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from precedents.mcp.answers import ANSWERS_JSON
from precedents.mcp.front import REPLAY_ID
from precedents.mcp.handshake import capture

from .conftest import REPO

ANSWERS: dict[str, Any] = json.loads(ANSWERS_JSON)
MODULES = ("precedents.mcp.front", "precedents.mcp.answers")
INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"roots": {"listChanged": True}},
    "clientInfo": {"name": "claude-code", "version": "2.1.332"},
}


def request(rid: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode() + b"\n"


INITIALIZED = b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n'


def server(tmp_path: Path, cwd: Path, pythonpath: str | None = None) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
    env.update(PRECEDENTS_HOME=str(tmp_path / "state"), PRECEDENTS_CLAUDE_DIR=str(tmp_path))
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return subprocess.Popen(
        [sys.executable, "-m", "precedents.cli", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
    )


_PENDING: dict[int, bytes] = {}  # bytes read past the last whole line, by pid


def replies(proc: subprocess.Popen[bytes], count: int, timeout: float) -> list[dict[str, Any]]:
    """The next ``count`` lines the server writes, parsed (fails after ``timeout`` s)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    buffer = _PENDING.pop(proc.pid, b"")
    out: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while True:
        while b"\n" in buffer and len(out) < count:
            line, buffer = buffer.split(b"\n", 1)
            out.append(json.loads(line))
        if len(out) == count:
            _PENDING[proc.pid] = buffer
            return out
        left = deadline - time.monotonic()
        assert left > 0, f"only {out} in {timeout} s"
        if select.select([fd], [], [], left)[0]:
            chunk = os.read(fd, 1 << 20)
            assert chunk, f"the server ended after {out}"
            buffer += chunk


def finish(proc: subprocess.Popen[bytes], more: bytes = b"") -> tuple[bytes, bytes]:
    """Send ``more``, close stdin, wait for the end: (the rest of stdout, stderr)."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(more)
    proc.stdin.close()
    out = _PENDING.pop(proc.pid, b"") + proc.stdout.read()
    err = proc.stderr.read()
    proc.wait(120)
    return out, err


def test_the_early_answers_are_the_sdks() -> None:
    """What the front answers is what the SDK's server answers, at every protocol version
    (after changing a tool: `python -m precedents.mcp.handshake`)."""
    assert capture() == ANSWERS


def test_the_handshake_is_answered_while_the_sdk_is_still_loading(tmp_path: Path) -> None:
    stand_in = tmp_path / "path" / "mcp"
    stand_in.mkdir(parents=True)
    (stand_in / "__init__.py").write_text("import time\ntime.sleep(600)\n")  # never loads
    proc = server(tmp_path, tmp_path, pythonpath=str(tmp_path / "path"))
    assert proc.stdin is not None
    try:
        started = time.monotonic()
        proc.stdin.write(request(1, "initialize", INIT))
        proc.stdin.flush()
        (init,) = replies(proc, 1, timeout=30)
        took = time.monotonic() - started
        proc.stdin.write(INITIALIZED + request(2, "tools/list") + request(3, "ping", {}))
        proc.stdin.write(request(4, "prompts/list") + request(5, "resources/list"))
        proc.stdin.flush()
        lists = replies(proc, 4, timeout=30)
    finally:
        proc.kill()
        proc.wait(30)
    answers = ANSWERS["versions"]["2025-06-18"]
    assert init == {"jsonrpc": "2.0", "id": 1, "result": answers["initialize"]}
    assert [r["id"] for r in lists] == [2, 3, 4, 5]
    assert lists[0]["result"] == answers["tools/list"]
    assert {t["name"] for t in lists[0]["result"]["tools"]} == {
        "recall",
        "adr_status",
        "adr_chain",
        "adr_find",
        "remember",
    }
    assert lists[1]["result"] == {} and lists[2]["result"] == {"prompts": []}
    assert took < 5.0, took  # the goal is 0.3 s; the bound leaves room for a busy machine


def test_an_unknown_protocol_version_gets_the_latest(tmp_path: Path) -> None:
    stand_in = tmp_path / "path" / "mcp"
    stand_in.mkdir(parents=True)
    (stand_in / "__init__.py").write_text("import time\ntime.sleep(600)\n")
    proc = server(tmp_path, tmp_path, pythonpath=str(tmp_path / "path"))
    assert proc.stdin is not None
    try:
        proc.stdin.write(request(7, "initialize", {**INIT, "protocolVersion": "1999-01-01"}))
        proc.stdin.flush()
        (init,) = replies(proc, 1, timeout=30)
    finally:
        proc.kill()
        proc.wait(30)
    assert init["result"]["protocolVersion"] == ANSWERS["latest"]


def test_a_session_gets_each_reply_once_and_the_sdk_takes_over(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    shutil.copytree(REPO / "examples" / "adr", project / "docs" / "adr")
    proc = server(tmp_path, project)
    assert proc.stdin is not None
    find = {"name": "adr_find", "arguments": {"words": "queue", "dir": "docs/adr"}}
    proc.stdin.write(request(1, "initialize", INIT) + INITIALIZED + request(2, "tools/list"))
    proc.stdin.write(request(3, "tools/call", find))
    proc.stdin.flush()
    first = replies(proc, 3, timeout=120)  # the call waits for the SDK
    out, err = finish(proc, request(4, "tools/list") + request(5, "ping"))
    rest = [json.loads(line) for line in out.splitlines()]
    assert proc.returncode == 0, err
    by_id = {r["id"]: r for r in first + rest}
    assert sorted(r["id"] for r in first + rest) == [1, 2, 3, 4, 5]  # once each, no other
    assert REPLAY_ID not in json.dumps(first + rest)
    call = by_id[3]["result"]
    assert not call.get("isError") and "0003" in json.dumps(call), call
    assert by_id[4]["result"] == by_id[2]["result"]  # the SDK's own list, the same
    assert b"differs" not in err, err


def test_a_session_that_starts_otherwise_is_all_the_sdks(tmp_path: Path) -> None:
    """No `initialize` first: nothing is answered early; the SDK says what it says."""
    proc = server(tmp_path, tmp_path)
    assert proc.stdin is not None
    out, err = finish(proc, request(1, "ping") + request(2, "initialize", {"protocolVersion": 5}))
    got = [json.loads(line) for line in out.splitlines()]
    assert proc.returncode == 0, err
    assert [r["id"] for r in got] == [1, 2]
    assert got[0]["result"] == {} and "error" in got[1]


@pytest.mark.parametrize("first", [b"\n", b"not json\n", request(1, "tools/list")])
def test_what_the_front_does_not_know_reaches_the_sdk_unchanged(
    tmp_path: Path, first: bytes
) -> None:
    proc = server(tmp_path, tmp_path)
    assert proc.stdin is not None
    out, err = finish(proc, first + request(9, "initialize", INIT))
    got = [json.loads(line) for line in out.splitlines()]
    assert proc.returncode == 0, err
    init = [r for r in got if r.get("id") == 9]
    assert len(init) == 1 and init[0]["result"]["serverInfo"]["name"] == "precedents"


def test_the_front_needs_only_the_standard_library() -> None:
    """What answers the handshake loads no SDK, pydantic, typer or numpy of its own."""
    code = (
        "import json, sys; from precedents.mcp import front; "
        "assert front.early_answers() is not None; "
        "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    tops = {m.split(".")[0] for m in loaded}
    assert tops.isdisjoint({"mcp", "mcp_types", "pydantic", "typer", "numpy", "anyio"})
    ours = {m for m in loaded if m.split(".")[0] == "precedents"}
    assert ours <= {"precedents", "precedents.lazy", "precedents.mcp", *MODULES}, ours
