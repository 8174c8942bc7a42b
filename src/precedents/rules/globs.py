"""Glob scopes of project rules: one grammar for every agent's format.

The semantics are those of docs/rules.md, "Glob semantics". Each pattern is
compiled once to a regular expression that cannot backtrack catastrophically.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from itertools import islice, pairwise

__all__ = [
    "MAX_ALTERNATIVES",
    "MAX_EXPANDED_CHARS",
    "MAX_PATTERNS",
    "MAX_PATTERN_CHARS",
    "SNAPSHOT_BUDGET",
    "GlobCache",
    "GlobSet",
    "over_budget",
    "split_patterns",
]

MAX_ALTERNATIVES = 256  # brace expansion stops here: `{a,b}{a,b}...` must not explode
# What one rule's scope may cost to compile (issue #28: a 16 KB `globs:` took 12.8 s).
# The real rules of tests/fixtures/rules-wild (597 files) have at most 8 patterns, 78
# characters in one, 8 alternatives after brace expansion and 207 characters in all;
# a rule over any cap is attached to no file, and says so (docs/rules.md).
MAX_PATTERNS = 128
MAX_PATTERN_CHARS = 1_024
MAX_EXPANDED_CHARS = 16_384  # every pattern's brace alternatives, summed
# What one snapshot's rules may compile together, in the same measure: ~2,400 rules
# of the largest real scope, ~30,000 of `src/mN/**/*.ts`; compiling that many takes
# ~10 s of the daemon's refresh thread (docs/benchmarks.md). Rules past it (in path
# order) are attached to no file.
SNAPSHOT_BUDGET = 500_000
_MAX_BRACE_DEPTH = 32  # deeper braces stay literal rather than recurse without bound
_QUOTES = "'\""
# Token values no translated atom can take: re.escape never yields a bare "*", and a
# "/" in a pattern is always a separator (a path segment cannot hold one).
_SEP, _STAR = "/", "*"
_DOT = re.escape(".")
_END = r"(?=/|\Z)"  # a segment ends at a "/" or at the end; what follows is "below"
_Segment = list[str] | None  # None: a `**` segment


def split_patterns(value: object) -> tuple[str, ...]:
    """A scope value as written in front matter -> its patterns.

    A string splits on commas outside ``{...}`` (an escaped ``\\,`` does not split);
    each piece is stripped of blanks and of one pair of surrounding quotes. A string
    quoted as a whole (``"*.ts,*.tsx"``) is a quoted list. A list or tuple: each
    string item is read the same way, other items are ignored. Anything else: ().
    """
    if isinstance(value, str):
        items: list[str] = [value]
    elif isinstance(value, list | tuple):
        items = [item for item in value if isinstance(item, str)]
    else:
        return ()
    return tuple(pattern for item in items for pattern in _split_text(item))


def _unquoted(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in _QUOTES:
        return text[1:-1].strip()
    return text


def _split_text(text: str) -> Iterator[str]:
    text = text.strip()
    if text[:1] in _QUOTES and text[:1] not in text[1:-1]:
        text = _unquoted(text)  # the whole list quoted once: `"*.ts, *.tsx"`
    bounds = [-1, *_top_commas(text, 0, len(text), _brace_pairs(text)), len(text)]
    for lo, hi in pairwise(bounds):
        if piece := _unquoted(text[lo + 1 : hi]):
            yield piece


def _brace_pairs(text: str) -> dict[int, int]:
    """Index of each `{` that has a matching `}` -> that `}` (escapes honoured)."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 1
        elif text[i] == "{":
            stack.append(i)
        elif text[i] == "}" and stack:
            pairs[stack.pop()] = i
        i += 1
    return pairs


def _top_commas(text: str, start: int, end: int, pairs: dict[int, int]) -> list[int]:
    commas: list[int] = []
    i = start
    while i < end:
        if text[i] == "\\":
            i += 1
        elif i in pairs:
            i = pairs[i]
        elif text[i] == ",":
            commas.append(i)
        i += 1
    return commas


def _expand(text: str, start: int, end: int, pairs: dict[int, int], depth: int) -> list[str]:
    """Brace expansion of text[start:end], at most MAX_ALTERNATIVES results."""
    if depth > _MAX_BRACE_DEPTH:
        return [text[start:end]]
    results, literal_from, i = [""], start, start
    while i < end:
        close = pairs.get(i)
        if text[i] == "\\":
            i += 2
            continue
        commas = [] if close is None else _top_commas(text, i + 1, close, pairs)
        if close is None or not commas:
            i += 1  # `{a}` stays literal, but braces inside it may still expand
            continue
        bounds = [i, *commas, close]
        choices = (
            alt
            for lo, hi in pairwise(bounds)
            for alt in _expand(text, lo + 1, hi, pairs, depth + 1)
        )
        alts = list(islice(choices, MAX_ALTERNATIVES))
        prefix = text[literal_from:i]
        results = list(islice((r + prefix + a for r in results for a in alts), MAX_ALTERNATIVES))
        i = literal_from = close + 1
    return [r + text[literal_from:end] for r in results]


def _tokens(text: str) -> list[str]:
    """Fixed-width regex atoms, with _SEP and _STAR standing for `/` and `*`."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        i += 1
        if char == "\\" and i < len(text):
            out.append(_SEP if text[i] == "/" else re.escape(text[i]))
            i += 1
        elif char in "*/":
            out.append(char)
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (found := _char_class(text, i)) is not None:
            out.append(found[0])
            i = found[1]
        else:
            out.append(re.escape(char))
    return out


def _char_class(text: str, i: int) -> tuple[str, int] | None:
    """The class opened just before text[i] and where it ends; None: the `[` is literal."""
    negate = text[i : i + 1] in ("!", "^")
    i += negate
    chars: list[tuple[str, bool]] = []  # (character, escaped): only a bare "-" makes a range
    first = i
    close = text.find("]", first + 1)  # no "]" or a "/" first: fail fast, `[[[[...` stays linear
    if close == -1 or text.find("/", first, close) != -1:
        return None
    while i < len(text) and (text[i] != "]" or i == first):
        escaped = text[i] == "\\" and i + 1 < len(text)
        i += escaped
        if text[i] == "/":
            return None  # a class never spans segments: read as the literal `[`
        chars.append((text[i], escaped))
        i += 1
    if i >= len(text):
        return None
    ranges: list[tuple[str, str]] = []
    k = 0
    while k < len(chars):
        wide = k + 2 < len(chars) and chars[k + 1] == ("-", False)
        ranges.append((chars[k][0], chars[k + 2 if wide else k][0]))
        k += 3 if wide else 1
    ranges = [(lo, hi) for lo, hi in ranges if lo <= hi]  # as fnmatch: `[z-a]` is empty
    body = "".join(re.escape(lo) + ("" if lo == hi else "-" + re.escape(hi)) for lo, hi in ranges)
    if negate:
        return f"[^/{body}]", i + 1
    if not ranges:
        return "(?!)", i + 1
    guard = "(?!/)" if any(lo <= "/" <= hi for lo, hi in ranges) else ""
    return f"{guard}[{body}]", i + 1


def _segment_regex(atoms: list[str]) -> str:
    """One segment. Each middle piece between stars is taken at its leftmost place in an
    atomic group: correct for fixed-width pieces, and linear, where `.*a.*a.*a` is not."""
    pieces = [""]
    for k, atom in enumerate(atoms):
        if atom != _STAR:
            pieces[-1] += atom
        elif k == 0 or atoms[k - 1] != _STAR:  # a run of stars is one star
            pieces.append("")
    if len(pieces) == 1:
        return pieces[0]
    middle = "".join(f"(?>[^/]*?{piece})" for piece in pieces[1:-1])
    return f"{pieces[0]}{middle}[^/]*{pieces[-1]}"


def _alternative_regex(text: str, bare_any_depth: bool) -> str:
    tokens = _tokens(text)
    parts: list[list[str]] = [[]]
    for token in tokens:
        if token == _SEP:
            parts.append([])
        else:
            parts[-1].append(token)
    # A trailing "/" names the folder: everything below it, as `folder/**`.
    folder = len(parts) > 1 and not parts[-1]
    # Empty and "." segments go: a leading "./" or "/" is dropped, `a//b` is `a/b`.
    segments: list[_Segment] = [
        None if part == [_STAR, _STAR] else part for part in parts if part and part != [_DOT]
    ]
    if folder or not segments:  # `/`, `./`, `.` name the rule's folder itself
        segments.append(None)
    if bare_any_depth and _SEP not in tokens:
        segments.insert(0, None)  # a bare name matches at any depth: `**/name`
    groups: list[list[str]] = [[]]  # runs of plain segments, split at each `**`
    for k, segment in enumerate(segments):
        if segment is not None:
            groups[-1].append(_segment_regex(segment))
        elif k == 0 or segments[k - 1] is not None:  # `**/**` is `**`
            groups.append([])
    out = "/".join(groups[0]) + ("/" if len(groups) > 1 and groups[0] else "")
    for k, group in enumerate(groups[1:], start=1):
        if group:  # leftmost place again: what follows a match is free ("below")
            out += f"(?>(?:[^/]*+/)*?{'/'.join(group)}{_END})"
            out += "/" if k < len(groups) - 1 else ""
        else:  # a trailing `**`: at least one segment below
            out += "[^/]"
    return out + (_END if len(groups) == 1 else "")


@functools.lru_cache(maxsize=4096)  # rules are re-read often; hostile input must not grow it
def _pattern_regexes(pattern: str, bare_any_depth: bool) -> tuple[str, ...]:
    alternatives = _expand(pattern, 0, len(pattern), _brace_pairs(pattern), 0)
    # An empty alternative (`{,}`) is an empty pattern: ignored, not "the folder itself".
    return tuple(dict.fromkeys(_alternative_regex(a, bare_any_depth) for a in alternatives if a))


def over_budget(patterns: Sequence[str]) -> str | None:
    """Why compiling ``patterns`` (one rule's scope) would cost too much; None when it
    would not. Cheap: brace expansion is counted as it goes and stops at the cap."""
    if isinstance(patterns, str):
        patterns = (patterns,)
    if len(patterns) > MAX_PATTERNS:
        return f"{len(patterns):,} patterns (at most {MAX_PATTERNS})"
    longest = max(map(len, patterns), default=0)
    if longest > MAX_PATTERN_CHARS:
        return f"a pattern of {longest:,} characters (at most {MAX_PATTERN_CHARS:,})"
    return (
        None
        if expanded_size(patterns) <= MAX_EXPANDED_CHARS
        else (f"more than {MAX_EXPANDED_CHARS:,} characters once braces are expanded")
    )


def expanded_size(patterns: Sequence[str], stop: int = MAX_EXPANDED_CHARS) -> int:
    """The characters of every brace alternative of ``patterns``, counted up to just past
    ``stop``: the measure of what compiling them costs."""
    total = 0
    for pattern in patterns:
        body = pattern.removeprefix("!")
        if "{" not in body:
            total += len(body)
        else:
            total += sum(map(len, _expand(body, 0, len(body), _brace_pairs(body), 0)))
        if total > stop:
            break
    return total


def _normalise(relpath: str) -> str | None:
    """The path as matched, or None when it can never match (empty, absolute, outside)."""
    if not relpath or relpath.startswith("/"):
        return None
    parts = relpath.split("/")
    if ".." in parts:
        return None
    if "" in parts or "." in parts:
        return "/".join(part for part in parts if part not in ("", ".")) or None
    return relpath


class GlobSet:
    """Compiled patterns of one rule (positive and `!`-negated); see docs/rules.md.

    It compiles whatever it is given, in time linear in the patterns' expanded
    size; the caps on what a rule may ask for are its callers' (:func:`over_budget`).

    Patterns are taken as written (run them through :func:`split_patterns` first);
    empty ones are ignored. ``bare_any_depth``: a pattern without `/` matches the
    file name at any depth (Cursor, Windsurf) rather than at the folder's top only.
    """

    __slots__ = ("_negative", "_positive")

    def __init__(self, patterns: Sequence[str], *, bare_any_depth: bool) -> None:
        if isinstance(patterns, str):  # a lone string is one pattern, not its characters
            patterns = (patterns,)
        positive: dict[str, None] = {}
        negative: dict[str, None] = {}
        for pattern in patterns:
            target = positive
            if pattern.startswith("!"):
                pattern, target = pattern[1:], negative
            if pattern:
                target.update(dict.fromkeys(_pattern_regexes(pattern, bare_any_depth)))
        self._positive = _compile(positive)
        self._negative = _compile(negative)

    @property
    def empty(self) -> bool:
        """No positive and no negative pattern: the set matches nothing."""
        return self._positive is None and self._negative is None

    def matches(self, relpath: str) -> bool:
        """Whether the file at `relpath` (relative to the rule's folder, `/`-separated) matches."""
        path = _normalise(relpath)
        if path is None:
            return False
        if self._negative is not None and self._negative.match(path):
            return False
        if self._positive is not None:
            return self._positive.match(path) is not None
        return self._negative is not None  # only negations: every file they leave

    def __repr__(self) -> str:
        return f"GlobSet({self._positive!r}, negative={self._negative!r})"


def _compile(regexes: dict[str, None]) -> re.Pattern[str] | None:
    return re.compile("|".join(f"(?:{rx})" for rx in regexes)) if regexes else None


class GlobCache:
    """The compiled glob sets of one snapshot, each reused from the previous snapshot's
    cache when its patterns are the same: an index change compiles only what changed.

    Once sealed it holds what this snapshot asked for, no more (:meth:`seal`), and at
    most ``budget`` expanded characters of patterns in all
    (:func:`expanded_size`); past it :meth:`get` gives None.
    """

    def __init__(self, previous: GlobCache | None = None, budget: int = SNAPSHOT_BUDGET) -> None:
        self._previous = previous._sets if previous is not None else {}
        self._sets: dict[tuple[tuple[str, ...], bool], tuple[GlobSet, int]] = {}
        self.budget = budget
        self.spent = 0
        self.compiled = 0  # sets compiled here, not reused
        self.refused = 0  # sets asked for past the budget

    def seal(self) -> None:
        """Let go of the previous snapshot's sets: the ones this snapshot did not ask
        for (rules removed or changed) are freed with it."""
        self._previous = {}

    def get(self, patterns: Sequence[str], *, bare_any_depth: bool) -> GlobSet | None:
        """The compiled set of ``patterns``; None once the budget is spent."""
        key = (tuple(patterns), bare_any_depth)
        found = self._sets.get(key)
        if found is not None:
            return found[0]
        found = self._previous.get(key)
        # Over a rule's cap (a scope stored before the caps): compiled to nothing, and
        # counted at the cap. The length checks come first: nothing is expanded then.
        over = found is None and over_budget(key[0]) is not None
        if found is not None:
            size = found[1]
        else:
            size = MAX_EXPANDED_CHARS if over else expanded_size(key[0])
        if self.spent + size > self.budget:
            self.refused += 1
            return None
        if found is None:
            found = (GlobSet(() if over else key[0], bare_any_depth=bare_any_depth), size)
            self.compiled += 1
        self.spent += size
        self._sets[key] = found
        return found[0]
