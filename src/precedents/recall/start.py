"""The SessionStart text: the rules that always apply, then the repository's live ADRs.

Both lists are capped and say how many were left out (never a silent cut).
Always-rules come first: the agent is meant to follow them in every task;
the ADR list is a table of contents (``- ID title`` lines, no path). Rules that Claude
Code loads at every start by itself (`.claude/rules` without `paths:`, the
root `CLAUDE.md`) are not listed again.
"""

from __future__ import annotations

from collections.abc import Sequence

from precedents.inert import SUSPECT_MARK
from precedents.protocol import EVENT_SESSION, printed_bytes
from precedents.recall.format import LineParts, fit_lines, line_parts
from precedents.store.rows import DocumentRecord

SESSION_CAP_BYTES = 2048
RULES_CAP_BYTES = 1024
SESSION_MAX_ADRS = 40
SESSION_MAX_RULES = 12
SESSION_HEADER = (
    "Live ADRs of this repository (current decisions only; read the file before relying on one)"
)
RULES_HEADER = (
    "Rules of this project that always apply (reference, not instructions; "
    "read the file before relying on one)"
)


def session_text(
    rules: Sequence[DocumentRecord], live_adrs: Sequence[DocumentRecord]
) -> tuple[str | None, int]:
    """The SessionStart text and how many of ``rules`` it lists (the first ones)."""
    rule_text, listed = None, 0
    if rules:
        more = "… and {} more rules that always apply (`precedents status` lists them)"
        parts = [line_parts(r) for r in rules]
        rule_text, listed = _fit_counted(
            parts, RULES_CAP_BYTES, RULES_HEADER, SESSION_MAX_RULES, more
        )
    cap = SESSION_CAP_BYTES
    if rule_text is not None:
        # What the rules add to the printed line: their escaped text and a newline.
        cap -= printed_bytes(rule_text + "\n", EVENT_SESSION) - printed_bytes("", EVENT_SESSION)
    adr_text = None
    if live_adrs:
        parts = [_adr_entry(line_parts(r)) for r in live_adrs]
        more = "… and {} more live ADRs: `precedents adr list --status live`"
        adr_text = _fit_counted(parts, cap, SESSION_HEADER, SESSION_MAX_ADRS, more)[0]
    texts = [t for t in (rule_text, adr_text) if t]
    return ("\n".join(texts) if texts else None), listed


def _adr_entry(parts: LineParts) -> LineParts:
    """An ADR in the list: "- ", its id and title, without the "adr  " prefix and the
    path; a suspect one keeps its path, the only thing shown of it (recall/format.py).
    The bullet keeps every line starting with our own text, never a record's."""
    if parts.head.startswith(SUSPECT_MARK):
        return LineParts(SUSPECT_MARK, "", "", parts.tail)
    return LineParts("- " + parts.head.removeprefix("adr  "), parts.joiner, parts.middle, "")


def fit_session(parts: list[LineParts]) -> str | None:
    """The live-ADR list alone, within the whole cap (kept for callers of the ADR list)."""
    more = "… and {} more live ADRs: `precedents adr list --status live`"
    return _fit_counted(parts, SESSION_CAP_BYTES, SESSION_HEADER, SESSION_MAX_ADRS, more)[0]


def _fit_counted(
    parts: Sequence[LineParts], cap: int, header: str, most: int, more: str
) -> tuple[str | None, int]:
    """As many of ``parts`` as fit (at most ``most``) and, when some are left out, a
    last line saying how many (``more`` formatted with the count); and how many fit."""
    keep = min(len(parts), most)
    while keep >= 0:
        omitted = len(parts) - keep
        footer = LineParts(more.format(omitted), "", "", "")
        lines = list(parts[:keep]) + ([footer] if omitted else [])
        text = fit_lines(lines, cap, EVENT_SESSION, header=header)
        if text is not None and len(text.splitlines()) - 1 == len(lines):
            return text, keep  # every line asked for fits (descriptions shrink to make them)
        keep -= 1  # one record fewer, so that the count line fits with it
    return None, 0
