"""Path history for the file hook: a file's decision commits, and who changed their lines.

Computed at index time, so the daemon answers a Read/Edit/Write from memory
without running git: ``PathHistory.for_path("src/retry.py")`` gives the
decision commits (commits with rationale) that touched the file under its
current name or an older one (renames are followed forward: an entry moves
with its file), newest first, each with the later commits *without*
rationale that removed or replaced lines the decision commit had added
(``later_line``: ``later changed by 3f2a1c9 "perf: simplify retry"``).

How a later change is found: a decision commit's added lines are kept as
32-bit hashes of their stripped text (trivial lines such as ``}`` or
``else:`` are left out, at most ``MAX_LINES`` per file, spread over the
patch). A later commit that removes one of those lines without adding it
back (a move or a re-indent adds it back) changed the decision; the line is
then dropped from the decision's set, so it is blamed once. Content, not
position: an unrelated commit that removes an identical non-trivial line of
the same file counts too, which is rare and errs on the side of telling.

Bounded: one ``git log --no-walk --stdin -p -U0`` over only the commits
that matter (decision commits, and later commits touching a file that has
one), read as a stream; at most ``PER_FILE`` decisions per file (the newest),
``MAX_LATER`` later changes per decision, ``MAX_PATCH_LINES`` changed lines
per file patch; commits with more files than commits.py keeps are not
patched (their renames and deletions are still followed).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from precedents.inert import inert
from precedents.ingest import git_log
from precedents.ingest.commits import Commit, CommitRead

PER_FILE: Final = 5
MAX_LATER: Final = 3
MAX_LINES: Final = 128
MAX_PATCH_LINES: Final = 4_000
PATCH_TIMEOUT_S: Final = 600.0


@dataclass(frozen=True)
class LaterChange:
    """A commit without rationale that changed lines a decision commit had added."""

    sha: str
    short: str
    date: str
    subject: str


@dataclass
class FileDecision:
    """A decision commit, as it bears on one file (``path``: the file's current name)."""

    sha: str
    short: str
    date: str
    subject: str
    path: str
    lines: set[int] = field(default_factory=set, repr=False)
    later: list[LaterChange] = field(default_factory=list)


def later_line(later: LaterChange) -> str:
    """``later changed by 3f2a1c9 "perf: simplify retry"`` (the subject is masked text,
    inert: it may not forge a mark of ours)."""
    subject = inert(later.subject, 72)
    return f'later changed by {later.short} "{subject}"'


@dataclass
class PathHistory:
    """Decision commits by the current path of each file they touched (repo-relative,
    ``/``-separated). ``head``: the commit it is current with; ``problems``: the last
    update's, one line each."""

    head: str | None = None
    by_path: dict[str, list[FileDecision]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def for_path(self, path: str) -> tuple[FileDecision, ...]:
        """The decision commits that touched ``path`` (or its former names), newest first."""
        return tuple(reversed(self.by_path.get(path.lstrip("/"), ())))

    def size(self) -> int:
        """How many (decision commit, file) entries are held."""
        return sum(len(entries) for entries in self.by_path.values())

    def to_json(self) -> dict[str, Any]:
        """A JSON-able form (line hashes as one hex string per entry)."""
        entries = [
            [d.sha, d.short, d.date, d.subject, d.path, _hexes(d.lines),
             [[x.sha, x.short, x.date, x.subject] for x in d.later]]
            for decisions in self.by_path.values() for d in decisions
        ]  # fmt: skip
        return {"version": 1, "head": self.head, "entries": entries}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PathHistory:
        """The history ``to_json`` wrote (an unknown version gives an empty one)."""
        history = cls(head=data.get("head") if data.get("version") == 1 else None)
        for sha, short, date, subject, path, hexes, later in data.get("entries", ()):
            lines = {int(hexes[i : i + 8], 16) for i in range(0, len(hexes), 8)}
            changes = [LaterChange(*x) for x in later]
            decision = FileDecision(sha, short, date, subject, path, lines, changes)
            history.by_path.setdefault(path, []).append(decision)
        return history


def _hexes(lines: set[int]) -> str:
    return "".join(f"{h:08x}" for h in sorted(lines))


def build_history(repo: Path, read: CommitRead) -> PathHistory:
    """The path history of the commits ``read`` found (a full read)."""
    return update_history(repo, PathHistory(), read)


def _needed(history: PathHistory, oldest_first: list[Commit], max_files: int) -> list[str]:
    """The commits whose patches matter: decision commits, and commits that touch a
    file some decision touched (under any of its names so far)."""
    tracked = set(history.by_path)
    needed = []
    for commit in oldest_first:
        touches = False
        for change in commit.files:
            if change.old in tracked or change.path in tracked:
                touches = True
                tracked.add(change.path)
            if commit.rationale and change.status != "D":
                touches = True
                tracked.add(change.path)
        if touches and not commit.more_files and len(commit.files) <= max_files:
            needed.append(commit.sha)
    return needed


def _patches(repo: Path, shas: list[str]) -> tuple[dict[str, dict[str, git_log.FilePatch]], str]:
    """{sha: {path: patch}} for ``shas``, read as one stream; and a problem line or ""."""
    if not shas:
        return {}, ""
    args = ["log", "--no-walk=unsorted", "--stdin", "-p", "-U0", "-M", "--no-color",
            "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/",
            "--format=%x1e%H"]  # fmt: skip
    patches: dict[str, dict[str, git_log.FilePatch]] = {}
    with tempfile.TemporaryFile() as stdin:
        stdin.write("".join(f"{sha}\n" for sha in shas).encode())
        stdin.seek(0)
        with git_log.Stream(git_log.git(repo, *args), timeout=PATCH_TIMEOUT_S, stdin=stdin) as out:
            lines = git_log.lines(out.stdout, 4096)
            for sha, files in git_log.parse_patches(lines, MAX_PATCH_LINES):
                patches[sha] = {path: _slim(p) for path, p in files.items()}
    if out.failed():
        return patches, f"path history: git log -p failed ({out.error or f'exit {out.code}'})"
    return patches, ""


def _slim(patch: git_log.FilePatch) -> git_log.FilePatch:
    """Keep only what the walk uses: the net removals, and the added lines sampled."""
    added = set(patch.added)
    removed = [h for h in patch.removed if h not in added]
    step = max(1, -(-len(patch.added) // MAX_LINES))
    return git_log.FilePatch(patch.old, patch.new, patch.added[::step], removed)


def update_history(repo: Path, history: PathHistory, read: CommitRead) -> PathHistory:
    """``history`` brought up to ``read`` (the commits new since ``history.head``, or a
    full read when ``read.rewritten``), updated in place and returned."""
    if read.rewritten:
        history.by_path.clear()
    history.problems = []
    oldest_first = list(reversed(read.commits))
    patches, problem = _patches(repo, _needed(history, oldest_first, git_log.MAX_FILES))
    if problem:
        history.problems.append(problem)
    for commit in oldest_first:
        _apply(history, commit, patches.get(commit.sha, {}))
    if read.head is not None:
        history.head = read.head
    return history


def _apply(history: PathHistory, commit: Commit, patch: dict[str, git_log.FilePatch]) -> None:
    by_path = history.by_path
    for change in commit.files:
        if change.status == "D":
            by_path.pop(change.path, None)
            continue
        if change.status == "R" and change.old in by_path:
            moved = by_path.pop(change.old)
            for decision in moved:
                decision.path = change.path
            by_path[change.path] = sorted(
                [*by_path.get(change.path, ()), *moved], key=lambda d: d.date
            )[-PER_FILE:]
        file_patch = patch.get(change.path)
        removed = set(file_patch.removed) if file_patch else set()
        for decision in by_path.get(change.path, ()) if removed else ():
            hit = decision.lines & removed
            if hit:
                decision.lines -= hit
                if not commit.rationale:
                    later = LaterChange(commit.sha, commit.short, commit.date, commit.subject)
                    decision.later = [*decision.later, later][-MAX_LATER:]
        if commit.rationale:
            added = set(file_patch.added) if file_patch else set()
            decision = FileDecision(
                commit.sha, commit.short, commit.date, commit.subject, change.path, added
            )
            by_path[change.path] = [*by_path.get(change.path, ()), decision][-PER_FILE:]
