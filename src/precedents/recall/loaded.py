"""The rules Claude Code loads into a session by itself, which the file hook leaves to it.

Issue #29: on a Read of ``src/db/schema.ts`` Claude Code inserts "Contents of
.claude/rules/db.md" itself (a ``.claude/rules`` file whose ``paths:`` match), and
a nested ``CLAUDE.md`` when a file below its folder is touched; the file hook gave
the same rule again. Which tools make it load them depends on its version
(measured with the real clients, docs/rules.md "Rules Claude Code loads itself"),
and the daemon learns a session's version from its transcript (the ``version``
field of its lines). Its InstructionsLoaded event (2.1.69 and later) then names
each file it loaded, after the tool: the session's ``loaded`` set.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass

from precedents.recall.files import Scoped
from precedents.recall.sessions import SessionLog
from precedents.rules.scope import Scope

READ_TOOL = "Read"
# The tools after which a Claude Code of at least this version loads a file's
# `.claude/rules` and nested CLAUDE.md, each once per session. Measured with `claude -p`
# and the stand-in API (docs/rules.md): 2.1.50 to 2.1.68 load none during a session;
# 2.1.69 to 2.1.287 on a Read; 2.1.288 on (2.1.332 included) after an Edit or a Write
# too. Tools not measured (NotebookEdit) load nothing here: a rule given twice costs less
# than one never given.
LOADS_SINCE: tuple[tuple[tuple[int, ...], frozenset[str]], ...] = (
    ((2, 1, 288), frozenset({READ_TOOL, "Edit", "Write"})),
    ((2, 1, 69), frozenset({READ_TOOL})),
)
# An unknown client (no transcript, no version in it): Claude Code's documented rule,
# "path-scoped rules trigger when Claude reads files matching the pattern".
DOCUMENTED = frozenset({READ_TOOL})
# A transcript's version is in its first lines; no more of it is read.
HEAD_BYTES = 64 * 1024
_VERSION = re.compile(rb'"version"\s*:\s*"(\d+)\.(\d+)\.(\d+)')


@dataclass(frozen=True)
class ClientLoaded:
    """What the file hook leaves to Claude Code (:func:`left_to_client`)."""

    give: list[Scoped]  # the records to give
    skipped: tuple[str, ...]  # rules Claude Code has loaded, or loads after this tool
    loading: tuple[str, ...]  # those of ``skipped`` this tool makes it load


def transcript_version(path: str) -> str | None:
    """The Claude Code version a session's transcript names ("" when it names none);
    None while it cannot be read (not written yet). Only a regular file is opened,
    without blocking (a FIFO named by a client must not hold a daemon thread)."""
    if not path.endswith(".jsonl"):
        return ""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        head = os.read(fd, HEAD_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    found = _VERSION.search(head)
    return ".".join(g.decode() for g in found.groups()) if found else ""


def loading_tools(version: str) -> frozenset[str]:
    """The tools after which Claude Code ``version`` ("": unknown) loads a file's rules."""
    try:
        parts = tuple(int(p) for p in version.split("."))
    except ValueError:
        return DOCUMENTED
    if len(parts) != 3:
        return DOCUMENTED
    for since, tools in LOADS_SINCE:
        if parts >= since:
            return tools
    return frozenset()


def session_tools(sessions: SessionLog, session: str, transcript: str) -> frozenset[str]:
    """The tools after which ``session``'s Claude Code loads a file's rules: by the version
    its ``transcript`` names, read once per session. Until the transcript can be read
    (Claude Code writes it after its first tool's PreToolUse), the version of the latest
    session that named one, the likeliest client; with none, or a transcript naming
    none (another client), Claude Code's documented rule."""
    version = sessions.client(session)
    if version is None and transcript:
        version = transcript_version(transcript)
        if version is None:
            return loading_tools(sessions.last_client)
        sessions.set_client(session, version)
    return loading_tools(version or "")


def left_to_client(
    found: Sequence[Scoped],
    *,
    tool: str,
    exists: bool,
    cwd_rel: str | None,
    loaded: frozenset[str],
    loads_on: frozenset[str] = DOCUMENTED,
) -> ClientLoaded:
    """Split the records a file hook found into those to give and the rules Claude Code
    loads by itself: a `.claude/rules` rule with ``paths:`` or a nested CLAUDE.md it
    loaded in this session (``loaded``: by its InstructionsLoaded event, or after an
    earlier tool on a file in scope), one it loads after this ``tool`` (one of
    ``loads_on``, on a file that ``exists``, or a Write, which makes it), and a nested
    CLAUDE.md of the working folder or above it (``cwd_rel``, relative to the project
    root: loaded at start). Other agents' rules are always given: Claude Code never
    loads them. An unknown ``tool`` ("": an older hook) loads nothing."""
    give: list[Scoped] = []
    skipped: list[str] = []
    loading: list[str] = []
    loads = tool in loads_on and (exists or tool == "Write")
    for s in found:
        if s.record.kind != "rule" or not s.scope.loaded_on_touch:
            give.append(s)
        elif s.record.path in loaded or _at_start(s.scope, cwd_rel):
            skipped.append(s.record.path)
        elif loads:
            skipped.append(s.record.path)
            loading.append(s.record.path)
        else:
            give.append(s)
    # The same text under another name (a nested CLAUDE.md linking to its AGENTS.md) too.
    texts = {s.digest for s in found if s.record.path in skipped and s.digest}
    give = [s for s in give if not s.digest or s.digest not in texts]
    return ClientLoaded(give, tuple(skipped), tuple(loading))


def _at_start(scope: Scope, cwd_rel: str | None) -> bool:
    """A nested CLAUDE.md Claude Code loaded at start: its folder holds the working folder."""
    base = scope.memory_of
    if base is None or cwd_rel is None:
        return False
    return cwd_rel == base or cwd_rel.startswith(base.rstrip("/") + "/")
