"""`precedents mcp`: an MCP server (stdio) over the running daemon (SPEC §1, issue #11).

Tools: ``recall`` (the hook's ranking, selection and marks, with the live
successor of every replaced ADR), ``adr_status``, ``adr_chain``, ``adr_find``
and ``remember``. ``recall`` asks the daemon (starting it when needed, as the
hook does), so a call costs tens of milliseconds, not a model load; only when
no daemon can answer does it rank in-process. A bad argument is an MCP tool
error, never a crash of the server; every request it can read gets a reply,
malformed ones included (:mod:`precedents.mcp.transport`, issue #20), and the
ADR tools read only inside the project and the configured ADR folders.
"""

from precedents.mcp.server import build_server, serve

__all__ = ["build_server", "serve"]
