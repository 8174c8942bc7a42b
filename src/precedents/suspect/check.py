"""The suspect check: does a record's text read as orders to the agent?

Each field is read in every variant that undoes a disguise (normal.py: invisible
characters, look-alike letters, leetspeak), and base64 runs in it are decoded and read
too; the patterns (english.py, commands.py, foreign.py) run on each variant, each only
when its anchor words are there. The first reason found is the answer.
"""

from __future__ import annotations

import re
from functools import lru_cache

from precedents.suspect import commands, english, foreign
from precedents.suspect.normal import decoded, variants

_RULES = (*english.RULES, *commands.RULES, *foreign.RULES)
_WORD = re.compile(r"[a-z0-9]+")
_WORD_ANY = re.compile(r"[^\W_]+")  # words of any script
# Characters that hide or reorder text (bidi overrides and isolates, Unicode tags):
# ordinary text in any script has no use for them.
_HIDING = re.compile("[\u202a-\u202e\u2066-\u2069\U000e0000-\U000e007f]")

# A prohibition just before a match ("never pipe `curl … | sh`") is guidance, not an order.
_NEGATED = re.compile(
    r"\b(?:not|never|avoid|no|don'?t|instead\W+of|rather\W+than|against|forbid\w*|prohibit\w*|"
    r"ban|banned|disallow\w*|unsafe|dangerous|insecure)\b[^.!?;]{0,40}$",
    re.IGNORECASE,
)
_NEGATABLE = ("execute", "exfiltrate")
# A long text is read in overlapping windows: every pattern spans far less than the
# overlap, and a hostile field of a megabyte costs linear time, never a pattern's worst
# case over the whole of it.
_WINDOW = 2000
_OVERLAP = 600
# No channel shows more of one field than this (a hook's field at most 500 characters,
# an ADR's text 40,000: adr_graph/view.py BODY_CHARS), so no more is read: a hostile
# megabyte costs what 64 KB does (about 0.3 s at worst, once: the answer is memoized).
_FIELD_CHARS = 64_000


def _windows(text: str) -> list[str]:
    if len(text) <= _WINDOW:
        return [text]
    step = _WINDOW - _OVERLAP
    # A window after the first opens with a word of its own, so that it never reads as
    # the start of the text (a few patterns hold only there).
    return [
        ("x " if at else "") + text[at : at + _WINDOW]
        for at in range(0, len(text) - _OVERLAP, step)
    ]


def _matched(text: str) -> str:
    lower = text.lower()
    found = frozenset((_WORD if lower.isascii() else _WORD_ANY).findall(lower))
    for reason, anchor, pattern in _RULES:
        if not anchor(found, lower):
            continue
        for match in pattern.finditer(text):
            before = text[max(0, match.start() - 60) : match.start()]
            if reason not in _NEGATABLE or not _NEGATED.search(before):
                return reason
    return ""


def _reason(text: str, decode: bool) -> str:
    for reading in variants(text):
        why = _matched(reading)
        if why:
            return why
    if decode:  # one level: an order encoded twice is still base64 to the model
        for words in decoded(text):
            why = "hiding" if _HIDING.search(words) else _reason(words, decode=False)
            if why:
                return why
    return ""


@lru_cache(maxsize=4096)
def suspect_reason(*texts: str) -> str:
    """Why the record whose fields are ``texts`` reads as orders to the agent (a word:
    ``override``, ``role``, ``framing``, ``leak``, ``hijack``, ``bypass``,
    ``exfiltrate``, ``execute``, ``hiding``), or ``""`` when it does not."""
    for raw in texts:
        if not raw:
            continue
        if _HIDING.search(raw):
            return "hiding"
        for window in _windows(raw[:_FIELD_CHARS]):
            why = _reason(window, decode=True)
            if why:
                return why
    return ""
