"""Which files of a project are rule files, of which agent's format, and where to watch.

Every format of docs/rules.md is recognised from the file's path alone
(:func:`classify`), so the indexer, the watcher and `status` agree without
any config. Discovery (:func:`discover`) walks the project once, pruning
dependency and build folders, and returns the folders a watcher needs: the
rule folders themselves (recursive) and the folders holding single rule
files (`AGENTS.md`, nested `CLAUDE.md`...), watched without recursion.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from precedents.files import LINKED_OUT, NOT_UTF8_NAME, escaped, inside, undecodable

# Rule folders, by the folder name below the folder they sit in: `<dir>/.cursor/rules`.
RULE_DIRS: dict[str, tuple[str, tuple[str, ...]]] = {
    ".cursor/rules": ("cursor", (".mdc", ".md")),
    ".claude/rules": ("claude", (".md",)),
    ".windsurf/rules": ("windsurf", (".md",)),
}
ROOT_DIRS: dict[str, tuple[str, tuple[str, ...]]] = {
    ".github/instructions": ("copilot-instructions", (".instructions.md",)),
    ".clinerules": ("cline", (".md",)),
}
# Single files at the project's root, and at any depth.
ROOT_FILES = {
    ".cursorrules": "cursorrules",
    ".clinerules": "cline",
    "AGENTS.md": "agents-md",
}
GITHUB_FILES = {"copilot-instructions.md": "copilot"}
NESTED_FILES = {"AGENTS.md": "agents-md", "CLAUDE.md": "claude-md", "CLAUDE.local.md": "claude-md"}
CLAUDE_MEMORY = ("CLAUDE.md", "CLAUDE.local.md")
FORMATS = (
    "cursor",
    "cursorrules",
    "claude",
    "claude-md",
    "copilot",
    "copilot-instructions",
    "windsurf",
    "cline",
    "agents-md",
)
# Version control, dependency, build and tool folders: never a project's own rules,
# often huge. Other hidden folders are walked (`.github/workflows/AGENTS.md` is a rule).
PRUNED = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".cache",
        ".next",
        ".nuxt",
        ".svelte-kit",
        ".turbo",
        ".gradle",
        ".idea",
        ".terraform",
        ".yarn",
        ".pnpm-store",
        ".eggs",
        ".direnv",
        "node_modules",
        "bower_components",
        "vendor",
        "venv",
        ".venv",
        "__pycache__",
        "site-packages",
        "dist",
        "build",
        "target",
        "Pods",
        "DerivedData",
        "coverage",
    }
)
# A project past this many folders is walked no further (a home folder taken
# for a project, a monorepo with generated trees): reported, never a stall.
MAX_FOLDERS = 20_000


@dataclass(frozen=True)
class RuleFile:
    """Where a rule file sits: its format and the folder its scope is relative to."""

    format: str
    base: str  # the rule's folder relative to the project root, "" for the root


@dataclass(frozen=True)
class Watch:
    """A folder holding rule files: all files with ``suffixes`` below it (``recursive``),
    or only the files named in ``names`` directly in it."""

    folder: Path
    recursive: bool
    suffixes: tuple[str, ...] = ()
    names: tuple[str, ...] = ()


@dataclass
class Discovery:
    """The watches of one project, and what could not be walked. ``refused``: rule
    folders that are symlinks out of the project, and names that are not UTF-8, each
    with its one-line reason: never watched nor read (issue #28)."""

    watches: list[Watch] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)

    def add(self, root: Path, watch: Watch) -> None:
        """Watch ``watch`` when its folder really lies in the project at ``root``: a
        cloned repository's `.cursor/rules -> ~/private` must not make outside files
        its rules."""
        if inside(watch.folder, root):
            self.watches.append(watch)
        elif (str(watch.folder), LINKED_OUT) not in self.refused:
            self.refused.append((str(watch.folder), LINKED_OUT))


def classify(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> RuleFile | None:
    """The format of a rule file of the project at ``root`` (None: not a rule file there).

    Decided from the path alone, as docs/rules.md lays the formats out.
    """
    try:
        rel = PurePosixPath(Path(path).relative_to(root).as_posix())
    except ValueError:
        return None
    parts = rel.parts
    if not parts or ".." in parts:
        return None
    name, folders = parts[-1], parts[:-1]
    if not folders:
        fmt = ROOT_FILES.get(name)
        return RuleFile(fmt, "") if fmt else None
    if folders == (".github",) and name in GITHUB_FILES:
        return RuleFile(GITHUB_FILES[name], "")
    for prefix, (fmt, suffixes) in ROOT_DIRS.items():
        top = tuple(prefix.split("/"))
        if folders[: len(top)] == top and name.endswith(suffixes):
            return RuleFile(fmt, "")
    for i in range(len(folders) - 1):
        key = f"{folders[i]}/{folders[i + 1]}"
        if key in RULE_DIRS and name.endswith(RULE_DIRS[key][1]):
            return RuleFile(RULE_DIRS[key][0], "/".join(folders[:i]))
    if folders == (".claude",) and name in CLAUDE_MEMORY:
        return None  # the project's memory: Claude Code loads it at start, like the root's
    if name in NESTED_FILES and not any(p in PRUNED for p in folders):
        return RuleFile(NESTED_FILES[name], "/".join(folders))
    return None


def format_in_path(path: str | os.PathLike[str]) -> str:
    """The format of a rule file outside any project (a user-level or configured rules
    folder), from a rule folder in its path: ``~/.claude/rules/x.md`` is a Claude rule.
    "" when its path names none (its front matter keys then decide)."""
    folders = PurePosixPath(Path(path).as_posix()).parts[:-1]
    pairs = {f"{a}/{b}" for a, b in itertools.pairwise(folders)}
    for prefix, (fmt, _suffixes) in {**RULE_DIRS, **ROOT_DIRS}.items():
        if prefix in pairs or (prefix == ".clinerules" and prefix in folders):
            return fmt
    return ""


def discover(root: Path, max_folders: int = MAX_FOLDERS) -> Discovery:
    """Walk the project at ``root`` for rule folders and files; never raises."""
    found = Discovery()
    found.watches.append(Watch(root, False, names=tuple(ROOT_FILES)))
    if (root / ".github").is_dir():
        found.add(root, Watch(root / ".github", False, names=tuple(GITHUB_FILES)))
    for prefix, (_fmt, suffixes) in ROOT_DIRS.items():
        if (root / prefix).is_dir():
            found.add(root, Watch(root / prefix, True, suffixes))
    stack, seen = [root], 0
    while stack:
        folder = stack.pop()
        seen += 1
        if seen > max_folders:
            found.problems.append(
                (str(root), f"stopped looking for rule files after {seen - 1:,} folders")
            )
            break
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            found.problems.append((str(folder), f"cannot list folder: {exc.strerror}"))
            continue
        # A name that is not UTF-8 is no rule file: skipped (the walk of a rule folder
        # reports such a file); a folder so named is not walked, said in one line.
        for entry in [e for e in entries if undecodable(e.name)]:
            entries.remove(entry)
            if entry.name not in PRUNED and _is_folder(entry):
                found.refused.append((escaped(entry.path), NOT_UTF8_NAME))
        names = {e.name for e in entries}
        for prefix, (_fmt, suffixes) in RULE_DIRS.items():
            if prefix.split("/")[0] in names and (folder / prefix).is_dir():
                found.add(root, Watch(folder / prefix, True, suffixes))
        nested = names & set(NESTED_FILES)
        if folder == root / ".claude":
            nested -= set(CLAUDE_MEMORY)
        if folder != root and nested:
            found.add(root, Watch(folder, False, names=tuple(sorted(nested))))
        for entry in reversed(entries):  # the stack pops them in name order
            if entry.name in PRUNED:
                continue
            if _is_folder(entry):
                stack.append(Path(entry.path))
    return found


def _is_folder(entry: os.DirEntry[str]) -> bool:
    """A real folder (a symlink to one is not walked: it may leave the project)."""
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False
