"""The ADR graph of each ADR folder a commit touches, as `precedents adr check` sees it.

The graph is built from what the commit holds (the staged content, or the
working tree's tracked files: :mod:`precedents.check.tree`) by the one builder
every command uses, checked by :meth:`AdrGraph.check` and rendered by
:meth:`AdrView.check`, so `precedents check` and `adr check` report the same
findings at the same levels: a broken chain, a dangling link, a cycle, a
duplicate id, a record with no usable status are errors; a renamed link, a
successor not yet accepted, a record reading as orders to an agent, warnings.
The whole folder is reported, not only the files staged: a changed record can
break a chain at another one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from precedents.adr_graph.duplicates import duplicate_finding, duplicates
from precedents.adr_graph.graph import (
    CONVENTIONAL_DIRS,
    AdrGraph,
    find_adr_dirs,
    graph_of_contents,
)
from precedents.adr_graph.view import AdrView
from precedents.check.model import ADR, ERROR, WARNING, Finding
from precedents.check.tree import Tree

_WHERE = re.compile(r"line (\d+): ")
NESTED_NAMES = tuple(d for d in CONVENTIONAL_DIRS if "/" in d)
# Where a record states its status: a `Status` heading or line, or `status:` in front matter.
_STATUS_LINE = re.compile(r"^(?:#+[ \t]*|\*\*)?status\b", re.IGNORECASE | re.MULTILINE)


def adr_folders(root: Path, configured: Iterable[Path] = ()) -> list[str]:
    """The repository's ADR folders (configured ones inside it, then the conventional
    ones), relative to ``root``."""
    out: list[str] = []
    for folder in find_adr_dirs(root, configured):
        try:
            rel = folder.relative_to(root.resolve()).as_posix()
        except ValueError:
            continue
        out.append("" if rel == "." else rel)
    return out


def nested_folders(paths: Iterable[str], known: Sequence[str]) -> list[str]:
    """ADR folders below the root that ``paths`` lie in by a conventional name of two or
    more parts (``services/billing/docs/adr``, a monorepo's project), not yet ``known``.
    One-word names (``adr``, ``decisions``) name too many other folders to count."""
    found: dict[str, None] = {}
    for path in paths:
        for name in NESTED_NAMES:
            at = path.find(f"/{name}/")
            if at > 0 and not path.startswith("/"):
                folder = path[: at + 1 + len(name)]
                if folder not in known:
                    found.setdefault(folder, None)
    return list(found)


def folder_of(path: str, folders: Sequence[str]) -> str | None:
    """The deepest of ``folders`` that ``path`` lies in (a nested folder is its own graph)."""
    inside = [f for f in folders if f in ("", ".") or path.startswith(f.rstrip("/") + "/")]
    return max(inside, key=len) if inside else None


def _prefix(folder: str) -> str:
    return folder.rstrip("/") + "/" if folder not in ("", ".") else ""


def folder_graph(tree: Tree, folder: str) -> AdrGraph:
    """The graph of the ADR folder ``folder`` (relative to the root) as the commit has it."""
    prefix = _prefix(folder)
    names = [p for p in tree.files_under(prefix.rstrip("/")) if p.startswith(prefix)]
    contents = tree.read(names)
    blobs = {
        name[len(prefix) :]: data if isinstance(data, bytes) else None
        for name, data in contents.items()
    }
    return graph_of_contents(tree.root / folder, blobs)


def duplicate_id_findings(graphs: Mapping[str, AdrGraph], touched: Iterable[str]) -> list[Finding]:
    """A warning on each record of a ``touched`` folder whose id a record of another of
    ``graphs`` (folder relative to the root -> its graph) claims too, naming both paths
    (adr_graph/duplicates.py: which folders share an id space)."""
    claims: dict[str, str] = {}
    for folder, graph in graphs.items():
        for rec in graph.records.values():
            claims.setdefault(_prefix(folder) + rec.path, rec.id)
    found = duplicates(claims.items())
    out = []
    for folder in touched:
        for rec in graphs[folder].sorted() if folder in graphs else []:
            others = found.get(_prefix(folder) + rec.path)
            if others:
                f = duplicate_finding(rec.path, rec.label, others)
                line = _status_line(rec.text)
                out.append(Finding(_prefix(folder) + rec.path, line, WARNING, ADR, f.message))
    return out


def adr_findings(tree: Tree, folder: str, graph: AdrGraph | None = None) -> list[Finding]:
    """`adr check`'s findings for the ADR folder ``folder`` (relative to the root), as
    the commit has it; paths relative to the root."""
    prefix = _prefix(folder)
    graph = graph or folder_graph(tree, folder)
    view = AdrView(graph)
    out: list[Finding] = []
    for found in view.check(graph.check()):
        message = found["message"]
        where = _WHERE.match(message)
        if where is not None:
            line, message = int(where.group(1)), message[where.end() :]
        else:
            rec = graph.by_path.get(found["path"])
            line = _status_line(rec.text) if rec is not None else 1
        level = ERROR if found["severity"] == "error" else WARNING
        out.append(
            Finding(prefix + found["path"], line, level, ADR, f"{message} ({found['kind']})")
        )
    return out


def _status_line(text: str) -> int:
    found = _STATUS_LINE.search(text)
    return text.count("\n", 0, found.start()) + 1 if found else 1
