"""`precedents mcp` answers a real MCP client session (the SDK's stdio client) for every
tool, marks intact; a bad argument is an MCP error, not a crash (issue #11, item 2).

Real parts: the dev notes and ADRs indexed with the bundled model, the daemon
as a subprocess, the server as `python -m precedents.cli mcp`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import (  # noqa: E402 - after the rewrite registration
    ADR_PROMPT,
    RELATED,
    RELATED_NOTE,
    DevState,
    copy_state,
    hook_env,
    running_daemon,
)
from tests.mcp_client import session_calls, text_of  # noqa: E402

pytest_plugins = ["tests.conftest_daemon"]


@pytest.mark.slow
def test_every_tool_through_a_real_client(dev_state: DevState, tmp_path: Path) -> None:
    home = copy_state(dev_state, tmp_path)
    claude = tmp_path / "claude"
    claude.mkdir()
    env = hook_env(home, PRECEDENTS_CLAUDE_DIR=str(claude))
    project = dev_state.project
    with running_daemon(home):
        calls = [
            ("recall", {"query": RELATED, "project": str(project)}),
            ("recall", {"query": ADR_PROMPT, "project": str(project), "k": 3}),
            ("adr_status", {"id": "1", "dir": str(dev_state.adrs)}),
            ("adr_chain", {"id": "1", "dir": str(dev_state.adrs)}),
            ("adr_find", {"words": "load balancer", "dir": str(dev_state.adrs)}),
            ("remember", {"text": "Ship on Tuesdays only.", "project": str(project)}),
            ("recall", {"query": RELATED, "k": 0}),  # bad argument
            ("adr_status", {"id": "42", "dir": str(dev_state.adrs)}),  # no such ADR
            ("recall", {"query": RELATED, "project": str(project)}),  # still serving
        ]
        out = asyncio.run(session_calls(env, project, calls))
    assert out[0] == ["adr_chain", "adr_find", "adr_status", "recall", "remember"]
    results = [r for r, _ in out[1:]]
    for result in results[:6]:
        assert not result.is_error, result
    related = text_of(results[0])
    assert related["via"] == "daemon" and RELATED_NOTE in related["injected"]
    assert related["records"][0]["path"].endswith(RELATED_NOTE)
    adr = text_of(results[1])
    first = next(
        r for r in adr["records"] if r["path"].endswith("0001-store-login-sessions-in-mysql.md")
    )
    assert first["mark"].startswith("⚠️superseded → ")  # the mark names the successor
    assert "0002-keep-login-sessions-in-redis.md" in adr["injected"]  # shown with it
    assert text_of(results[2])["status"] == "superseded"
    assert text_of(results[3])["current"] in ("2", "0002", "ADR-0002")
    assert [r["path"] for r in text_of(results[4])] == ["0003-deploy-with-blue-green.md"]
    assert Path(text_of(results[5])["path"]).exists()
    assert results[6].is_error and results[7].is_error
    assert not results[8].is_error
    assert out[9][1] < 5000  # a warm call asks the daemon (figures: docs/benchmarks.md)
