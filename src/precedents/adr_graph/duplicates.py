"""One ADR id claimed by records in two ADR folders of one project (issue #28).

A graph is built per folder, and a link ``ADR-0010`` resolves inside its own
folder. A second folder (a new ``decisions/`` next to ``docs/adr/``, or a
subfolder of it) can hold a record with an id the real folder uses:
``decisions/0010-use-celery.md`` marked Accepted while ``docs/adr/0010`` is
superseded by 0011. Neither claim wins: nothing says which folder ``ADR-0010``
means, and the folder whose chain names a successor is no more trustworthy
than the other (a chain is as easy to write as a status). So each record keeps
its own folder's status, and every record of a duplicated id is marked
``⚠️duplicate id → also PATH``: the live-looking one is never shown as live
without a mark (nor listed as a live ADR at SessionStart), and `adr check` and
`check` warn with both paths.

Two folders share one id space when both are conventional ADR folders at the
project's root (``docs/adr``, ``decisions`` …) or one lies inside the other. A
monorepo's per-service folders (``services/billing/docs/adr``, configured)
number their records apart: ADR-0001 in each is no duplicate.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from precedents.adr_graph.model import Finding
from precedents.inert import NAME_CHARS, inert
from precedents.kinds import git_root

if TYPE_CHECKING:
    from precedents.adr_graph.graph import AdrGraph

DUPLICATE_MARK = "⚠️duplicate id"
SHOWN_OTHERS = 2  # paths a mark names; the rest are counted


def id_key(adr_id: str) -> str:
    """``adr_id`` as two folders' ids are compared: ``ADR-0010``, ``adr-10`` and
    ``0010`` are one id."""
    text = re.sub(r"^adr[-_ ]?", "", adr_id.strip().casefold())
    return re.sub(r"\d+", lambda m: str(int(m.group())), text)


def shares_ids(a: str, b: str) -> bool:
    """Whether ADR folders ``a`` and ``b`` (relative to the project root, POSIX; "" for
    the root) number their records in one space (see the module)."""
    a, b = a.strip("/"), b.strip("/")
    if a == b:
        return False  # one folder: its graph reports its own duplicates
    if not a or not b or a.startswith(b + "/") or b.startswith(a + "/"):
        return True
    # Imported here: the daemon reads duplicates at each snapshot, before any graph.
    from precedents.adr_graph.graph import CONVENTIONAL_DIRS

    return a in CONVENTIONAL_DIRS and b in CONVENTIONAL_DIRS


def duplicates(claims: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """``{path: other paths}`` for each record of ``claims`` (its path relative to the
    project root, POSIX, and its id) whose id a record of another folder sharing its
    id space claims too; records of a unique id are not in it."""
    by_id: dict[str, dict[str, None]] = defaultdict(dict)
    for path, rid in claims:
        if rid:
            by_id[id_key(rid)][path] = None
    out: dict[str, list[str]] = {}
    for paths in by_id.values():
        for path in paths if len(paths) > 1 else ():
            here = posixpath.dirname(path)
            others = [o for o in paths if shares_ids(here, posixpath.dirname(o))]
            if others:
                out[path] = sorted(others)
    return out


def duplicate_mark(others: list[str]) -> str:
    """``⚠️duplicate id → also decisions/0010-use-celery.md`` (paths inert: a file name is
    text someone else wrote)."""
    shown = ", ".join(inert(o, NAME_CHARS) for o in others[:SHOWN_OTHERS])
    more = f" (+{len(others) - SHOWN_OTHERS} more)" if len(others) > SHOWN_OTHERS else ""
    return f"{DUPLICATE_MARK} → also {shown}{more}"


def stored_duplicates(rows: Iterable[Mapping[str, object]]) -> dict[str, list[str]]:
    """:func:`duplicates` over the index's ADR rows (``kind``, ``project``, ``path``,
    ``adr_id``), project by project: ``{absolute path: other paths, relative to the
    project}``."""
    projects: dict[str, dict[str, str]] = defaultdict(dict)
    for row in rows:
        if row.get("kind") == "adr" and row.get("adr_id"):
            projects[str(row["project"])][str(row["path"])] = str(row["adr_id"])
    out: dict[str, list[str]] = {}
    for project, paths in projects.items():
        rel = {_relative(path, project): path for path in paths}
        for path, others in duplicates((r, paths[a]) for r, a in rel.items()).items():
            out[rel[path]] = others
    return out


def _relative(path: str, project: str) -> str:
    top = project.rstrip("/") + "/"
    if path.startswith(top):  # the common case, without pathlib (called per record)
        return path[len(top) :]
    p = Path(path)
    return p.relative_to(project).as_posix() if p.is_relative_to(project) else p.as_posix()


def folder_duplicates(
    graph: AdrGraph, configured: Iterable[Path], build: Callable[[Path], AdrGraph]
) -> list[Finding]:
    """`adr check`'s warnings for the records of ``graph`` whose id another ADR folder of
    its repository (configured or conventional, built with ``build``) claims too."""
    found = _claimed_elsewhere(graph, configured, build)
    return [
        duplicate_finding(rec.path, rec.label, found[rec.path])
        for rec in graph.sorted()
        if rec.path in found
    ]


def mark_duplicates(
    graph: AdrGraph, configured: Iterable[Path], build: Callable[[Path], AdrGraph]
) -> AdrGraph:
    """``graph`` with the duplicate mark after the own mark of each record whose id another
    ADR folder of its repository claims too: every `adr` command and MCP ADR tool shows it
    (the record's status stays its folder's)."""
    for path, others in _claimed_elsewhere(graph, configured, build).items():
        rec = graph.by_path[path]
        mark = duplicate_mark(others)
        rec.mark = f"{rec.mark}; {mark}" if rec.mark else mark
    return graph


def _claimed_elsewhere(
    graph: AdrGraph, configured: Iterable[Path], build: Callable[[Path], AdrGraph]
) -> dict[str, list[str]]:
    """``{record path in graph: other paths, relative to the repository}``.

    Only the folders beside ``graph``'s are read, and only those that share its ids (two
    conventional root folders): one inside it is in its graph already (a duplicate
    there is the graph's own error), and one around it would be read whole, every
    record of every subfolder, for each call of an ADR tool."""
    from precedents.adr_graph.graph import find_adr_dirs

    folder = graph.folder.resolve()
    root = git_root(folder).resolve()
    here = _relative(str(folder), str(root))
    claims: dict[str, str] = {}

    def add(where: Path, g: AdrGraph) -> None:
        for rec in g.records.values():
            claims.setdefault(_relative(str(where / rec.path), str(root)), rec.id)

    add(folder, graph)
    for other in find_adr_dirs(root, configured):
        beside = not other.is_relative_to(folder) and not folder.is_relative_to(other)
        if beside and shares_ids(here, _relative(str(other), str(root))):
            add(other, build(other))
    found = duplicates(claims.items())
    out = {}
    for rec in graph.sorted():
        others = found.get(_relative(str(folder / rec.path), str(root)))
        if others:
            out[rec.path] = others
    return out


def duplicate_finding(path: str, label: str, others: list[str]) -> Finding:
    """The warning for one record of a duplicated id."""
    return Finding(
        "duplicate_id_folders",
        path,
        f"{label} is also the id of {', '.join(others)}: two ADR folders claim it, so "
        "neither is shown as the decision (each is marked); renumber or remove one",
        "warning",
    )
