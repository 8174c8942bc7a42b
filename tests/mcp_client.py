"""The MCP SDK's real client over `precedents mcp` (stdio), for the tests that call tools."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any


def text_of(result: Any) -> Any:
    """A tool result's JSON (structured content when given, else its text block)."""
    if getattr(result, "structured_content", None):
        content = result.structured_content
        return content.get("result", content) if isinstance(content, dict) else content
    return json.loads(result.content[0].text)


async def session_calls(env: dict[str, str], cwd: Path, calls: list[tuple[str, dict[str, Any]]]):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "precedents.cli", "mcp"], env=env, cwd=str(cwd)
    )
    out = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        out.append(sorted(t.name for t in tools.tools))
        for name, args in calls:
            started = time.perf_counter()
            result = await session.call_tool(name, args)
            out.append((result, (time.perf_counter() - started) * 1000))
    return out
