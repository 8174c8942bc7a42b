"""Research, benchmarks and scripts use precedents' public API only (issue #22 item 6).

A name that starts with ``_`` is private to its module's package: nothing outside may
import it or reach it as an attribute, so the package can change it freely. Read
from the source with :mod:`ast` (nothing is imported or installed), over:

- ``bench/``, ``research/``, ``scripts/``: no private name of precedents at all;
- ``src/precedents``: no private name of *another* package. A package is a folder
  under ``src/precedents`` (``precedents.recall``, ``precedents.cli``, ...); the
  modules at the root (``config``, ``protocol``, ...) are one package of their own.

Flagged, where ``_x`` is private (``__x__`` names are not):
- ``from precedents.m import _x`` (and the relative form, resolved);
- ``import precedents.m._x`` and ``from precedents._m import x`` (a private module);
- ``m._x`` where ``m`` was bound by an import of precedents (``import precedents.m``,
  ``import precedents.m as m``, ``from precedents import m``, ``from precedents.m import
  Name`` then ``Name._x``).

``tests/`` may use private names: a test may look inside what it tests.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
PACKAGE = SRC / "precedents"
OUTSIDE = ("bench", "research", "scripts")
SKIP = {".venv", "__pycache__", "data", "fixtures", "build"}


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def module_of(path: Path) -> str:
    """``src/precedents/recall/core.py`` -> ``precedents.recall.core``."""
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(dotted: str) -> str:
    """The package a precedents name belongs to: ``precedents.X`` when ``X`` is a folder
    under src/precedents, else ``precedents`` (the root modules)."""
    parts = dotted.split(".")
    if len(parts) > 1 and (PACKAGE / parts[1]).is_dir():
        return ".".join(parts[:2])
    return "precedents"


def sources() -> Iterator[Path]:
    for top in (PACKAGE, *(REPO / d for d in OUTSIDE)):
        for path in sorted(top.rglob("*.py")):
            if not SKIP & set(path.relative_to(REPO).parts):
                yield path


def violations(path: Path, source: str | None = None) -> list[str]:
    """``"file:line -> dotted name"`` for every private precedents name ``path`` uses."""
    tree = ast.parse(source if source is not None else path.read_text(encoding="utf-8"))
    rel = path.relative_to(REPO).as_posix()
    inside = path.is_relative_to(PACKAGE)
    here = module_of(path) if inside else ""
    anchor = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found: list[str] = []
    bound: dict[str, str] = {}  # local name -> the precedents name it stands for

    def check(line: int, dotted: str) -> None:
        if not any(private(p) for p in dotted.split(".")):
            return
        if inside and package_of(dotted) == package_of(here):
            return
        found.append(f"{rel}:{line} -> {dotted}")

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                if not inside:
                    continue
                up = anchor.split(".")[: len(anchor.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            if base.split(".")[0] != "precedents":
                continue
            for alias in node.names:
                check(node.lineno, f"{base}.{alias.name}")
                bound[alias.asname or alias.name] = f"{base}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "precedents":
                    continue
                check(node.lineno, alias.name)
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and private(node.attr)):
            continue
        chain, value = [node.attr], node.value
        while isinstance(value, ast.Attribute):
            chain.append(value.attr)
            value = value.value
        if isinstance(value, ast.Name) and value.id in bound:
            check(node.lineno, ".".join([bound[value.id], *reversed(chain)]))
    return found


def test_the_check_reads_every_tree() -> None:
    read = {p.relative_to(REPO).parts[0] for p in sources()}
    assert read == {"src", *(d for d in OUTSIDE if (REPO / d).is_dir())}
    assert any(p.name == "core.py" and p.parent.name == "recall" for p in sources())


def test_no_private_name_of_precedents_is_used_outside_its_package() -> None:
    assert [v for path in sources() for v in violations(path)] == []


@pytest.mark.parametrize(
    ("where", "code", "flagged"),
    [
        ("bench/x.py", "from precedents.recall.core import _daemon_threads", True),
        ("bench/x.py", "from precedents.recall.core import daemon_threads", False),
        ("research/x.py", "import precedents.recall._tables", True),
        ("scripts/x.py", "from precedents._impl import thing", True),
        ("scripts/x.py", "from precedents import __version__", False),
        ("bench/x.py", "import precedents.recall.core as rc\nrc._daemon_threads(m)", True),
        ("bench/x.py", "import precedents.recall.core\nprecedents.recall.core._x()", True),
        ("bench/x.py", "from precedents.recall import core\ncore._x", True),
        ("bench/x.py", "from precedents.recall.core import Recall\nRecall._snap", True),
        ("bench/x.py", "import json\njson._default_decoder", False),
        ("bench/x.py", "from os import _exit", False),
        ("bench/x.py", "from precedents.recall.core import Recall\nr = Recall()\nr._x", False),
        # In src: a private name of another package is flagged, of its own package not.
        ("src/precedents/cli/x.py", "from precedents.recall.core import _x", True),
        ("src/precedents/cli/x.py", "from ..recall.core import _x", True),
        ("src/precedents/recall/x.py", "from precedents.recall.vectors import _x", False),
        ("src/precedents/recall/x.py", "from .vectors import _x", False),
        ("src/precedents/hook/x.py", "from precedents.protocol import _x", True),
        ("src/precedents/config.py", "from precedents.kinds import _x", False),
        ("src/precedents/config.py", "from precedents.store.rows import _x", True),
    ],
)
def test_the_rules_on_small_sources(where: str, code: str, flagged: bool) -> None:
    assert bool(violations(REPO / where, code)) is flagged
