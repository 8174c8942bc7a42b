"""The MCP tools, each one library call; errors become MCP tool errors.

The ADR tools read only inside the server's project and the configured ADR
folders: ``dir="/"`` once walked the whole filesystem (issue #20). What they
return is rendered by :class:`precedents.adr_graph.view.AdrView`: ADR text is
data, never instructions (docs/adr-graph.md, "Output is inert").
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from precedents import api, protocol
from precedents.adr_graph import build_graph, default_adr_dir
from precedents.adr_graph.view import AdrView
from precedents.config import Settings, load_settings
from precedents.errors import PrecedentsError, UsageError
from precedents.ingest.sources import project_root
from precedents.kinds import git_root
from precedents.mcp.transport import stdio_transport
from precedents.secrets.mask import mask_secrets

# How long a tool call waits for a daemon it just started (the model loads in seconds).
START_WAIT_S = 30.0
ASK_S = 10.0
MAX_K = 50
MAX_PATH_CHARS = 4096
MAX_WORDS = 64


def _ready(settings: Settings) -> bool:
    try:
        return bool(protocol.ask({"op": "ping"}, 2.0, str(settings.run_dir)).get("ready"))
    except protocol.Unavailable:
        return False


def ensure_daemon(settings: Settings, wait_s: float = START_WAIT_S) -> bool:
    """A ready daemon, started in the background when none runs (as the hook does)."""
    if _ready(settings):
        return True
    from precedents.hook.core import start_daemon

    start_daemon(str(settings.home))
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if _ready(settings):
            return True
        time.sleep(0.2)
    return False


def _path_arg(name: str, value: str) -> str:
    """A path argument as the OS can take it, or a one-line refusal."""
    if "\0" in value or len(value) > MAX_PATH_CHARS:
        raise UsageError(f"{name}: not a usable path")
    return value


def recall(settings: Settings, query: str, project: str | None, k: int) -> dict[str, Any]:
    """What the hook would inject for ``query`` in ``project``, and the ranked records."""
    if not query.strip():
        raise ToolError("query is empty")
    if not 1 <= k <= MAX_K:
        raise ToolError(f"k must be between 1 and {MAX_K}")
    # As the hook does: the model reads no more than the start of a long text.
    query = protocol.clip_prompt(query)
    root = project_root(_path_arg("project", project) if project else Path.cwd())
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


def adr_roots(settings: Settings, cwd: Path) -> list[Path]:
    """The folders the ADR tools may read: the server's project (its git root) and the
    configured ADR folders and repositories, symlinks resolved.

    A "project" that is the filesystem root or the home folder (a server started
    outside any repository) is no project: it would open everything again.
    """
    roots = [Path(p).expanduser().resolve() for p in (*settings.adrs, *settings.repos)]
    project = git_root(cwd).resolve()
    if project != Path(project.anchor) and project != Path.home().resolve():
        roots.append(project)
    return roots


def adr_folder(settings: Settings, folder: str | None, cwd: Path | None = None) -> Path:
    """The ADR folder a tool call reads: ``folder`` when it lies inside :func:`adr_roots`,
    else the project's default one. Raises :class:`UsageError` for any other place."""
    cwd = cwd or Path.cwd()
    if not folder:
        return default_adr_dir(cwd, settings.adrs)
    target = Path(_path_arg("dir", folder)).expanduser()
    real = (target if target.is_absolute() else cwd / target).resolve()
    roots = adr_roots(settings, cwd)
    if any(real == root or root in real.parents for root in roots):
        return real
    allowed = ", ".join(str(r) for r in roots) or "none (no project here, none configured)"
    raise UsageError(
        f"dir {folder[:200]!r} is outside the project and the configured ADR folders "
        f"(allowed: {allowed})"
    )


def _view(settings: Settings, folder: str | None) -> AdrView:
    graph = build_graph(adr_folder(settings, folder), settings.cache_dir / "adr", mask_secrets)
    return AdrView(graph)


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
        view = _view(conf, dir)
        return view.record(view.get(id))

    @server.tool(name="adr_chain")
    @guarded
    def adr_chain(id: str, dir: str | None = None) -> dict[str, Any]:
        """From an ADR, the replacements up to the decision in force: current, history;
        each record's text as `lines` (none for a suspect record)."""
        return _view(conf, dir).chain(id)

    @server.tool(name="adr_find")
    @guarded
    def adr_find(words: str, dir: str | None = None) -> list[dict[str, Any]]:
        """ADRs whose title or text holds every word, with their statuses and marks."""
        wanted = words.split()
        if len(wanted) > MAX_WORDS:  # each word is looked for in every ADR's text
            raise UsageError(f"words: at most {MAX_WORDS} words, not {len(wanted)}")
        return _view(conf, dir).find(wanted)

    @server.tool(name="remember")
    @guarded
    def remember(text: str, title: str | None = None, project: str | None = None) -> dict[str, Any]:
        """Save a memory note (secrets masked) in the project's Claude Code memory folder."""
        return api.remember(conf, text, title=title, project=project)

    return server


def serve(settings: Settings | None = None) -> None:
    """Run the server on stdin/stdout until the client closes it."""
    build_server(settings).run("stdio")
