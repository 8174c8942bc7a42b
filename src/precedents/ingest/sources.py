"""What is indexed: kinds, projects, Claude Code folder discovery, and file walking.

The walk lives here so the watcher and ``reindex`` share it. It never raises for
a bad folder or file: every problem (permission denied, symlink loop, a file
that vanished) becomes a :class:`Problem` in the result and the rest goes on.
A file whose path carries a secret (``memory/token-hf_….md``, a key in a
folder name) is withheld: never indexed, and named only masked
(:mod:`precedents.secrets.names`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from precedents.config import Settings
from precedents.errors import NotAFolder
from precedents.files import LINKED_OUT, inside
from precedents.ingest import team
from precedents.ingest.listing import Problem as Problem
from precedents.ingest.listing import leaves_root as leaves_root
from precedents.ingest.listing import walk_dir
from precedents.ingest.projects import CLAUDE_NAME_LIMIT as CLAUDE_NAME_LIMIT
from precedents.ingest.projects import UNRESOLVED_PREFIX as UNRESOLVED_PREFIX
from precedents.ingest.projects import claude_folder_matches as claude_folder_matches
from precedents.ingest.projects import encode_project_path as encode_project_path
from precedents.ingest.projects import project_keys as project_keys
from precedents.ingest.projects import project_root as project_root
from precedents.ingest.projects import resolve_claude_project as resolve_claude_project
from precedents.ingest.registry import registered
from precedents.kinds import SHARED_PROJECT, Kind, git_root
from precedents.rules import formats as rule_formats
from precedents.secrets.names import FOLDER_REASON, masked_path, shown_path, withheld_reason

log = logging.getLogger("precedents.ingest.sources")

MEMORY_INDEX = "MEMORY.md"
# Cursor-style rules are `.mdc` (markdown with front matter); ADRs are `.md` only.
MARKDOWN = (".md", ".mdc")
JSONL = (".jsonl",)
# The kinds whose readers own their files against a notes folder over them.
OWNING_KINDS: frozenset[Kind] = frozenset({"rule", "adr"})


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
    # The rule and ADR readers of the repository a named notes folder lies in (`--notes
    # REPO`): the files they list stay theirs, never relabelled as notes (see yields_to).
    owners: tuple[SourceDir, ...] = ()

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

    def covers(self, path: str) -> bool:
        """Whether a file at ``path`` is one this source's walk lists (or, gone, would
        have listed): under ``root`` (directly, unless recursive), no hidden part unless
        named, a name it takes. Strings only: a vanished file is judged all the same."""
        top = str(self.root).rstrip(os.sep) + os.sep
        if not path.startswith(top):
            return False
        parts = path[len(top) :].split(os.sep)
        if self.names:
            return len(parts) == 1 and parts[0] in self.names
        if len(parts) > 1 and not self.recursive:
            return False
        return not any(p.startswith(".") or not p for p in parts) and self.takes(parts[-1])


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

    def checked(self) -> Sources:
        """These sources, once ``project`` is known to be a folder (:class:`NotAFolder`
        if not): records labelled with a project that does not exist are never recalled,
        and `reindex --notes REPO --project /nonexistent` relabelled a repository's files."""
        if self.project and not Path(self.project).is_dir():
            raise NotAFolder(f"{self.project}: no such project folder")
        return self

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
    # What a stored record must have come from to be gone when this pass did not find
    # its file (ingest/removal.py): the sources listed, the sources left out whole (a
    # link out of the project, a refused name), and folders this pass owns outright.
    sources: list[SourceDir] = field(default_factory=list)
    left_out: list[SourceDir] = field(default_factory=list)
    whole: list[Path] = field(default_factory=list)

    def own(self, folder: Path) -> None:
        """Make this pass own every record under ``folder``: whatever it did not find
        there is gone, whichever source or kind it came from (an eval set's folder)."""
        self.roots.append(folder)
        self.whole.append(folder)

    def withhold(self, problem: Problem) -> None:
        """Leave a file out for the secret in its path (``problem.path`` is masked)."""
        self.withheld.append(problem)
        self.problems.append(problem)


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
                raise NotAFolder(f"{d}: no such folder")
            owner = SHARED_PROJECT if kind == "rule" else proj
            suffix = JSONL if kind == "conversation" else MARKDOWN
            # `--notes .precedents/notes`: still the team's notes, marked as such.
            origin = team.TEAM if kind == "note" and team.is_team_note(d, Path(proj)) else ""
            root = d.absolute()
            owners = _owners(root) if kind == "note" else ()
            deep = kind != "conversation"
            out.append(SourceDir(kind, root, owner, suffix, deep, origin=origin, owners=owners))
    return out


def _owners(folder: Path) -> tuple[SourceDir, ...]:
    """The rule and ADR readers of the repository ``folder`` lies in (its git root, else
    the folder) that reach into ``folder`` or lie under it: a notes folder leaves their
    files to them."""
    found = project_sources(git_root(folder))
    # ADR folders are found resolved (adr_graph): a notes folder named through a symlink
    # (macOS's /tmp, a linked ~/code) lists the same files under its own spelling.
    real = folder.resolve()
    if real != folder:
        found = [
            replace(s, root=folder / s.root.relative_to(real))
            if s.root.is_relative_to(real) and not s.root.is_relative_to(folder)
            else s
            for s in found
        ]
    return tuple(_near(folder, found))


def _near(folder: Path, sources: Iterable[SourceDir]) -> list[SourceDir]:
    """The rule and ADR readers of ``sources`` whose files may lie under ``folder``."""
    owning = (s for s in sources if s.kind in OWNING_KINDS and not s.refused)
    return [s for s in owning if folder in (s.root, *s.root.parents) or s.root in folder.parents]


def yields_to(src: SourceDir, path: str, sources: Iterable[SourceDir]) -> bool:
    """Whether notes source ``src`` leaves the file at ``path`` to a rule or ADR reader
    (of ``sources`` or its own ``owners``) that lists it: an `AGENTS.md`, a Cursor rule
    or an ADR under a notes folder stays a rule or an ADR, whatever the folders' order."""
    owners = _near(src.root, (*src.owners, *sources)) if src.kind == "note" else []
    return any(o.covers(path) for o in owners)


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
        # The withheld files recorded under it are replaced by this pass's.
        result.roots.append(src.root)
        if src.problem is not None and src.problem not in result.problems:
            result.problems.append(src.problem)
        if src.refused:
            result.left_out.append(src)
            continue  # its problem is all there is to say
        if src.optional and not src.root.exists():
            result.sources.append(src)  # what it held is gone
            continue  # not there yet: nothing to list, nothing wrong
        if src.linked_out():  # became a link out since it was found
            gone = Problem(shown_path(src.root), LINKED_OUT)
            if gone not in result.problems:
                result.problems.append(gone)
            result.left_out.append(src)
            continue
        result.sources.append(src)
        # Checked against the few readers near this folder only: a heavy user's notes
        # and hundreds of projects' readers would cost seconds every pass.
        owners = _near(src.root, (*src.owners, *sources)) if src.kind == "note" else []
        root = masked_path(src.root)
        if root is not None:
            # Its rows (from a store built before names were checked) must still go.
            result.withhold(Problem(root, FOLDER_REASON))
            continue
        for path in walk_dir(src, problems):
            if path in seen or any(o.covers(str(path)) for o in owners):
                continue  # seen, or a rule or ADR: its reader's (yields_to)
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
