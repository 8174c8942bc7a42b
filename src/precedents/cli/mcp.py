"""`mcp`: the MCP server on stdio.

Register it with `claude mcp add precedents -- precedents mcp` (the plugin does it too).
"""

from __future__ import annotations

import typer

from precedents.cli.common import add_commands


def mcp() -> None:
    """Serve the MCP tools (recall, adr_status, adr_chain, adr_find, remember) on stdio."""
    from precedents.mcp import serve

    serve()


def register(app: typer.Typer) -> None:
    """Add `mcp` to the main command line."""
    add_commands(app, {"mcp": mcp})
