"""What the daemon decided lately, joined with what the hook delivered (`precedents why`).

The daemon's log holds, per answer, the project root, the decision, the scores
and the paths shown; the hook's log, per call, its outcome (``injected``,
``timeout``...). Neither holds the text of a message. A random request id
(``rid``), in both lines, joins them (issue #21): an answer the daemon decided
to inject but whose hook had given up by then is ``late: not delivered``, not
``injected``; so is one the daemon could not send (it logs ``undelivered``
with the id), even when the hook left no line (killed at Claude Code's
timeout). Records the mute list kept out make the decision ``muted`` when
nothing else was given. Lines without an id (older logs, the HTTP hook, whose
answer the daemon delivers itself) show the daemon's decision alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

LOG = "daemon.log"
HOOK_LOG = "hook.log"
_MARK = " answer {"
_UNDELIVERED_MARK = " undelivered {"  # an answer the daemon could not send: the hook had gone
_HOOK_MARK = " precedents.hook: {"


# Reasons for which something was chosen (recall/selection.py; "file": the file hook's;
# "session": SessionStart's list).
CHOSEN = ("narrow", "wide", "changed", "relevant", "conversation", "file", "session")
EVENTS = {"context": "prompt", "file": "file", "session": "session"}
# What a hook that did not print the daemon's answer says it did instead.
NOT_DELIVERED = {"timeout": "late: not delivered"}


def _decision(entry: dict[str, Any], hook: dict[str, Any] | None) -> str:
    """The daemon's decision, as far as the hook's outcome (when known) bears it out."""
    reason = str(entry.get("reason") or "")
    if entry.get("op") == "session" and reason != "starting":
        # SessionStart: the always-apply rules and live ADRs, no scores, nothing to fit.
        reason = "session" if entry.get("bytes") else "none"
    if reason in CHOSEN and entry.get("bytes"):
        decided = "injected"
    elif entry.get("muted") and not entry.get("bytes"):
        decided = "muted"
    elif reason in CHOSEN:
        decided = "nothing-fit"
    else:
        decided = reason or "none"
    if decided != "injected" or hook is None:
        return decided
    outcome = str(hook.get("outcome"))
    if outcome == "injected":
        return decided
    return NOT_DELIVERED.get(outcome, f"not delivered: {outcome}")


def _lines(log_dir: Path, name: str, mark: str) -> list[tuple[str, dict[str, Any]]]:
    """(time, the JSON after ``mark``) of each line of ``name`` and its rotations, oldest
    first; the time as ``YYYY-MM-DD HH:MM:SS`` whichever log it comes from."""
    found: list[tuple[str, dict[str, Any]]] = []
    for path in (f"{name}.2", f"{name}.1", name):  # oldest first, as the logs rotate
        try:
            lines = (log_dir / path).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            at = line.find(mark)
            if at < 0:
                continue
            try:
                entry = json.loads(line[at + len(mark) - 1 :])
            except ValueError:
                continue
            if isinstance(entry, dict):
                found.append((line[:19].replace("T", " "), entry))
    return found


def _total_ms(ms: object) -> object:
    """An answer's time: ``ms.total`` (prompts, files) or ``ms`` itself (SessionStart)."""
    return ms.get("total") if isinstance(ms, dict) else ms


def hook_calls(log_dir: Path) -> dict[str, dict[str, Any]]:
    """The hook's log lines that carry a request id, by that id."""
    calls = {}
    for time, entry in _lines(log_dir, HOOK_LOG, _HOOK_MARK):
        rid = entry.get("rid")
        if isinstance(rid, str) and rid:
            calls[rid] = {**entry, "time": time}
    return calls


def recent_answers(log_dir: Path, project: str | None, n: int = 5) -> list[dict[str, Any]]:
    """The last ``n`` answers to prompts, file tools and SessionStart (newest first), of
    ``project``
    when given; a record left out as given already in the session is ``withheld``;
    ``hook`` is what the hook did with the answer (its outcome), None when unknown."""
    hooks = hook_calls(log_dir)
    for _, gone in _lines(log_dir, LOG, _UNDELIVERED_MARK):
        rid = gone.get("rid")
        if isinstance(rid, str) and rid and rid not in hooks:
            hooks[rid] = {"outcome": "timeout"}  # the hook gave up, and was killed before its line
    found: list[dict[str, Any]] = []
    for time, entry in _lines(log_dir, LOG, _MARK):
        if entry.get("op") not in EVENTS:
            continue
        if project and entry.get("project") != project:
            continue
        rid = entry.get("rid") or None
        hook = hooks.get(rid) if rid else None
        found.append(
            {
                "time": time,
                "project": entry.get("project"),
                "event": EVENTS[str(entry.get("op"))],
                "decision": _decision(entry, hook),
                "hook": hook.get("outcome") if hook else None,
                "waited_ms": hook.get("ms") if hook and hook.get("waited") else None,
                "rid": rid,
                "withheld": entry.get("withheld") or [],
                "muted": entry.get("muted") or [],
                "reason": entry.get("reason"),
                "top": entry.get("top"),
                "gap": entry.get("gap"),
                "relevance": entry.get("relevance"),
                # Older log lines have no "shown": their ids were the records shown.
                "shown": entry["shown"] if "shown" in entry else entry.get("ids") or [],
                # Shown as their path only: their text reads as orders (docs/daemon.md).
                "suspect": entry.get("suspect") or [],
                # Team notes among them, with their marks ("(team, author, date)").
                "team": entry.get("team") or {},
                # Conversations among them: where their decision passage was said.
                "decided": entry.get("decided") or {},
                "bytes": entry.get("bytes", 0),
                "ms": _total_ms(entry.get("ms")),
            }
        )
    return found[::-1][:n]


def unanswered_calls(log_dir: Path, since: str = "", n: int = 5) -> list[dict[str, Any]]:
    """The last ``n`` hook calls (newest first) since ``since`` (a log
    time) that the daemon never answered (down, not ready, too slow to even read
    them): hook lines whose request id no daemon line carries. Of any project: the
    hook's log names none."""
    answered = {e.get("rid") for _, e in _lines(log_dir, LOG, _MARK) if e.get("rid")}
    calls = [
        c
        for rid, c in hook_calls(log_dir).items()
        if rid not in answered
        and c.get("event") in EVENTS.values()
        and c.get("outcome") in ("timeout", "down", "starting", "error")
        and c["time"] >= since
    ]
    return calls[::-1][:n]
