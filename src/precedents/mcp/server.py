"""The MCP tools, each one library call; errors become MCP tool errors.

The ADR tools read only inside the server's project and the configured ADR
folders: ``dir="/"`` once walked the whole filesystem (issue #20). What they
return is rendered by :class:`precedents.adr_graph.view.AdrView`: ADR text is
data, never instructions (docs/adr-graph.md, "Output is inert").
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from precedents import api
from precedents.config import Settings, load_settings
from precedents.errors import PrecedentsError, UsageError
from precedents.mcp.muted import MutedAdrs
from precedents.mcp.transport import stdio_transport

if TYPE_CHECKING:
    from precedents.adr_graph.view import AdrView

MAX_K = 50
MAX_PATH_CHARS = 4096
MAX_WORDS = 64
SCOPES = ("personal", "team")  # the `remember` tool's: where the note is written


def _path_arg(name: str, value: str) -> str:
    """A path argument as the OS can take it, or a one-line refusal."""
    if "\0" in value or len(value) > MAX_PATH_CHARS:
        raise UsageError(f"{name}: not a usable path")
    return value


def recall(settings: Settings, query: str, project: str | None, k: int) -> dict[str, Any]:
    """What the hook would inject for ``query`` in ``project``, and the ranked records
    (one round trip to the daemon: :func:`precedents.api.recall`)."""
    if not query.strip():
        raise ToolError("query is empty")
    if not 1 <= k <= MAX_K:
        raise ToolError(f"k must be between 1 and {MAX_K}")
    return dict(api.recall(settings, query, _path_arg("project", project) if project else None, k))


def _view(settings: Settings, folder: str | None) -> tuple[AdrView, MutedAdrs]:
    """The ADR graph an agent asked for, confined to the project and the configured ADR
    folders (:func:`precedents.api.adr_graph`), and its records the user muted (their
    words withheld from every answer: mcp/muted.py)."""
    view = api.adr_view(settings, folder, confined=True)
    return view, MutedAdrs.of(settings, view)


class _StdioServer(MCPServer):
    """The SDK's server on our stdio transport (:mod:`precedents.mcp.transport`), which
    answers every request it reads, malformed ones included."""

    async def run_stdio_async(self) -> None:
        lowlevel = self._lowlevel_server
        async with stdio_transport() as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


def build_server(settings: Settings | None = None) -> MCPServer:
    """The server with its five tools (``settings`` resolved once, at start)."""
    conf = settings or load_settings()
    server: MCPServer = _StdioServer(
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

    # The ADR tools answer through AdrView (adr_graph/view.py), as `precedents adr` does:
    # every field inert, a suspect record as its id, path and mark, errors one inert line.
    @server.tool(name="adr_status")
    @guarded
    def adr_status(id: str, dir: str | None = None) -> dict[str, Any]:
        """An ADR's effective status and mark, by id, number or path."""
        view, muted = _view(conf, dir)
        return muted.row(view.record(view.get(id)))

    @server.tool(name="adr_chain")
    @guarded
    def adr_chain(id: str, dir: str | None = None) -> dict[str, Any]:
        """From an ADR, the replacements up to the decision in force: current, history;
        each record's text as `lines` (none for a suspect record)."""
        view, muted = _view(conf, dir)
        return muted.chain(view.chain(id))

    @server.tool(name="adr_find")
    @guarded
    def adr_find(words: str, dir: str | None = None) -> list[dict[str, Any]]:
        """ADRs whose title or text holds every word, with their statuses and marks."""
        wanted = words.split()
        if len(wanted) > MAX_WORDS:  # each word is looked for in every ADR's text
            raise UsageError(f"words: at most {MAX_WORDS} words, not {len(wanted)}")
        view, muted = _view(conf, dir)
        return [muted.row(r) for r in view.find(wanted)]

    @server.tool(name="remember")
    @guarded
    def remember(
        text: str,
        title: str | None = None,
        project: str | None = None,
        scope: Literal["personal", "team"] = "personal",
    ) -> dict[str, Any]:
        """Save a memory note (secrets masked): with `scope` personal (the default) in the
        project's Claude Code memory folder; team: in its repository's team notes, to be
        committed (`git_add` in the answer stages it; nothing is committed)."""
        if scope not in SCOPES:
            raise UsageError(f"scope must be one of {', '.join(SCOPES)}, not {str(scope)[:40]!r}")
        return api.remember(conf, text, title=title, project=project, team=scope == "team")

    return server


def serve(settings: Settings | None = None) -> None:
    """Run the server on stdin/stdout until the client closes it."""
    build_server(settings).run("stdio")
