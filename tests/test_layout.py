"""The package's shape (SPEC §1): no import cycle anywhere, and dependencies that flow
one way — sources → chunks → store → recall → daemon, CLI, MCP.

Imports are read from the source with :mod:`ast`, wherever they sit (a
deferred import inside a function still counts: deferring one is how a cycle
hides), so these tests need nothing installed and load nothing.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "precedents"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported(name: str) -> Iterator[str]:
    """The precedents modules ``name`` imports (a submodule when the name is one)."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import submodule` needs the submodule, not the package's
            # __init__ (which Python runs first for every submodule anyway).
            subs = [f"{base}.{a.name}" for a in node.names]
            targets = [t for t in subs if t in MODULES] or [base]
            if len(targets) < len(subs):
                targets.append(base)
        else:
            continue
        for target in targets:
            if target in MODULES and target != name:
                yield target


GRAPH = {name: sorted(set(imported(name))) for name in MODULES}


def cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in GRAPH:
        if v not in index:
            visit(v)
    return found


def reachable(start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for w in GRAPH[todo.pop()]:
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def test_the_import_graph_is_read() -> None:
    # Guards the checks below against a parser that sees nothing.
    assert "precedents.recall.core" in GRAPH["precedents.recall"]
    assert "precedents.store.collection" in GRAPH["precedents.recall.vectors"] or (
        "precedents.store" in GRAPH["precedents.recall.vectors"]
    )


def test_no_import_cycle_anywhere() -> None:
    assert cycles() == []


def test_the_cycle_check_fails_on_a_cycle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(GRAPH, "precedents.kinds", ["precedents.recall"])
    assert cycles()  # recall → … → kinds → recall


def under(prefix: str) -> list[str]:
    return [m for m in MODULES if m == prefix or m.startswith(prefix + ".")]


@pytest.mark.parametrize(
    ("layer", "forbidden"),
    [
        # The store takes vectors as arrays: it knows neither the model nor the readers.
        (
            "precedents.store",
            ["models", "ingest", "recall", "query_daemon", "cli", "api", "watcher"],
        ),
        # The ADR graph is standard library (and YAML) only; everything calls it. It reads
        # front matter, fences and dates with precedents.text, never with ingest code.
        (
            "precedents.adr_graph",
            ["store", "recall", "models", "ingest", "cli", "config"],
        ),
        # Masking is text in, text out: it knows no store, model or reader.
        (
            "precedents.secrets",
            ["store", "recall", "models", "ingest", "query_daemon", "cli", "api"],
        ),
        # A model turns text into vectors; it knows nothing of where they go.
        (
            "precedents.models",
            ["store", "recall", "ingest", "query_daemon", "cli", "api", "watcher"],
        ),
        # The watcher only tells the indexer which paths changed.
        ("precedents.watcher", ["recall", "query_daemon", "api", "cli"]),
        # Recall reads what ingest knows (source folders, front matter), never writes.
        ("precedents.recall", ["query_daemon", "cli", "api", "watcher", "ingest.indexer"]),
        ("precedents.ingest", ["recall", "query_daemon", "cli", "api", "watcher"]),
        # The org index is built from what ingest reads and read by the daemon as a
        # snapshot file: it knows neither the daemon, recall, the CLI nor the API.
        ("precedents.org", ["recall", "query_daemon", "cli", "api", "watcher", "mcp", "hook"]),
        # The daemon may index one note with its warm model (`remember`), as a writer.
        # The hook is one of its clients: the daemon's side reads none of its code.
        ("precedents.query_daemon", ["cli", "api", "watcher", "hook"]),
        # `check` reads files and judges them: no model, no store, no reader (a pre-commit
        # hook must start fast); the index's tokenizer it takes from precedents.text.
        (
            "precedents.check",
            [
                *("recall", "query_daemon", "cli", "api", "models", "watcher", "hook", "mcp"),
                *("store", "ingest.indexer", "ingest.sources"),
            ],
        ),
    ],
)
def test_dependencies_flow_one_way(layer: str, forbidden: list[str]) -> None:
    bad = sorted(
        f"{m} -> {w}"
        for m in under(layer)
        for w in reachable(m)
        if any(w == f"precedents.{f}" or w.startswith(f"precedents.{f}.") for f in forbidden)
    )
    assert bad == []


def test_nothing_below_the_cli_imports_it() -> None:
    cli = [m for m in MODULES if m.startswith("precedents.cli")]
    bad = sorted(f"{m} -> {w}" for m in MODULES if m not in cli for w in GRAPH[m] if w in cli)
    assert bad == []


# What Claude Code's hook runs (hook/launch.py imports only core): standard library, and
# each other alone. The daemon's starter is read only when the daemon is down or starting.
HOOK_MODULES = (
    "precedents.hook.core",
    "precedents.query_daemon",
    "precedents.query_daemon.hook_input",
    "precedents.query_daemon.starter",
    "precedents.protocol",
)


def top_imports(name: str) -> set[str]:
    """The top-level packages module ``name`` imports (absolute imports only)."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    return {
        a.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for a in node.names
    } | {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and not node.level
    }


def test_the_hook_and_protocol_need_only_the_standard_library() -> None:
    for name in HOOK_MODULES:
        assert set(GRAPH[name]) <= set(HOOK_MODULES), name
        assert top_imports(name) - {"precedents"} <= set(sys.stdlib_module_names), name


def test_the_package_root_holds_only_shared_modules() -> None:
    """The pipeline is visible in the tree (issue #22): stages and layers are packages;
    at the root only what every layer shares (settings, errors, kinds, the wire
    protocol, locks, inert rendering, lazy attributes, text helpers, the safe file
    reader) and the front door, ``api``."""
    flat = sorted(p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    # 9: ``text`` (issue #27) joined the eight, below ingest, adr_graph, check and store.
    # 10: ``files`` (issue #28), the one safe reader of a repository's files, shared by
    # ingest, adr_graph, check and rules, which may not import each other.
    assert len(flat) <= 10, flat


def test_the_text_helpers_sit_below_every_reader_of_text() -> None:
    """``precedents.text`` (Markdown front matter, fences, dates; the index's tokenizer)
    is what ingest, the ADR graph, ``check`` and the store share, so it imports none of
    them, nor any other precedents module: standard library and PyYAML only."""
    assert GRAPH["precedents.text"] == []
    top = top_imports("precedents.text")
    assert top - {"yaml"} <= set(sys.stdlib_module_names), top
    users = {m.split(".")[1] for m in MODULES for w in GRAPH[m] if w == "precedents.text"}
    assert {"adr_graph", "check", "ingest", "store"} <= users


def test_no_real_code_in_a_package_init() -> None:
    """An ``__init__.py`` holds a docstring, imports and lazy re-exports, never a
    function or a class: what a package does lives in a module named for it."""
    bad = [
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for path in PACKAGE.rglob("__init__.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    ]
    assert bad == []


def test_the_safe_reader_sits_below_every_reader_of_files() -> None:
    """``precedents.files`` (issue #28) is standard library only and imports no
    precedents module, so the indexer, the ADR graph, ``check`` and the rules all use it."""
    assert GRAPH["precedents.files"] == []
    assert top_imports("precedents.files") <= set(sys.stdlib_module_names)
    users = {m.split(".")[1] for m in MODULES for w in GRAPH[m] if w == "precedents.files"}
    assert {"adr_graph", "check", "ingest", "rules", "watcher"} <= users
