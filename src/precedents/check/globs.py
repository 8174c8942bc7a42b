"""Glob patterns of a rule's scope that are malformed or can never match.

Read by the grammar of docs/rules.md ("Glob semantics", the one
:class:`precedents.rules.globs.GlobSet` compiles): what it reads literally
(an unclosed ``[``, unbalanced or one-choice braces) matches only a file with
that character in its name, which is never what the author meant.
"""

from __future__ import annotations

import re
from typing import Final

from precedents.check.model import ERROR, WARNING, Level

NEVER: Final = "it can never match"
# A Windows path: `\` before a letter, a digit, `_`, `.`, `-` or `**` (an escape there
# changes nothing in a glob, so it was meant as a separator).
_BACKSLASH_PATH = re.compile(r"\\(?:[A-Za-z0-9_.-]|\*\*)")
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
# A whole segment in brackets, as Next.js and SvelteKit name route folders:
# `[id]`, `[...slug]`, `[[...slug]]`.
_ROUTE_FOLDER = re.compile(r"^\[\[?(?:\.\.\.)?[A-Za-z_][\w-]+\]\]?$")
_RANGE = re.compile(r"\[!?\^?(?:[^\]\\/]|\\.)*?(.)-(.)\]")


def glob_problems(pattern: str) -> list[tuple[Level, str]]:
    """(level, message) for each problem of one pattern as written (``!`` allowed);
    each message completes "`paths:` pattern 'x' ..."."""
    body = pattern[1:] if pattern.startswith("!") else pattern
    out: list[tuple[Level, str]] = []
    if body.startswith("~"):
        out.append((ERROR, f"starts with `~`, which no agent expands: {NEVER}"))
    if _DRIVE.match(body):
        out.append((ERROR, f"is an absolute Windows path; patterns are relative: {NEVER}"))
    elif _BACKSLASH_PATH.search(body):
        out.append(
            (
                ERROR,
                f"separates folders by `\\`, which escapes the next character: {NEVER}; use `/`",
            )
        )
    segments = body.split("/")
    if ".." in segments:
        out.append(
            (ERROR, f"has a `..` segment; a rule matches files below its folder only: {NEVER}")
        )
    out.extend(_brace_problems(body))
    for segment in segments:
        out.extend(_class_problems(segment))
    return out


def _brace_problems(body: str) -> list[tuple[Level, str]]:
    """Unbalanced braces, and a pair with one choice (``*.{ts}``): both read literally."""
    stack: list[tuple[int, bool]] = []  # (where the `{` is, a top-level comma seen)
    single = ""
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\":
            i += 2
            continue
        if char == "{":
            stack.append((i, False))
        elif char == "," and stack:
            stack[-1] = (stack[-1][0], True)
        elif char == "}":
            if not stack:
                return [(ERROR, f"has a `}}` with no `{{`; read literally, {NEVER} a real file")]
            start, comma = stack.pop()
            if not comma and not single:
                single = body[start : i + 1]
        i += 1
    if stack:
        return [(ERROR, f"has a `{{` with no `}}`; read literally, {NEVER} a real file")]
    if single:
        return [
            (
                ERROR,
                f"has braces with one choice ({single}), which stay literal: {NEVER} "
                "a real file; drop the braces or add the other choices",
            )
        ]
    return []


def _class_problems(segment: str) -> list[tuple[Level, str]]:
    """An unclosed ``[``, an empty range (``[z-a]``), a route folder read as a class."""
    unescaped = re.sub(r"\\.", "", segment)
    if "[" in unescaped and "]" not in unescaped[unescaped.index("[") + 2 :]:
        return [(ERROR, f"has a `[` with no `]`; read literally, {NEVER} a real file")]
    for found in _RANGE.finditer(segment):
        if found.group(1) > found.group(2):
            return [(ERROR, f"has an empty range ({found.group(0)}): {NEVER}")]
    if _ROUTE_FOLDER.match(segment):
        return [
            (
                WARNING,
                f"reads {segment} as a character class (one character), not the folder "
                f"named {segment}; escape the brackets to match that folder",
            )
        ]
    return []
