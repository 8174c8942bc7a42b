"""Git history as a source (issue #27 item 4): commits whose body carries rationale.

A commit is a record when its body says why (``has_rationale``): the prompt
hook recalls it like any record, and the file hook gives the decision commits
that touched a file (following renames) and the later commits *without*
rationale that changed the lines a decision added (commit_history.py, which
builds on what ``read_commits`` returns).

Git access: the git CLI (``git log`` streamed through a pipe), not pygit2 or
dulwich. On a 100,000-commit repository (bench/commits.py, docs/commits.md)
``git log -z --name-status -M`` reads 20,000 commits with their files and
renames in 1.1 s; pygit2 1.21 (libgit2 1.9) took 10.7 s and dulwich 1.2 took
7.2 s for 5,000, diffing each commit against its parent from Python. The CLI
is also what every git project already has (no wheel, no libgit2 of another
version than the user's git: the same rename detection, the same shallow,
worktree, ``safe.directory`` and pack handling), and the standard library is
enough to stream it with bounded memory.

Dates are committer dates (``%cs``): when the change entered this history,
the order ``git log`` walks; a rebased or cherry-picked commit keeps its old
author date, which would put it before commits it followed.

Bounded cost: at most ``limit`` commits are looked at per read (the newest;
default ``DEFAULT_LIMIT``), a message is read up to ``MESSAGE_BYTES`` (the
body is kept masked and cut to ``BODY_CHARS``), a commit keeps at most
``MAX_FILES`` files, a file patch at most ``MAX_PATCH_LINES`` changed lines.
Nothing here raises on a bad repository: each problem is one line in
``CommitRead.problems`` and whatever could be read is returned.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from precedents.ingest import git_log

__all__ = [
    "Commit",
    "CommitRead",
    "FileChange",
    "has_rationale",
    "rationale_sentence",
    "read_commits",
]

DEFAULT_LIMIT: Final = 20_000
MESSAGE_BYTES: Final = 16_384
BODY_CHARS: Final = 4_000
MAX_FILES: Final = git_log.MAX_FILES
LOG_TIMEOUT_S: Final = 600.0
_SHA: Final = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass(frozen=True)
class FileChange:
    """A path a commit touched: ``status`` is git's letter (A, M, D, R, T); ``old`` is
    the name before a rename (``old == path`` otherwise)."""

    status: str
    path: str
    old: str


@dataclass(frozen=True)
class Commit:
    """One commit, masked and cut; ``date`` is the committer date (YYYY-MM-DD)."""

    sha: str
    short: str
    date: str
    author: str
    subject: str
    body: str
    files: tuple[FileChange, ...]
    rationale: bool
    more_files: int = 0  # files past MAX_FILES, not listed


@dataclass(frozen=True)
class CommitRead:
    """What one read found. Store ``head`` as the next ``known_head``: on a git
    failure it is the ``known_head`` given, so the next read tries that range again.

    ``complete`` is false when the limit or a failure left commits of the range
    unread; ``rewritten`` when ``known_head`` is no longer in the history (a
    rebase, a force push): the read is then a full one, and the caller should
    drop the commits it had that are not in it.
    """

    head: str | None
    commits: tuple[Commit, ...]  # newest first
    problems: tuple[str, ...] = ()
    complete: bool = True
    rewritten: bool = False


# -- rationale ---------------------------------------------------------------------------

_TRAILER = re.compile(
    r"^(?:[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+|fixes|fixed|closes|close|resolves|refs?|"
    r"references|bug|issue|ticket|cc|link|jira|task|story)(?: #)?: \S|"
    r"^\(cherry picked from commit ",
    re.I | re.M,
)
_BOILERPLATE = re.compile(
    r"^(?:merge (?:branch|pull request|remote-tracking|tag|commit)|merge \S+ into|revert \"|"
    r"bump |chore\(deps(?:-dev)?\)|build\(deps(?:-dev)?\)|\[?(?:version|release) ?v?\d|"
    r"v?\d+\.\d+(?:\.\d+)?$|update changelog|changelog)",
    re.I,
)
_BOT_BODY = re.compile(
    r"bumps? \[?[\w.@/-]+\]? from \S+ to |updates the requirements on|dependabot|"
    r"renovate|this reverts commit [0-9a-f]{7,}|^- \[(?:x| )\]",
    re.I | re.M,
)
# Words that say why, not what. Each is a whole word or phrase, matched case-blind.
_WHY = re.compile(
    r"\b(?:because|since (?:the|it|we|a|an|this|there|they|otherwise)|so that|so as to|"
    r"in order to|otherwise|instead of|rather than|"
    r"to (?:keep|avoid|prevent|ensure|allow|make sure|reduce|improve|preserve|support|"
    r"guarantee|handle|accommodate|work around|be able|match|stay|save|stop)|"
    r"(?:the )?(?:reason|rationale|motivation|problem|issue) (?:is|was|being|here)|"
    r"reason:|rationale:|motivation:|why:|we (?:decided|chose|prefer|want|need|can't|cannot)|"
    r"decided to|trade-?off|measured|benchmark|would (?:otherwise|cause|break|fail|lead)|"
    r"which (?:caused|causes|led|leads|meant|means|broke|breaks)|"
    r"caus(?:es|ed|ing)|leads? to|led to|this (?:means|ensures|allows|prevents|avoids|fixes)|"
    r"fix(?:es)? (?:a|the) (?:bug|race|crash|regression|leak|deadlock|issue)|"
    r"was (?:broken|wrong|failing|too)|doesn't work|did not work|didn't work|"
    r"not (?:safe|thread-safe|possible|supported|needed)|is (?:needed|required) (?:for|to|by|so)|"
    r"required (?:for|by|so)|the (?:previous|old|existing|current) (?:approach|behaviou?r|code)|"
    r"no longer (?:needed|necessary|works?|supported)|avoid(?:s|ing)?|prevent(?:s|ing)?|"
    r"previously,|now that|intended (?:for|to)|to address|, so\b|"
    r"so (?:that|both|it|they|the|we|this|there|a|an|users?|callers?)\b|"
    r", as (?:this|it|the|that|we|they)\b|this (?:saves|keeps|makes sure|way)|"
    r"(?:would|could|might) (?:not|never|fail|break|crash|cause|lead|result|bypass|hang|leak)|"
    r"fix(?:ed|es)? (?:a |an |the )?(?:[\w.-]+ )?(?:bug|issue|problem|regression)\b"
    r".{0,80}?\b(?:where|when|which|in which|that)\b)",
    re.I,
)
_MEASURE = re.compile(
    r"\b\d+(?:\.\d+)?\s?(?:ms|s|µs|us|ns|%|x|kb|mb|gb|k|req/s|rps|qps)\b.{0,80}"
    r"\b(?:faster|slower|less|more|from|down|up|instead|saves?|reduc|because|to)",
    re.I,
)


def _prose(body: str) -> str:
    """The body without trailers, quoted text, diffs and bare file lists."""
    keep = []
    for line in body.splitlines():
        s = line.strip()
        if not s or _TRAILER.match(s) or s.startswith((">", "diff --git", "+++", "---", "@@")):
            continue
        if re.fullmatch(r"[*-]?\s*[\w./-]+\.\w{1,5}(?::\d+)?\s*\|?.*", s) and " " not in s[2:]:
            continue  # a file name, alone on its line
        keep.append(s)
    return " ".join(keep)


def has_rationale(subject: str, body: str) -> bool:
    """Whether the body carries rationale: why, not just what (docs/commits.md).

    True when the body's prose (trailers, quotes, diffs and file lists left out;
    a subject of ten words or more when there is no body) has at least eight
    words and a why-word (``because``, ``so that``, ``otherwise``, ``to avoid``,
    ``instead of``, ``Reason:``, ``we decided``, ``measured``, ``fixed a bug
    where``...) or a number with a unit next to a comparison (``30 ms faster``).
    Merge, revert, bump and release boilerplate, and bot bodies
    (dependabot, renovate), never carry rationale.
    """
    subject = subject.strip()
    if _BOILERPLATE.match(subject) or _BOT_BODY.search(body):
        return False
    prose = _prose(body)
    if not prose and len(subject.split()) >= 10:
        prose = subject  # a one-line message (older conventions, svn imports)
    if len(prose.split()) < 8:
        return False
    return bool(_WHY.search(prose) or _MEASURE.search(prose))


def rationale_sentence(body: str, limit: int = 240) -> str:
    """The first sentence of the body that says why (else its first sentence), for a
    record's one-line ``subject — rationale``."""
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", _prose(body)) if s]
    chosen = next((s for s in sentences if _WHY.search(s) or _MEASURE.search(s)), "")
    text = chosen or (sentences[0] if sentences else "")
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# -- reading -----------------------------------------------------------------------------


def _problems_of(repo: Path) -> tuple[list[str], str, str | None]:
    """(problem lines, the revision to read, its sha); the sha is None when there is none."""
    code, top, err = git_log.run(repo, "rev-parse", "--show-toplevel", "--git-dir")
    if code == 127:
        return ["git is not on PATH: commits not read"], "", None
    if code != 0:
        return [f"not a git repository ({err or f'git exit {code}'}): commits not read"], "", None
    lines = top.splitlines()
    root = Path(lines[0])
    git_dir = Path(lines[-1]) if Path(lines[-1]).is_absolute() else repo / lines[-1]
    problems: list[str] = []
    rev = "HEAD"
    for folder in ("rebase-merge", "rebase-apply"):
        head_name = git_dir / folder / "head-name"
        if head_name.is_file():
            branch = head_name.read_text("utf-8", "replace").strip()
            if branch.startswith("refs/"):
                rev = branch
                problems.append(f"mid-rebase: reading {branch} as it was before the rebase")
            else:
                problems.append("mid-rebase of a detached HEAD: reading HEAD as it is now")
            break
    code, sha, err = git_log.run(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if code != 0 or not sha:
        why = err or "no commit yet"
        return [*problems, f"no history to read at {rev} ({why})"], rev, None
    if rev == "HEAD" and git_log.run(repo, "symbolic-ref", "-q", "HEAD")[0] != 0:
        problems.append(f"detached HEAD at {sha[:7]}: reading its history")
    if git_log.run(repo, "rev-parse", "--is-shallow-repository")[1] == "true":
        problems.append("shallow clone: only the commits fetched are read (git fetch --unshallow)")
    modules = root / ".gitmodules"
    code, out, _ = (
        git_log.run(repo, "config", "-f", str(modules), "--get-regexp", r"\.path$")
        if modules.is_file()
        else (1, "", "")
    )
    if code == 0:
        subs = [line.split(" ", 1)[-1] for line in out.splitlines()]
        shown = ", ".join(subs[:3]) + (f" and {len(subs) - 3} more" if len(subs) > 3 else "")
        problems.append(f"submodules not read (each is a repository of its own): {shown}")
    return problems, rev, sha


def _shallow_roots(repo: Path) -> frozenset[str]:
    code, out, _ = git_log.run(repo, "rev-parse", "--git-path", "shallow")
    path = Path(out) if Path(out).is_absolute() else repo / out
    if code != 0 or not path.is_file():
        return frozenset()
    return frozenset(path.read_text("ascii", "replace").split())


def _commit(
    raw: git_log.RawCommit, mask: Callable[[str], str], authors: dict[bytes, str]
) -> Commit:
    if raw.author not in authors:
        authors[raw.author] = mask(raw.author.decode("utf-8", "replace"))[:80]
    message = mask(raw.message.decode("utf-8", "replace").replace("\r\n", "\n"))
    head, _, body = message.strip("\n").partition("\n\n")
    subject = " ".join(head.split())[:300]
    body = body.strip("\n")
    cut = body if len(body) <= BODY_CHARS else body[: BODY_CHARS - 1].rstrip() + "…"
    files = tuple(FileChange(s, new, old) for s, old, new in raw.files)
    return Commit(
        raw.sha, raw.short, raw.date, authors[raw.author], subject, cut, files,
        has_rationale(subject, body), raw.more_files,
    )  # fmt: skip


def read_commits(
    repo: Path,
    *,
    known_head: str | None = None,
    limit: int = DEFAULT_LIMIT,
    mask: Callable[[str], str],
) -> CommitRead:
    """The commits of ``repo`` new since ``known_head`` (all of them when None), newest
    first, at most ``limit``; each message masked by ``mask`` before anything is kept.

    Never raises: a bad repository is lines in ``problems``, and what could be
    read is returned.
    """
    problems, rev, sha = _problems_of(repo)
    if sha is None:
        return CommitRead(known_head, (), tuple(problems), complete=False)
    rewritten = False
    span = rev
    if known_head == sha:
        return CommitRead(sha, (), tuple(problems))
    if known_head and not _SHA.fullmatch(known_head):
        rewritten = True  # not a commit id (a damaged state file): read it all
        problems.append(f"the last indexed head {known_head[:12]!r} is no commit id: read again")
    elif known_head:
        code, _, _ = git_log.run(repo, "merge-base", "--is-ancestor", known_head, sha)
        if code == 0:
            span = f"{known_head}..{sha}"
        else:
            rewritten = True
            problems.append(f"history rewritten since {known_head[:7]}: read again from {rev}")
    args = ["log", "-z", "--name-status", "-M", "--no-color", "--no-ext-diff", "--no-textconv"]
    argv = git_log.git(repo, *args, git_log.LOG_FORMAT, f"--max-count={limit + 1}", span, "--")
    commits: list[Commit] = []
    shallow = _shallow_roots(repo)
    authors: dict[bytes, str] = {}
    capped = False
    with git_log.Stream(argv, timeout=LOG_TIMEOUT_S) as out:
        for raw in git_log.parse_log(git_log.tokens(out.stdout, MESSAGE_BYTES), MAX_FILES):
            if len(commits) == limit:
                capped = True
                break
            if raw.sha in shallow:  # its diff is the whole tree, not what it changed
                raw.files, raw.more_files = [], 0
            commits.append(_commit(raw, mask, authors))
    failed = out.failed(stopped_early=capped)
    complete = not failed and not capped
    err = out.error
    code = out.code
    if capped:
        problems.append(f"only the newest {limit:,} commits are read")
    if failed:
        problems.append(f"git log failed after {len(commits):,} commits ({err or f'exit {code}'})")
    head = known_head if failed else sha
    return CommitRead(head, tuple(commits), tuple(problems), complete, rewritten)
