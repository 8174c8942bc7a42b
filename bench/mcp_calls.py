"""MCP tool calls through a real SDK client on a warm daemon, and remember → searchable.

    .venv/bin/python bench/mcp_calls.py --home .state/demo [--runs 30]

Starts the daemon on ``--home`` (an indexed state folder, e.g. the demo one
`make run` builds), opens one stdio session with `precedents mcp`, and times
``recall`` and ``adr_find`` calls (client side, round trip), then ``remember``
followed by ``recall`` until the new note ranks (the save → searchable time).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
QUESTIONS = [
    "can I store prices as floats?",
    "add a background job queue for sending emails",
    "write a test that talks to stripe",
    "which database do we use for search?",
]


def figures(ms: list[float]) -> str:
    s = sorted(ms)
    p95 = s[int(0.95 * (len(s) - 1))]
    return f"p50 {statistics.median(s):.0f} ms, p95 {p95:.0f} ms, max {s[-1]:.0f} ms"


async def measure(env: dict[str, str], runs: int) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "precedents.cli", "mcp"], env=env, cwd=str(REPO)
    )
    out: dict[str, Any] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool("recall", {"query": QUESTIONS[0], "project": str(REPO)})
        for tool, make in (
            ("recall", lambda i: {"query": QUESTIONS[i % 4], "project": str(REPO)}),
            ("adr_find", lambda i: {"words": "queue", "dir": str(REPO / "examples" / "adr")}),
        ):
            samples = []
            for i in range(runs):
                started = time.perf_counter()
                result = await session.call_tool(tool, make(i))
                samples.append((time.perf_counter() - started) * 1000)
                assert not result.is_error, result
            out[tool] = figures(samples)
        saved = time.perf_counter()
        result = await session.call_tool(
            "remember",
            {"text": "Invoices are numbered per country, gap-free.", "project": str(REPO)},
        )
        path = json.loads(result.content[0].text)["path"]
        while time.perf_counter() - saved < 30:
            found = await session.call_tool(
                "recall", {"query": "invoice numbering", "project": str(REPO)}
            )
            if path in found.content[0].text:
                break
        out["remember → searchable"] = f"{(time.perf_counter() - saved) * 1000:.0f} ms"
        Path(path).unlink()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    claude = Path(tempfile.mkdtemp(prefix="precedents-bench-claude-"))
    env = {
        **os.environ,
        "PRECEDENTS_HOME": str(args.home.resolve()),
        "PRECEDENTS_CLAUDE_DIR": str(claude),
    }
    daemon = subprocess.Popen(
        [sys.executable, "-m", "precedents.query_daemon"], env=env, stdout=subprocess.DEVNULL
    )
    try:
        from precedents import protocol

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if protocol.ask({"op": "ping"}, 2.0, str(args.home / "run")).get("ready"):
                    break
            except protocol.Unavailable:
                pass
            time.sleep(0.2)
        for key, value in asyncio.run(measure(env, args.runs)).items():
            print(f"{key:<22} {value}")
    finally:
        daemon.terminate()
        daemon.wait(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
