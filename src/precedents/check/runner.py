"""`precedents check`: which files each check gets, and the report it makes of them.

Three ways to choose the files (docs/check.md):

* none named: the files staged in the repository of the working folder
  (``git diff --cached``: added, copied, modified; a rename is its new name),
  read from the index, since the index is what is committed;
* files named (pre-commit names the staged files, having stashed the rest; a
  folder stands for every file below it): read from the working tree;
* ``--all`` (CI): every rule, ADR and team note the repository tracks.

Every file's name is checked for a secret. Notes, rules, ADRs and other Markdown
or text files are read and checked for secrets; rule files for front matter
their agent would ignore or misread; each ADR folder holding a checked (or a
deleted) file gets its whole graph checked; each team note, for a near-duplicate
among the repository's team notes. Anything else (code, images) is counted and
left to the tools made for it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from precedents.adr_graph.duplicates import shares_ids
from precedents.adr_graph.graph import is_adr_file
from precedents.check.adrs import (
    adr_findings,
    adr_folders,
    duplicate_id_findings,
    folder_graph,
    folder_of,
    nested_folders,
)
from precedents.check.duplicates import duplicate_findings, is_note
from precedents.check.model import ERROR, INPUT, WARNING, Finding, Report
from precedents.check.notes import note_findings
from precedents.check.rules import ScopeBudget, rule_findings
from precedents.check.secrets import name_findings, text_findings
from precedents.check.tree import Tree, expand, relative, repository_root, staged_changes
from precedents.errors import UsageError
from precedents.files import escaped
from precedents.ingest.team import CONFIG_NAME, TEAM_DIR, team_config, team_notes_dir
from precedents.rules.formats import RuleFile, classify
from precedents.secrets.mask import mask_secrets
from precedents.secrets.names import shown_path

# Markdown and text files that are none of the kinds above are still read for secrets.
TEXT_SUFFIXES: Final = (".md", ".mdc", ".markdown", ".txt")
# The team's config is committed with the notes it places and read by every clone: a
# secret in it is a secret committed (issue #28), and what is wrong in it is shown.
TEAM_CONFIG: Final = f"{TEAM_DIR}/{CONFIG_NAME}"
_BINARY_PROBE: Final = 8192


@dataclass(frozen=True)
class Kind:
    """What a file is to the checks: ``rule`` (with its placing), ``adr``, ``note`` (a
    team note), ``config`` (the team's config.toml), ``text`` (other Markdown or text),
    or ``other`` (its name only)."""

    name: str
    placed: RuleFile | None = None


@dataclass(frozen=True)
class Layout:
    """Where a repository keeps its ADR folders and its team notes."""

    root: Path
    adr_folders: tuple[str, ...]
    notes: str  # the team notes folder, relative to the root

    def kind(self, path: str) -> Kind:
        if path.startswith("/"):  # outside the repository: no rule or ADR there
            return Kind("text" if path.lower().endswith(TEXT_SUFFIXES) else "other")
        placed = classify(self.root / path, self.root)
        if placed is not None:
            return Kind("rule", placed)
        folder = folder_of(path, self.adr_folders)
        if folder is not None and is_adr_file(path[len(folder) + 1 :] if folder else path):
            return Kind("adr")
        if path.startswith(self.notes + "/") and is_note(path):
            return Kind("note")
        if path == TEAM_CONFIG:
            return Kind("config")
        return Kind("text" if path.lower().endswith(TEXT_SUFFIXES) else "other")


def run(
    files: Sequence[str] = (),
    *,
    all_files: bool = False,
    cwd: Path | None = None,
    adr_dirs: Iterable[Path] = (),
) -> Report:
    """Check ``files`` (relative to ``cwd``), every tracked file with ``all_files``, or
    else the staged ones. ``adr_dirs``: configured ADR folders (the conventional ones
    are always looked for). Raises :class:`UsageError` for a run that cannot be:
    files and ``all_files`` together, or nothing named outside a git repository."""
    started = time.perf_counter()
    here = (cwd or Path.cwd()).resolve()
    if files and all_files:
        raise UsageError("name files or pass --all, not both")
    git = repository_root(here)
    if git is None and not files:
        raise UsageError("not in a git repository: name the files to check")
    root = git or here
    deleted: list[str] = []
    if files:
        mode, targets = "files", expand(root, here, files)
        tree = Tree.open(root, git is not None, staged=False, named=targets)
    elif all_files:
        mode, tree = "all", Tree.open(root, True, staged=False)
        targets = tree.tracked()
    else:
        mode, (targets, deleted) = "staged", staged_changes(root)
        tree = Tree.open(root, True, staged=True)
    notes = relative(team_notes_dir(root), root)
    folders = adr_folders(root, adr_dirs)
    layout = Layout(root, (*folders, *nested_folders([*targets, *deleted], folders)), notes)
    # A staged symbolic link or submodule holds no text of the commit: its name only.
    kinds = {
        path: layout.kind(path) if not tree.staged or path in tree.index else Kind("other")
        for path in targets
    }
    if all_files:  # CI: the product's own files, not every README of the repository
        kinds = {p: k for p, k in kinds.items() if k.name in ("rule", "adr", "note", "config")}
    report = Report(str(git or ""), mode)
    report.findings = _check(tree, layout, kinds, deleted, report)
    report.findings = _shown(report.findings, root, here)
    report.seconds = time.perf_counter() - started
    return report


def _check(
    tree: Tree, layout: Layout, kinds: dict[str, Kind], deleted: Sequence[str], report: Report
) -> list[Finding]:
    found: list[Finding] = []
    read = [p for p, k in kinds.items() if k.name != "other"]
    contents = tree.read(read)
    tracked = tree.tracked() if tree.git else None
    budget = ScopeBudget()
    for path, kind in kinds.items():
        found += name_findings(path)
        if kind.name == "other":
            report.skipped += 1
            continue
        text = _text(path, contents[path], found)
        if text is None:
            continue
        report.checked += 1
        found += text_findings(path, text)
        if kind.placed is not None:
            found += rule_findings(path, kind.placed, text, tracked, budget)
        if kind.name == "config":
            found += _config_findings(path, layout.root)
        if kind.name == "note":
            found += note_findings(path, text)
    touched = sorted(
        {f for f in (folder_of(p, layout.adr_folders) for p in [*kinds, *deleted]) if f is not None}
    )
    # The folders a touched one shares its ids with are read too: two claiming one id
    # is a warning on the touched side (adr_graph/duplicates.py).
    wanted = [
        f for f in layout.adr_folders if f in touched or any(shares_ids(f, t) for t in touched)
    ]
    graphs = {f: folder_graph(tree, f) for f in wanted}
    for folder in touched:
        found += adr_findings(tree, folder, graphs[folder])
    found += duplicate_id_findings(graphs, touched)
    staged_notes = [p for p, k in kinds.items() if k.name == "note"]
    if staged_notes:
        found += duplicate_findings(tree, layout.notes, staged_notes)
    return found


def _config_findings(path: str, root: Path) -> list[Finding]:
    """What the team's config gets wrong, as `reindex` and `status` say it (masked)."""
    problem = team_config(root).problem
    return [Finding(path, 1, WARNING, INPUT, problem)] if problem else []


def _text(path: str, data: bytes | str, found: list[Finding]) -> str | None:
    """The file as text, or None (with a finding) when it cannot be checked."""
    if isinstance(data, str):
        level = WARNING if data.startswith("too large") else ERROR
        found.append(Finding(path, 1, level, INPUT, f"not checked: {data}"))
        return None
    if b"\0" in data[:_BINARY_PROBE]:
        found.append(Finding(path, 1, WARNING, INPUT, "not checked: a binary file"))
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        found.append(
            Finding(
                path, line, WARNING, INPUT, "not valid UTF-8: checked with the bad bytes replaced"
            )
        )
        return data.decode("utf-8", "replace")


def _shown(findings: Sequence[Finding], root: Path, cwd: Path) -> list[Finding]:
    """Findings as printed: paths relative to the working folder with any secret in a
    name masked, messages masked again (a message quotes what a file says), each once,
    in path and line order."""
    out: dict[tuple[str, int, str, str], Finding] = {}
    for f in findings:
        path = shown_path(escaped(os.path.relpath(root / f.path, cwd)))
        message = mask_secrets(f.message)
        out.setdefault(
            (path, f.line, f.level, message), Finding(path, f.line, f.level, f.check, message)
        )
    return sorted(out.values(), key=lambda f: (f.path, f.line, f.level != ERROR, f.message))
