"""The injection payload corpus and what "unneutralised" means, for the channel tests.

tests/fixtures/injection-payloads holds 313 real payloads (SOURCE.md). A payload
*reaches the agent unneutralised* when, in what a channel hands the agent (the
hook's ``additionalContext``, a JSON value of `query --json` or MCP `recall`):

1. a ``<`` or ``>`` (or a full-width or small form of one) appears: markup could
   be opened or closed (``</system-reminder>``);
2. a control, format (bidi, zero-width, Unicode tag), surrogate, private-use or
   line/paragraph-separator character appears, or a newline inside a record;
3. a role label appears (``SYSTEM:``, ``Human:``, ``assistant:`` …), or a line
   starts with a role word or a Markdown heading;
4. a chat-template token (``[INST]``, ``<<SYS>>``, ``<|im_start|>``) or a code
   fence (```` ``` ````) appears;
5. the hook's text has more lines than its header, its records and its footer
   (a record spilled over a line of its own);
6. a record the detector flags as suspect shows anything but its path and marks
   (its name, description or id appear).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parent / "fixtures" / "injection-payloads" / "payloads.json"

ANGLES = frozenset("<>＜＞﹤﹥")
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})
ROLE_LABEL = re.compile(
    r"\b(?:system|assistant|user|human|developer|ai|bot|model|tool|function|instructions?|"
    r"response)(?:\s+[a-z]+)?\s*[:：﹕]",
    re.IGNORECASE,
)
# A line opened by a role word, a heading or a quote: never one of ours.
LINE_START = re.compile(
    r"^\s*[#>*]*\s*(?:system|assistant|user|human|developer)\b|^\s*[#>]", re.IGNORECASE
)
TEMPLATE = re.compile(r"\[\s*/?\s*(?:INST|SYS)\s*\]|<<\s*/?SYS|\|im_(?:start|end)\|>", re.I)


def payloads() -> list[dict[str, str]]:
    """Every payload: ``{"id", "text"}``."""
    data: list[dict[str, str]] = json.loads(CORPUS.read_text(encoding="utf-8"))
    return data


def field_violations(text: str) -> list[str]:
    """What in one piece of text (a line, or a JSON value) breaks rules 1-4."""
    out = []
    if any(c in ANGLES for c in text):
        out.append("angle bracket")
    for ch in text:
        code = ord(ch)
        if unicodedata.category(ch) in HIDDEN_CATEGORIES or 0xFE00 <= code <= 0xFE0E:
            out.append(f"hidden character U+{code:04X}")
            break
    if ROLE_LABEL.search(text):
        out.append("role label")
    if TEMPLATE.search(text):
        out.append("chat-template token")
    if "```" in text or "~~~" in text:
        out.append("code fence")
    return out


def text_violations(text: str | None, lines: int | None = None) -> list[str]:
    """What in the hook's text breaks rules 1-5 (``lines``: how many it should have)."""
    if text is None:
        return []
    out = []
    split = text.split("\n")
    for line in split:
        out += field_violations(line)
        if LINE_START.search(line):
            out.append(f"line starts with a role word or heading: {line[:40]!r}")
    if lines is not None and len(split) != lines:
        out.append(f"{len(split)} lines where {lines} were expected")
    return out


def suspect_violations(text: str | None, paths: Iterable[str]) -> list[str]:
    """Rule 6: each line naming a suspect record (by its ``paths``, as stored) is its
    mark and path only: ``⚠️suspect KIND (PATH)``, ``⚠️suspect MARK adr (PATH)``, or
    ``⚠️suspect (PATH)`` (SessionStart's ADR list)."""
    from precedents.inert import SUSPECT_MARK, inert_path

    if not text:
        return []
    out = []
    for path in paths:
        shown = f"({inert_path(path)})"
        shape = re.compile(
            rf"{re.escape(SUSPECT_MARK)}(?: (?:note|rule|conversation|adr)| .+ adr)? "
            + re.escape(shown)
        )
        for line in text.split("\n"):
            if line.endswith(shown) and not shape.fullmatch(line):
                out.append(f"suspect record shows more than its path: {line[:60]!r}")
    return out


def json_violations(row: dict[str, Any]) -> list[str]:
    """Rules 1-4 for every string value of one `query --json` / MCP record."""
    out = []
    for key, value in row.items():
        if isinstance(value, str):
            out += [f"{key}: {v}" for v in field_violations(value)]
    return out
