"""What every pattern module of the suspect check shares: a rule is a reason, an anchor
and a pattern; the pattern runs only when its anchor holds (most text has none of the
anchor words, so most patterns never run)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

# An anchor reads the text's words (lower case, split once) and the lower-cased text.
Anchor = Callable[[frozenset[str], str], bool]
Rule = tuple[str, Anchor, re.Pattern[str]]


def words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def compiled(raw: Iterable[tuple[str, Anchor, str]]) -> tuple[Rule, ...]:
    return tuple((why, anchor, re.compile(pattern, re.IGNORECASE)) for why, anchor, pattern in raw)
