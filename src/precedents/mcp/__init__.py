"""`precedents mcp`: an MCP server (stdio) over the running daemon (SPEC §1, issue #11).

Tools: ``recall`` (the hook's ranking, selection and marks, with the live
successor of every replaced ADR), ``adr_status``, ``adr_chain``, ``adr_find``
and ``remember``. ``recall`` asks the daemon (starting it when needed, as the
hook does), so a call costs tens of milliseconds, not a model load; only when
no daemon can answer does it rank in-process. A bad argument is an MCP tool
error, never a crash of the server; every request it can read gets a reply,
malformed ones included (:mod:`precedents.mcp.transport`, issue #20), and the
ADR tools read only inside the project and the configured ADR folders.

The handshake is answered within milliseconds of the start, before the SDK
has loaded (:mod:`precedents.mcp.front`, issue #21); this package's import
loads nothing else, and :func:`build_server` loads the SDK on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from precedents.lazy import lazy_attributes

if TYPE_CHECKING:
    from precedents.mcp.run import serve
    from precedents.mcp.server import build_server


__getattr__ = lazy_attributes(__name__, {"build_server": "server", "serve": "run"})

__all__ = ["build_server", "serve"]
