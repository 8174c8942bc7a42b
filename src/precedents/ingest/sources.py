"""What is indexed: kinds, projects, Claude Code folder discovery, and file walking.

The walk lives here so the watcher and ``reindex`` share it. It never raises for
a bad folder or file: every problem (permission denied, symlink loop, a file
that vanished) becomes a :class:`Problem` in the result and the rest goes on.
A file whose path carries a secret (``memory/token-hf_….md``, a key in a
folder name) is withheld: never indexed, and named only masked
(:mod:`precedents.secrets.names`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from precedents.config import Settings
from precedents.errors import UsageError
from precedents.files import (
    LINKED_OUT,
    NOT_UTF8_NAME,
    OUTSIDE,
    escaped,
    inside,
    not_regular,
    undecodable,
)
from precedents.ingest import team
from precedents.ingest.registry import registered
from precedents.kinds import SHARED_PROJECT, Kind, git_root
from precedents.rules import formats as rule_formats
from precedents.secrets.names import FOLDER_REASON, masked_path, shown_path, withheld_reason

log = logging.getLogger("precedents.ingest.sources")

CLAUDE_NAME_LIMIT = 200
MEMORY_INDEX = "MEMORY.md"
UNRESOLVED_PREFIX = "claude:"
# Cursor-style rules are `.mdc` (markdown with front matter); ADRs are `.md` only.
MARKDOWN = (".md", ".mdc")
JSONL = (".jsonl",)


@dataclass(frozen=True)
class Problem:
    """A file or folder that could not be (fully) read, with the reason."""

    path: str
    reason: str


@dataclass(frozen=True)
class SourceDir:
    """A folder whose files of one kind belong to one project."""

    kind: Kind
    root: Path
    project: str
    suffix: tuple[str, ...] = (".md",)
    recursive: bool = False
    # When set: only the files of exactly these names directly in ``root``, hidden
    # ones included (`.cursorrules`, `AGENTS.md`); ``suffix`` and ``recursive`` unused.
    names: tuple[str, ...] = ()
    # "team": a repository's team notes (ingest/team.py); "" for every other source.
    origin: str = ""
    # The folder may not exist yet (a repository's team notes before the first one is
    # pulled): the walk passes over it in silence, the watcher waits for it to appear.
    optional: bool = False
    # What was wrong in the config that placed it (a team's config.toml), reported by
    # the walk where every source problem is: `reindex`, the watcher's log, `status`.
    problem: Problem | None = None
    # The project is a git repository found without config: its commit history is a
    # source too (ingest/commit_index.py). Only a discovered or configured project's
    # team source says so; folders named alone (`--notes DIR`) never do.
    history: bool = False
    # Where the folder must really lie: its project's root for a folder found there
    # without config (`docs/adr`, `.cursor/rules`, the team notes). A cloned repository's
    # `docs/adr -> ~/private` is never walked, watched or read (issue #28); a folder the
    # user configured (None) may be a link, and is confined to itself.
    within: Path | None = None
    # A folder discovery left out (a link out of the project, a name that is not UTF-8):
    # only its ``problem`` is reported, by every walk; it is never walked nor watched.
    refused: bool = False

    def linked_out(self) -> bool:
        """Whether the folder is refused, or a symlink (or under one) out of ``within``."""
        return self.refused or (self.within is not None and not inside(self.root, self.within))

    def takes(self, name: str) -> bool:
        """Whether a file called ``name`` (directly in, or below, ``root``) is this source's."""
        if self.names:
            return name in self.names
        if not name.endswith(self.suffix):
            return False
        return not (self.kind == "note" and name == MEMORY_INDEX)


@dataclass(frozen=True)
class Sources:
    """Folders named by the caller (``--notes DIR ...``), all of one ``project``.

    When any folder is named, only these are indexed or watched; when none
    is, every configured and discovered source is (see :func:`configured_sources`).
    """

    notes: tuple[Path, ...] = ()
    rules: tuple[Path, ...] = ()
    adrs: tuple[Path, ...] = ()
    conversations: tuple[Path, ...] = ()
    project: str | None = None  # default: the current directory's project root

    @property
    def given(self) -> bool:
        """Whether any folder is named."""
        return bool(self.notes or self.rules or self.adrs or self.conversations)

    def by_kind(self) -> dict[Kind, tuple[Path, ...]]:
        """The named folders of each record kind."""
        return {
            "note": self.notes,
            "rule": self.rules,
            "adr": self.adrs,
            "conversation": self.conversations,
        }


@dataclass(frozen=True)
class SourceFile:
    """One file to index."""

    path: Path
    kind: Kind
    project: str
    root: Path
    origin: str = ""  # the source's (SourceDir.origin)


@dataclass
class Walk:
    """The files found under some sources, and what went wrong on the way.

    ``withheld`` are the files (or source folders) left out because their
    path carries a secret, masked; they are in ``problems`` too.
    """

    files: list[SourceFile] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    roots: list[Path] = field(default_factory=list)
    withheld: list[Problem] = field(default_factory=list)
    # The git projects whose commits this pass reads (SourceDir.history).
    repos: list[str] = field(default_factory=list)

    def withhold(self, problem: Problem) -> None:
        """Leave a file out for the secret in its path (``problem.path`` is masked)."""
        self.withheld.append(problem)
        self.problems.append(problem)


# -- projects ---------------------------------------------------------------------


def encode_project_path(path: str) -> str:
    """Claude Code's folder name for a project path (SPEC §2).

    Every character outside ``[a-zA-Z0-9]`` becomes ``-``; names over 200
    characters are cut to 200 plus ``-<hash>`` (so long ones match by prefix).
    """
    encoded = re.sub(r"[^a-zA-Z0-9]", "-", path)
    if len(encoded) > CLAUDE_NAME_LIMIT:
        digest = hashlib.sha256(path.encode()).hexdigest()[:8]
        encoded = f"{encoded[:CLAUDE_NAME_LIMIT]}-{digest}"
    return encoded


def project_root(path: str | Path) -> str:
    """A project's identity: the absolute path of the git root above ``path``, or ``path``."""
    return str(git_root(path))


def project_keys(root: str) -> list[str]:
    """Every project key rows of ``root`` may be stored under, plus shared rules."""
    return [root, UNRESOLVED_PREFIX + encode_project_path(root), SHARED_PROJECT]


def claude_folder_matches(folder_name: str, root: str) -> bool:
    """Whether a ``~/.claude/projects`` folder name belongs to project ``root``."""
    encoded = encode_project_path(root)
    if len(encoded) > CLAUDE_NAME_LIMIT:
        return folder_name.startswith(encoded[:CLAUDE_NAME_LIMIT])
    return folder_name == encoded


def resolve_claude_project(folder: Path) -> str:
    """The project root a Claude Code project folder stands for.

    The folder name cannot be decoded (``-`` is ambiguous), so the ``cwd``
    recorded in its transcripts is used; failing that the name is kept as an
    unresolved key that :func:`project_keys` still matches at query time.
    """
    for cwd in _transcript_cwds(folder):
        root = project_root(cwd)
        if claude_folder_matches(folder.name, cwd) or claude_folder_matches(folder.name, root):
            return root
    return UNRESOLVED_PREFIX + folder.name


def _transcript_cwds(folder: Path) -> Iterator[str]:
    try:
        logs = sorted(folder.glob("*.jsonl"))
    except OSError:
        return
    for log_path in logs[:20]:
        try:
            with log_path.open("rb") as fh:
                for _, raw in zip(range(50), fh, strict=False):
                    try:
                        obj = json.loads(raw)
                    except ValueError:
                        continue
                    if isinstance(obj, dict) and isinstance(obj.get("cwd"), str):
                        yield obj["cwd"]
                        break
        except OSError:
            continue


# -- discovery --------------------------------------------------------------------


def claude_sources(claude_dir: Path) -> list[SourceDir]:
    """Notes and conversation logs under Claude Code's ``projects/`` folder, plus ``rules/``."""
    out: list[SourceDir] = []
    projects = claude_dir / "projects"
    try:
        folders = sorted(p for p in projects.iterdir() if p.is_dir())
    except OSError:
        folders = []
    roots: list[str] = []
    for folder in folders:
        project = resolve_claude_project(folder)
        out.append(SourceDir("conversation", folder, project, JSONL))
        if (folder / "memory").is_dir():
            out.append(SourceDir("note", folder / "memory", project, MARKDOWN))
        if not project.startswith(UNRESOLVED_PREFIX) and project not in roots:
            roots.append(project)
    # Every project Claude Code was used in brings its own ADR folder (docs/adr,
    # doc/adr, docs/decisions...) and its own rule files without any config.
    for root in roots:
        out.extend(project_sources(Path(root)))
    if (claude_dir / "rules").is_dir():
        out.append(
            SourceDir("rule", claude_dir / "rules", SHARED_PROJECT, MARKDOWN, recursive=True)
        )
    return out


def configured_sources(settings: Settings, given: Sources | None = None) -> list[SourceDir]:
    """Every source folder: Claude Code's, the config file's, or the ones ``given``.

    Folders given (the CLI's ``--notes`` etc.) belong to their ``project``
    (default: the current directory's root) and must exist. When any is given,
    only they are indexed, so a test or benchmark can index one folder alone.
    A project's own ADR folder (``docs/adr``, ``doc/adr``, ``docs/decisions``...)
    needs no config: it is found for every project Claude Code was used in,
    and for a ``project`` named without folders (``reindex --project PATH``).
    """
    if given is not None and given.given:
        return _given_sources(given)
    out = claude_sources(settings.claude_dir) if settings.discover_claude else []
    for d in settings.notes:
        out.append(SourceDir("note", d, project_root(d), MARKDOWN, recursive=True))
    for d in settings.rules:
        out.append(SourceDir("rule", d, SHARED_PROJECT, MARKDOWN, recursive=True))
    for d in settings.conversations:
        out.append(SourceDir("conversation", d, project_root(d), JSONL))
    named = [Path(project_root(given.project))] if given and given.project else []
    for d in settings.adrs:
        out.append(SourceDir("adr", d, project_root(d), (".md",), recursive=True))
    for repo in [*settings.repos, *named]:
        out.extend(project_sources(Path(project_root(repo))))
    # And the projects a first session registered (ingest/registry.py), once each.
    known = {s.project for s in out if s.within is not None}
    for root in dict.fromkeys(registered(settings.home)):
        if root not in known and Path(root).is_dir():
            out.extend(project_sources(Path(root)))
    return out


def project_sources(root: Path) -> list[SourceDir]:
    """A project's own ADR folders, rule files (docs/rules.md) and team notes
    (docs/team.md), found without config."""
    refused: list[tuple[Kind, tuple[str, str]]] = []
    adrs: list[tuple[str, str]] = []
    out = [
        SourceDir("adr", d, str(root), (".md",), recursive=True, within=root)
        for d in _repo_adr_dirs([root], adrs)
    ]
    refused += [("adr", r) for r in adrs]
    found = rule_formats.discover(root)
    for w in found.watches:
        out.append(
            SourceDir(
                "rule", w.folder, str(root), w.suffixes, w.recursive, names=w.names, within=root
            )
        )
    refused += [("rule", r) for r in found.refused]
    # Last: a team folder named over an ADR or rule folder leaves those files what they are.
    # Only a repository has team notes: they are shared by committing them.
    if (root / ".git").exists():
        out.append(team_source(root))
    # A folder left out (a link out of the project, a name that is not UTF-8) is one line
    # of every walk: a source never walked nor watched, only reported.
    for kind, (path, reason) in refused:
        gone = Problem(shown_path(path), reason)
        out.append(SourceDir(kind, Path(path), str(root), (), problem=gone, refused=True))
    return out


def team_source(root: Path) -> SourceDir:
    """The team notes of the repository at ``root``: its folder, whether or not it exists
    yet, and the problem of its config when there is one."""
    found = team.team_config(root)
    problem = Problem(shown_path(found.config_file), found.problem) if found.problem else None
    notes = Path(os.path.normpath(found.notes.absolute()))  # events are matched as strings
    return SourceDir(
        "note", notes, str(root), MARKDOWN, True, origin=team.TEAM, optional=True,
        problem=problem, history=True, within=root,
    )  # fmt: skip


def source_rows(sources: Iterable[SourceDir]) -> list[dict[str, object]]:
    """`status`'s account of ``sources``: kind, folder (masked), project, a team folder
    marked; team folders that do not exist yet are left out unless their config is wrong."""
    rows: list[dict[str, object]] = []
    for s in sources:
        if s.optional and s.problem is None and not s.root.is_dir():
            continue
        row: dict[str, object] = {"kind": s.kind, "root": shown_path(s.root), "project": s.project}
        if s.origin:
            row["origin"] = s.origin
        if s.problem is not None:
            row["problem"] = f"{shown_path(s.problem.path)}: {s.problem.reason}"
        elif s.linked_out():
            row["problem"] = f"{shown_path(s.root)}: {LINKED_OUT}"
        rows.append(row)
    return rows


def _given_sources(given: Sources) -> list[SourceDir]:
    proj = project_root(given.project) if given.project else project_root(Path.cwd())
    out = []
    for kind, dirs in given.by_kind().items():
        for d in dirs:
            if not d.is_dir():
                raise UsageError(f"{d}: no such folder")
            owner = SHARED_PROJECT if kind == "rule" else proj
            suffix = JSONL if kind == "conversation" else MARKDOWN
            # `--notes .precedents/notes`: still the team's notes, marked as such.
            origin = team.TEAM if kind == "note" and team.is_team_note(d, Path(proj)) else ""
            out.append(
                SourceDir(kind, d.absolute(), owner, suffix, kind != "conversation", origin=origin)
            )
    return out


def _repo_adr_dirs(repos: Iterable[Path], refused: list[tuple[str, str]]) -> list[Path]:
    repos = list(repos)
    if not repos:
        return []
    from precedents.adr_graph import find_adr_dirs

    found: list[Path] = []
    for repo in repos:
        found.extend(find_adr_dirs(repo, refused=refused))
    return found


# -- walking ----------------------------------------------------------------------


def walk(sources: Iterable[SourceDir]) -> Walk:
    """List the files of every source; unreadable folders and loops become problems.

    A source folder or file whose path carries a secret is withheld (see
    :class:`Walk`), and every path in a problem is shown masked.
    """
    sources = list(sources)
    result = Walk(repos=history_repos(sources))
    seen: set[Path] = set()
    problems: list[Problem] = []
    for src in sources:
        # Its rows (from a store built before names were checked) must still go.
        result.roots.append(src.root)
        if src.problem is not None and src.problem not in result.problems:
            result.problems.append(src.problem)
        if src.refused:
            continue  # its problem is all there is to say
        if src.optional and not src.root.exists():
            continue  # not there yet: nothing to list, nothing wrong
        if src.linked_out():  # became a link out since it was found
            gone = Problem(shown_path(src.root), LINKED_OUT)
            if gone not in result.problems:
                result.problems.append(gone)
            continue
        root = masked_path(src.root)
        if root is not None:
            result.withhold(Problem(root, FOLDER_REASON))
            continue
        for path in _walk_dir(src, problems):
            if path in seen:
                continue
            seen.add(path)
            reason = withheld_reason(path)
            if reason is not None:
                result.withhold(Problem(shown_path(path), reason))
                continue
            result.files.append(SourceFile(path, src.kind, src.project, src.root, src.origin))
    # A folder that cannot be listed may be the one whose name carries a secret.
    result.problems += [Problem(shown_path(p.path), p.reason) for p in problems]
    return result


def history_repos(sources: Iterable[SourceDir]) -> list[str]:
    """The git projects of ``sources`` whose commits are a source (SourceDir.history)."""
    return list(dict.fromkeys(s.project for s in sources if s.history))


def leaves_root(path: Path, root: Path) -> bool:
    """Whether ``path`` (a symlink, or under one) really lies outside ``root``.

    A link inside a notes folder to ``/etc/shadow`` or ``~/.ssh`` must not
    turn a secret file into a note; links that stay inside are fine.
    """
    try:
        target = path.resolve(strict=True)
        return not target.is_relative_to(root.resolve(strict=True))
    except (OSError, RuntimeError):  # broken, looping, or vanished: nothing to follow
        return True


def _walk_dir(src: SourceDir, problems: list[Problem]) -> Iterator[Path]:
    visited: set[tuple[int, int]] = set()
    stack = [src.root]
    while stack:
        folder = stack.pop()
        try:
            st = folder.stat()
        except OSError as exc:
            problems.append(Problem(str(folder), f"cannot open folder: {exc.strerror}"))
            continue
        key = (st.st_dev, st.st_ino)
        if key in visited:
            problems.append(Problem(str(folder), "symlink loop: folder already visited"))
            continue
        visited.add(key)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            problems.append(Problem(str(folder), f"cannot list folder: {exc.strerror}"))
            continue
        for entry in entries:
            if entry.name.startswith(".") and entry.name not in src.names:
                continue
            if undecodable(entry.name):
                # No tool downstream holds such a name (the tokenizer, Arrow, JSON refuse
                # it): one file so named once failed every reindex (issue #28).
                if src.takes(entry.name) or _is_dir(entry):
                    problems.append(Problem(escaped(entry.path), NOT_UTF8_NAME))
                continue
            path = Path(entry.path)
            try:
                if entry.is_symlink() and leaves_root(path, src.root):
                    if os.path.exists(path):
                        problems.append(Problem(str(path), OUTSIDE))
                    else:
                        problems.append(Problem(str(path), "broken or looping symlink"))
                    continue
                if entry.is_dir():
                    if src.recursive and not src.names:
                        stack.append(path)
                    continue
                is_file = entry.is_file()
            except OSError as exc:
                problems.append(Problem(str(path), f"cannot stat: {exc.strerror}"))
                continue
            if not is_file:
                try:
                    mode = entry.stat().st_mode  # what a link leads to
                except OSError:
                    if entry.is_symlink():
                        problems.append(Problem(str(path), "broken or looping symlink"))
                    continue
                if src.takes(entry.name):  # a FIFO, a device: never opened (issue #28)
                    problems.append(Problem(str(path), not_regular(mode)))
                continue
            if src.takes(entry.name):
                yield path


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False
