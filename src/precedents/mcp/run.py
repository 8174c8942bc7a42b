"""`precedents mcp`: the early front answers the handshake, then the SDK server takes over."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from precedents.config import Settings
    from precedents.mcp.front import Front


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
