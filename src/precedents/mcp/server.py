"""The MCP tools, each one library call; errors become MCP tool errors."""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from precedents import api, protocol
from precedents.adr_graph import AdrGraph, build_graph, default_adr_dir
from precedents.config import Settings, load_settings
from precedents.errors import PrecedentsError
from precedents.secrets import mask_secrets
from precedents.sources import project_root

# How long a tool call waits for a daemon it just started (the model loads in seconds).
START_WAIT_S = 30.0
ASK_S = 10.0
MAX_K = 50


def _ready(settings: Settings) -> bool:
    try:
        return bool(protocol.ask({"op": "ping"}, 2.0, str(settings.run_dir)).get("ready"))
    except protocol.Unavailable:
        return False


def ensure_daemon(settings: Settings, wait_s: float = START_WAIT_S) -> bool:
    """A ready daemon, started in the background when none runs (as the hook does)."""
    if _ready(settings):
        return True
    from precedents.hook import start_daemon

    start_daemon(str(settings.home))
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if _ready(settings):
            return True
        time.sleep(0.2)
    return False


def recall(settings: Settings, query: str, project: str | None, k: int) -> dict[str, Any]:
    """What the hook would inject for ``query`` in ``project``, and the ranked records."""
    if not query.strip():
        raise ToolError("query is empty")
    if not 1 <= k <= MAX_K:
        raise ToolError(f"k must be between 1 and {MAX_K}")
    root = project_root(project or Path.cwd())
    injected = None
    if ensure_daemon(settings):
        try:
            answer = protocol.ask(
                {"op": "context", "prompt": query, "cwd": root}, ASK_S, str(settings.run_dir)
            )
            injected = answer.get("context") if answer.get("ok") else None
        except protocol.Unavailable:
            injected = None
    else:
        injected = api.auto_context(settings, query, project=root)
    ranked = api.query(settings, query, project=root, k=k)
    return {
        "project": root,
        "injected": injected,  # the hook's lines: marks, successors, byte cap
        "records": ranked["results"],  # ranked, each ADR with its mark (naming its successor)
        "via": ranked["via"],
    }


def _graph(settings: Settings, folder: str | None) -> AdrGraph:
    target = Path(folder).expanduser() if folder else default_adr_dir(Path.cwd(), settings.adrs)
    return build_graph(target, settings.cache_dir / "adr", mask_secrets)


def build_server(settings: Settings | None = None) -> MCPServer:
    """The server with its five tools (``settings`` resolved once, at start)."""
    conf = settings or load_settings()
    server: MCPServer = MCPServer(
        "precedents",
        instructions=(
            "Recall the user's stored judgment (memory notes, shared rules, ADRs) for a task; "
            "ADR marks say when a decision was replaced and by which one."
        ),
    )

    def guarded(fn: Any) -> Any:
        # wraps() keeps the signature visible (inspect follows __wrapped__): the
        # tool's parameter schema is built from it.
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except PrecedentsError as exc:
                raise ToolError(str(exc)) from None

        return call

    @server.tool(name="recall")
    @guarded
    def recall_tool(query: str, project: str | None = None, k: int = 5) -> dict[str, Any]:
        """Stored notes, rules and ADRs that may apply to `query` in `project` (a path;
        default: the server's folder): the hook's injected lines and the top `k` records."""
        return recall(conf, query, project, k)

    @server.tool(name="adr_status")
    @guarded
    def adr_status(id: str, dir: str | None = None) -> dict[str, Any]:
        """An ADR's effective status and mark, by id, number or path."""
        return _graph(conf, dir).get(id).as_dict()

    @server.tool(name="adr_chain")
    @guarded
    def adr_chain(id: str, dir: str | None = None) -> dict[str, Any]:
        """From an ADR, the replacements up to the decision in force: current, history."""
        packet: dict[str, Any] = _graph(conf, dir).chain(id)
        return packet

    @server.tool(name="adr_find")
    @guarded
    def adr_find(words: str, dir: str | None = None) -> list[dict[str, Any]]:
        """ADRs whose title or text holds every word, with their statuses and marks."""
        return [r.as_dict() for r in _graph(conf, dir).find(words.split())]

    @server.tool(name="remember")
    @guarded
    def remember(text: str, title: str | None = None, project: str | None = None) -> dict[str, Any]:
        """Save a memory note (secrets masked) in the project's Claude Code memory folder."""
        return api.remember(conf, text, title=title, project=project)

    return server


def serve(settings: Settings | None = None) -> None:
    """Run the server on stdin/stdout until the client closes it."""
    build_server(settings).run("stdio")
