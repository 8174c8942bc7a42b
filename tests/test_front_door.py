"""`api` is the front door, and the daemon's messages are typed (issue #22, items 2 and 3).

Read from the source with :mod:`ast` (nothing is imported to check the shape), what
is enforced, precisely:

1. The daemon is asked in one place: outside ``DaemonClient`` in ``protocol.py``,
   no module of the package calls a function named ``ask`` (``ask(...)``,
   ``protocol.ask(...)``, ``x.ask(...)``) or imports ``ask`` from the protocol.
2. No module that talks to the daemon or fronts it (``api``, ``cli``, ``mcp``,
   ``hook``, and ``query_daemon``'s client, server and HTTP listener) reads a
   ``"ok"``, ``"ready"`` or ``"starting"`` key (a subscript or a ``.get``): the
   client reads them, once; the daemon's ``ops.py`` writes them.
3. Every op of ``protocol.Op`` has exactly one handler in ``ops.HANDLERS`` (and
   no handler is for another op), and the client sends each op: a ``DaemonClient``
   method per op, the hook ops through ``DaemonClient.hook``.
4. A module of ``precedents.cli`` imports, at run time (outside ``if
   TYPE_CHECKING:``, where any type may be named), only these of the library:
   ``api``; its own package; ``config`` for resolving settings (``load_settings``,
   ``Settings``, ``private_umask``, ``state_dir``: nothing else of it);
   ``errors`` (a misused option is a UsageError); ``lazy`` (the package's lazy
   attributes); and the modules that only render what api returns: ``inert``,
   ``adr_graph.view``, ``adr_graph.model`` (names and constants). Only ``cli/mcp.py``
   and ``cli/fast.py`` may import ``precedents.mcp``: they start the MCP server, whose
   tools are held to 6.
5. Every command attached with ``add_commands`` calls ``api.<something>``,
   itself or through functions of its module it calls, except ``mcp`` (see 4).
6. ``mcp/server.py`` imports from the library only ``api``, ``config``,
   ``errors`` and its own package (types under TYPE_CHECKING), and every
   ``@server.tool`` function calls ``api``, itself or through its module's functions.
7. No front end (``cli``, ``mcp``) builds an ADR graph: ``build_graph(`` is
   called in ``api.adr_graph`` and below it, never above.

Then the behaviour the front door buys: a broken config is one line, the same one,
for `precedents adr` (once: it ran unconfigured) as for every other command; the
MCP `recall` tool is one round trip, logged as the two ops it answers.
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "precedents"
MODULES = {p: ast.parse(p.read_text(encoding="utf-8")) for p in sorted(PACKAGE.rglob("*.py"))}
CLI = sorted(p for p in MODULES if p.parent.name == "cli")
PROTOCOL = PACKAGE / "protocol.py"
OPS = PACKAGE / "query_daemon" / "ops.py"
MCP_SERVER = PACKAGE / "mcp" / "server.py"
TALKERS = [
    p
    for p in MODULES
    if p.parent.name in ("cli", "mcp", "hook")
    or p == PACKAGE / "api.py"
    or (p.parent.name == "query_daemon" and p.stem in ("client", "server", "http"))
]


def rel(path: Path) -> str:
    return str(path.relative_to(PACKAGE))


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and (
        (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")
    )


def runtime_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` but those of ``if TYPE_CHECKING:`` blocks."""
    for child in ast.iter_child_nodes(node):
        if _is_type_checking(child):
            continue
        yield child
        yield from runtime_nodes(child)


def library_imports(tree: ast.AST, package: str) -> Iterator[tuple[str, list[str], int]]:
    """(module, names, line) of each run-time import of a ``precedents`` module."""
    for node in runtime_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("precedents"):
                    yield alias.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                module = ".".join([*package.split(".")[: 1 - node.level or None], module])
            if module == "precedents":  # `from precedents import api`: the module is the name
                for alias in node.names:
                    yield f"precedents.{alias.name}", [], node.lineno
            elif module.startswith("precedents."):
                yield module, [a.name for a in node.names], node.lineno


def calls_named(tree: ast.AST, name: str) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Name) and func.id == name) or (
                isinstance(func, ast.Attribute) and func.attr == name
            ):
                yield node


def functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """The module's functions, nested ones (a command's helpers, the MCP tools) included."""
    return {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


def reaches_api(fn: ast.FunctionDef, local: dict[str, ast.FunctionDef]) -> bool:
    """Whether ``fn`` calls ``api.<x>``, itself or through the module functions it calls."""
    seen: set[str] = set()
    todo = [fn]
    while todo:
        here = todo.pop()
        for node in ast.walk(here):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "api"
            ):
                return True
            if isinstance(func, ast.Name) and func.id in local and func.id not in seen:
                seen.add(func.id)
                todo.append(local[func.id])
    return False


# -- 1, 2, 3: the daemon's messages ---------------------------------------------------


def client_class() -> ast.ClassDef:
    return next(
        n
        for n in MODULES[PROTOCOL].body
        if isinstance(n, ast.ClassDef) and n.name == "DaemonClient"
    )


def test_the_daemon_is_asked_by_its_client_alone() -> None:
    inside = {id(c) for c in calls_named(client_class(), "ask")}
    assert inside, "the client asks the daemon through `ask`"
    bad = [
        f"{rel(path)}:{call.lineno}"
        for path, tree in MODULES.items()
        for call in calls_named(tree, "ask")
        if id(call) not in inside
    ]
    bad += [
        f"{rel(path)}:{line} imports ask"
        for path, tree in MODULES.items()
        for module, names, line in library_imports(tree, "precedents")
        if module == "precedents.protocol" and "ask" in names
    ]
    assert bad == []


def test_only_the_client_reads_ok_ready_and_starting() -> None:
    flags = {"ok", "ready", "starting"}
    bad = []
    for path in TALKERS:
        for node in ast.walk(MODULES[path]):
            key = None
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                key = node.slice.value
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                key = node.args[0].value
            if key in flags:
                bad.append(f"{rel(path)}:{node.lineno} reads {key!r}")
    assert bad == []


def protocol_ops() -> set[str]:
    """The strings of ``Op = Literal[...]`` in protocol.py."""
    for node in ast.walk(MODULES[PROTOCOL]):
        if (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == ["Op"]
            and isinstance(node.value, ast.Subscript)
        ):
            elements = node.value.slice
            assert isinstance(elements, ast.Tuple)
            return {e.value for e in elements.elts if isinstance(e, ast.Constant)}
    raise AssertionError("protocol.py defines no Op")


def test_every_op_has_one_handler_and_a_client_method() -> None:
    from precedents.query_daemon.ops import HANDLERS

    ops = protocol_ops()
    assert len(ops) == 11 and set(HANDLERS) == ops
    hook_ops = {"context", "session", "file", "instructions"}
    methods = {n.name for n in client_class().body if isinstance(n, ast.FunctionDef)}
    assert ops - hook_ops <= methods and "hook" in methods
    sent = {
        node.values[0].value
        for node in ast.walk(client_class())
        if isinstance(node, ast.Dict)
        and node.keys
        and isinstance(node.keys[0], ast.Constant)
        and node.keys[0].value == "op"
        and isinstance(node.values[0], ast.Constant)
    }
    assert sent == ops - hook_ops  # the hook's requests are built by the hook (hook/core.py)


def test_an_op_that_is_no_string_is_unknown(home: Path) -> None:
    from precedents.query_daemon.server import Daemon
    from tests.conftest_daemon import FakeRecall, settings_for

    daemon = Daemon(settings_for(home), recall_factory=lambda s: FakeRecall())
    for op in (["ping"], {"op": 1}, None, "pong"):
        reply = daemon._dispatch({"op": op})
        assert reply.answer == {"ok": False, "error": f"unknown op {op!r}"}


# -- 4, 5, 6, 7: the front door -------------------------------------------------------

ALLOWED = {
    "precedents.api",
    "precedents.lazy",
    "precedents.config",
    "precedents.errors",
    "precedents.inert",
    "precedents.adr_graph.view",
    "precedents.adr_graph.model",
}
CONFIG_NAMES = {"load_settings", "Settings", "private_umask", "state_dir"}
STARTS_MCP = {"mcp.py", "fast.py"}
# `remember` on the fast path starts the daemon before its imports (issue #29): stdlib and
# the protocol only, like the MCP front.
STARTS_DAEMON = {"fast.py": "precedents.query_daemon.handover"}


def test_the_cli_imports_only_the_front_door() -> None:
    bad = []
    for path in CLI:
        for module, names, line in library_imports(MODULES[path], "precedents.cli"):
            if module == "precedents.cli" or module.startswith("precedents.cli."):
                continue
            if module.startswith("precedents.mcp") and path.name in STARTS_MCP:
                continue
            if STARTS_DAEMON.get(path.name) == module:
                continue
            if module not in ALLOWED:
                bad.append(f"{rel(path)}:{line} {module}")
            elif module == "precedents.config" and not set(names) <= CONFIG_NAMES:
                bad.append(f"{rel(path)}:{line} config.{sorted(set(names) - CONFIG_NAMES)}")
    assert bad == []


def commands(tree: ast.Module) -> dict[str, str]:
    """Command name -> function, from each ``add_commands(app, {...})`` of a module."""
    found = {}
    for call in calls_named(tree, "add_commands"):
        table = call.args[1]
        assert isinstance(table, ast.Dict)
        for key, value in zip(table.keys, table.values, strict=True):
            assert isinstance(key, ast.Constant) and isinstance(value, ast.Name)
            found[key.value] = value.id
    return found


def test_every_command_calls_api() -> None:
    seen, bad = set(), []
    for path in CLI:
        tree = MODULES[path]
        local = functions(tree)
        for name, fn in commands(tree).items():
            seen.add(name)
            if name != "mcp" and not reaches_api(local[fn], local):
                bad.append(f"{rel(path)}: {name}")
    assert bad == []
    # Guards the check against a parser that finds nothing.
    assert {"serve", "install-hook", "watch", "query", "why", "list", "install", "mcp"} <= seen


def test_every_mcp_tool_calls_api() -> None:
    tree = MODULES[MCP_SERVER]
    bad = [
        f"{module}:{line}"
        for module, _, line in library_imports(tree, "precedents.mcp")
        if module not in {"precedents.api", "precedents.config", "precedents.errors"}
        and not module.startswith("precedents.mcp.")
    ]
    local = functions(tree)
    tools = [
        fn
        for fn in local.values()
        if any(
            isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "tool"
            for d in fn.decorator_list
        )
    ]
    assert len(tools) == 5
    bad += [fn.name for fn in tools if not reaches_api(fn, local)]
    assert bad == []


def test_no_front_end_builds_an_adr_graph() -> None:
    fronts = [p for p in MODULES if p.parent.name in ("cli", "mcp")]
    bad = [f"{rel(p)}:{c.lineno}" for p in fronts for c in calls_named(MODULES[p], "build_graph")]
    assert bad == []
    api = functions(MODULES[PACKAGE / "api.py"])
    assert [f for f, fn in api.items() if list(calls_named(fn, "build_graph"))] == ["adr_graph"]


# -- what it buys -----------------------------------------------------------------------


ADR = "# 1. Use A\n\nDate: 2024-01-01\n\n## Status\n\nAccepted\n\n## Decision\n\nUse A.\n"


def test_a_broken_config_is_the_same_one_line_for_adr_as_for_every_command(
    home: Path, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from precedents.cli.app import app  # the module: once imported it shadows the lazy name
    from precedents.config import load_settings
    from precedents.errors import ConfigError

    folder = tmp_path / "adr"
    folder.mkdir()
    (folder / "0001-use-a.md").write_text(ADR)
    runner = CliRunner()
    assert runner.invoke(app, ["adr", "list", "--dir", str(folder)]).exit_code == 0
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("model = [broken\n")
    with pytest.raises(ConfigError) as broken:
        load_settings()
    line = f"precedents: {broken.value}\n"
    for args in (["adr", "list", "--dir", str(folder)], ["adr", "check"], ["status"]):
        out = runner.invoke(app, args)
        assert (out.exit_code, out.stderr) == (2, line), args


def test_the_mcp_adr_tools_and_the_cli_read_the_same_graph(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from precedents import api
    from precedents.config import load_settings
    from precedents.errors import UsageError

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "docs" / "adr").mkdir(parents=True)
    (project / "docs" / "adr" / "0001-use-a.md").write_text(ADR)
    monkeypatch.chdir(project)
    settings = load_settings()
    cli = api.adr_graph(settings)  # `precedents adr list`, no --dir
    mcp = api.adr_graph(settings, "docs/adr", confined=True)  # adr_status(dir="docs/adr")
    assert [r.path for r in cli] == [r.path for r in mcp] == ["0001-use-a.md"]
    with pytest.raises(UsageError, match="outside the project"):
        api.adr_graph(settings, str(tmp_path), confined=True)
    assert [r.path for r in api.adr_graph(settings, tmp_path / "project" / "docs" / "adr")]


class RankingRecall:
    """A recall that answers the prompt hook and `query` without a model."""

    embedder = type("E", (), {"model_id": "fake"})()

    def context(self, text: str, cwd: str, **_: Any) -> Any:
        from precedents.recall.answer import Answer

        return Answer(f"ctx {cwd}", project=cwd)

    def query(self, text: str, project: str | None, k: int) -> dict[str, Any]:
        row = {"kind": "note", "path": "a.md", "score": 0.5}
        return {"project": project, "results": [row] * k}

    def refresh(self, now: bool = False) -> bool:
        return False

    def close(self) -> None:
        pass


def test_mcp_recall_is_one_round_trip_logged_as_context_and_query(
    home: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from precedents import api, protocol
    from precedents.query_daemon.server import Daemon
    from tests.conftest_daemon import run_in_thread, settings_for

    settings = settings_for(home)
    daemon = Daemon(settings, recall_factory=lambda s: RankingRecall())
    thread, _ = run_in_thread(daemon)
    sent: list[str] = []
    ask = protocol.ask

    def counted(request: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(str(request["op"]))
        return ask(request, *args, **kwargs)

    monkeypatch.setattr(protocol, "ask", counted)
    try:
        with caplog.at_level(logging.INFO, logger="precedents.daemon"):
            result = api.recall(settings, "how do I shelve untracked files?", str(tmp_path), 2)
    finally:
        daemon.stop()
        thread.join(10)
    assert sent == ["recall"]
    assert result["via"] == "daemon" and result["injected"] == f"ctx {result['project']}"
    assert len(result["records"]) == 2
    answers = [r.getMessage() for r in caplog.records if r.getMessage().startswith("answer ")]
    assert [a.split('"op": ')[1].split(",")[0] for a in answers] == ['"context"', '"query"']
