"""Echoes: a secret found once is masked wherever it recurs in a conversation.

A user pastes ``REDIS_PASSWORD=Harbor-Lantern-7781``; the keyword gives the
value away there, but the assistant's answer (``I set it to
Harbor-Lantern-7781``) and later tool output carry it with no keyword at
all. :func:`precedents.secrets.mask.mask_together` finds the secrets of every
text of a conversation (and of its tool input and output, which are not
stored), collects their values here, and masks each value wherever it stands
as a whole token in any stored text, before its first masked occurrence too.

Pure functions on strings; :mod:`precedents.secrets.mask` does the finding.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

from precedents.secrets.context import password_like
from precedents.secrets.rules import repeatable

__all__ = ["MAX_VALUES", "echo_spans", "echo_values"]

Span = tuple[int, int, str]

# A conversation pasting more distinct secrets than this is an env dump or a
# key file: the first ones found are echoed, the rest masked where found.
MAX_VALUES: Final = 4096
_MIN_PHRASE: Final = 12
# ``user:PASSWORD@host`` inside a larger finding (kingfisher masks a whole
# MongoDB URI): the password alone is echoed too.
_URL_PASSWORD_RE: Final = re.compile(r"://[^\s:/@'\"`<>]*:([^\s/@'\"`<>]+)@")
_MASK_RE: Final = re.compile(r"\[MASKED:[a-z0-9-]+\]")


def _echoable(value: str) -> bool:
    """Distinctive enough to mask wherever it recurs: a token with a letter and
    a digit or a symbol, a long random run, or a passphrase of several words;
    never a plain word, a code name or a placeholder, which would spread one
    false positive over a whole conversation (docs/secrets.md)."""
    if _MASK_RE.search(value):
        return False
    if " " in value.strip():
        return len(value) >= _MIN_PHRASE and len(value.split()) >= 2 and len(value) <= 200
    return repeatable(value) or password_like(value)


def echo_values(text: str, spans: Iterable[Span], into: dict[str, str]) -> None:
    """Add to ``into`` (value -> kind) each echoable value of ``text`` at ``spans``."""
    for start, end, kind in spans:
        if len(into) >= MAX_VALUES:
            return
        value = text[start:end].strip()
        if value not in into and _echoable(value):
            into[value] = kind
        if "://" in value:
            for m in _URL_PASSWORD_RE.finditer(value):
                inner = m.group(1)
                if inner not in into and _echoable(inner):
                    into[inner] = kind


def _bounded(text: str, start: int, end: int) -> bool:
    """A whole token: no letter or digit glued to either side."""
    return (start == 0 or not text[start - 1].isalnum()) and (
        end == len(text) or not text[end].isalnum()
    )


def echo_spans(text: str, values: Mapping[str, str]) -> list[Span]:
    """Every whole-token occurrence in ``text`` of the ``values`` (value -> kind).

    ``value in text`` (a C substring search) rules most values out first, so a
    conversation's hundred values cost a hundred fast scans, not a regex pass
    of a hundred alternatives at every character.
    """
    found: list[Span] = []
    for value, kind in values.items():
        if value not in text:
            continue
        pos = text.find(value)
        while pos >= 0:
            end = pos + len(value)
            if _bounded(text, pos, end):
                found.append((pos, end, kind))
            pos = text.find(value, end)
    return found
