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
    from precedents.config import Settings
    from precedents.mcp.front import Front
    from precedents.mcp.server import build_server


def serve(settings: Settings | None = None, *, front: Front | None = None) -> None:
    """Run the server on stdin/stdout until the client closes it.

    ``front``: one already answering the handshake (the CLI starts it before
    anything else loads); by default one is started here.
    """
    from precedents.mcp.front import Front

    front = front or Front.start()
    from precedents.mcp.server import serve as serve_sdk  # the SDK: ~0.7 s of CPU

    if front is not None:
        front.sdk_starting()
    try:
        serve_sdk(settings)
    finally:
        if front is not None:
            front.finish()


__getattr__ = lazy_attributes(__name__, {"build_server": "server"})

__all__ = ["build_server", "serve"]
