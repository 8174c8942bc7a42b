"""A record's file scope: when a rule applies, which files a note or an ADR names.

Stored with every chunk as compact JSON (the ``scope`` column) and read back
by the daemon, which matches it against the file the agent touches
(docs/rules.md). Rules get theirs from their format's front matter
(:func:`rule_scope`); notes and ADRs from the paths and file names their text
names and an ADR's ``component:`` (:func:`named_scope`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from precedents.rules.globs import GlobCache, GlobSet, over_budget, split_patterns
from precedents.rules.symbols import named_symbols

# When a rule applies (docs/rules.md, "Modes").
ALWAYS, FILES, REQUESTED, BOTH, MANUAL = "always", "files", "requested", "files+requested", "manual"
# Formats whose bare patterns (`*.tsx`) match at any depth.
ANY_DEPTH = frozenset({"cursor", "windsurf"})
# Formats Claude Code loads on its own at every start: never listed again.
LOADED_BY_CLAUDE = frozenset({"claude"})
# Formats Claude Code loads on its own when a tool touches a file they cover (which
# tools: recall/loaded.py): `.claude/rules` with `paths:` ("path_glob_match") and a
# nested CLAUDE.md ("nested_traversal").
LOADED_ON_TOUCH = frozenset({"claude", "claude-md"})
WINDSURF_TRIGGERS = {
    "always_on": ALWAYS,
    "glob": FILES,
    "model_decision": REQUESTED,
    "manual": MANUAL,
}
MAX_MENTIONS = 64
MAX_MENTION_CHARS = 200
EVERYTHING: tuple[str, ...] = ("**",)
_NONE: tuple[str, ...] = ()
# In the warning of a rule whose scope is over a cap of rules/globs.py (`check` finds it).
TOO_LARGE = "too large to compile"
# How many leading folders of a scope's literal prefix (Scope.prefixes) are kept.
PREFIX_DEPTH = 4
_NOT_LITERAL = frozenset("*?[]{}\\")


@dataclass(frozen=True)
class Scope:
    """One record's scope; the empty scope (a note naming no file) is ``Scope()``."""

    format: str = ""
    mode: str = ""
    globs: tuple[str, ...] = ()
    base: str = ""  # the rule's folder, relative to the project root ("" = the root)
    mentions: tuple[str, ...] = ()  # paths and file names a note or an ADR names
    component: str = ""  # an ADR's `component:`
    # Code names a note, an ADR or a deciding chat names (rules/symbols.py): the file
    # hook gives it for a file that declares one of them.
    symbols: tuple[str, ...] = ()
    # A rule whose front matter says `scope: org`: in the org index (docs/org.md) it
    # applies to the files of every repository, not only to its own repository's.
    org: bool = False
    warnings: tuple[str, ...] = field(default=(), compare=False)  # not stored

    def to_json(self) -> str:
        """The stored form: compact JSON of the set fields, "" for the empty scope."""
        data: dict[str, Any] = {
            k: v
            for k, v in (
                ("format", self.format),
                ("mode", self.mode),
                ("globs", list(self.globs)),
                ("base", self.base),
                ("mentions", list(self.mentions)),
                ("component", self.component),
                ("symbols", list(self.symbols)),
                ("org", self.org),
            )
            if v
        }
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False) if data else ""

    @classmethod
    def from_json(cls, text: str | None) -> Scope:
        """The scope stored as ``text``; anything unreadable is the empty scope."""
        if not text:
            return cls()
        try:
            data = json.loads(text)
        except ValueError:
            return cls()
        if not isinstance(data, dict):
            return cls()

        def strings(key: str) -> tuple[str, ...]:
            value = data.get(key)
            return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()

        def string(key: str) -> str:
            value = data.get(key)
            return value if isinstance(value, str) else ""

        return cls(
            format=string("format"),
            mode=string("mode"),
            globs=strings("globs"),
            base=string("base"),
            mentions=strings("mentions"),
            component=string("component"),
            symbols=strings("symbols"),
            org=data.get("org") is True,
        )

    # -- what the scope says ---------------------------------------------------

    @property
    def attaches(self) -> bool:
        """Whether the file hook gives this record for files its globs match."""
        return self.mode in (FILES, BOTH)

    @property
    def ranked(self) -> bool:
        """Whether a message ranks this record like any other (no scope to wait for)."""
        return self.mode in ("", REQUESTED, BOTH)

    @property
    def always(self) -> bool:
        """Whether the agent loads it every time (listed at SessionStart, not ranked)."""
        return self.mode == ALWAYS

    @property
    def listed_at_start(self) -> bool:
        """An always-rule Claude Code does not load by itself."""
        return self.always and self.format not in LOADED_BY_CLAUDE

    @property
    def loaded_on_touch(self) -> bool:
        """A rule Claude Code loads itself when a tool touches a file in scope
        (docs/rules.md, "Rules Claude Code loads itself")."""
        return self.attaches and self.format in LOADED_ON_TOUCH

    @property
    def memory_of(self) -> str | None:
        """A nested CLAUDE.md's folder (None for any other record): Claude Code loads it at
        start when the session's working folder is that folder or below it."""
        return self.base if self.format == "claude-md" and self.base else None

    # Compiled on first use (`check`, the indexer), or all at once by :meth:`compile`
    # (the daemon's refresh thread: a hook never compiles). A frozen dataclass still
    # has a __dict__, where cached_property keeps them.
    @cached_property
    def _globs(self) -> GlobSet:
        return _capped(self._patterns, self.format in ANY_DEPTH)

    @cached_property
    def _names(self) -> GlobSet:
        return _capped(self._name_patterns, True)

    @property
    def _patterns(self) -> tuple[str, ...]:
        return self.globs or EVERYTHING

    @property
    def _name_patterns(self) -> tuple[str, ...]:
        # The last segment of each positive pattern: could a file of that name be in scope?
        last = [g.rstrip("/").rsplit("/", 1)[-1] for g in self.globs if not g.startswith("!")]
        return tuple(n for n in last if n and n != "**") or ("*",)

    def compile(self, cache: GlobCache) -> bool:
        """Compile the globs now, from ``cache``; False (nothing compiled) when the
        cache's budget is spent."""
        globs = cache.get(self._patterns, bare_any_depth=self.format in ANY_DEPTH)
        names = cache.get(self._name_patterns, bare_any_depth=True) if globs else None
        if globs is None or names is None:
            return False
        self.__dict__["_globs"], self.__dict__["_names"] = globs, names
        return True

    @property
    def prefixes(self) -> frozenset[tuple[str, ...]]:
        """The leading folders (from the project root) that every file this scope
        covers is under: one per positive pattern, at most PREFIX_DEPTH deep, ``()``
        when a pattern may match anywhere. A file whose path starts with none of them
        is not covered, so the file hook matches only rules filed under its path's
        prefixes (10,000 rules `src/mN/**` cost a few matches, not 10,000)."""
        base = tuple(p for p in self.base.split("/") if p not in ("", "."))
        positive = [g for g in self._patterns if g and not g.startswith("!")]
        if not positive:  # negations only: every file below the base they leave
            return frozenset({base[:PREFIX_DEPTH]})
        any_depth = self.format in ANY_DEPTH
        return frozenset((base + _literal_head(g, any_depth))[:PREFIX_DEPTH] for g in positive)

    @property
    def compiled(self) -> bool:
        """Whether matching will compile nothing (see :meth:`compile`)."""
        return "_globs" in self.__dict__ and "_names" in self.__dict__

    def applies_to(self, rel: str) -> bool:
        """Whether a rule attached by files covers ``rel`` (a path relative to the project root)."""
        if not self.attaches:
            return False
        inner = _below(rel, self.base)
        return inner is not None and self._globs.matches(inner)

    def could_name(self, name: str) -> bool:
        """Whether a file called ``name`` (a message names no folder) may be in scope."""
        return self.attaches and self._names.matches(name)

    def names(self, rel: str) -> bool:
        """Whether a note or an ADR names the file ``rel``, its folder, or its component."""
        if not self.mentions and not self.component:
            return False
        folders = rel.split("/")[:-1]
        if self.component and component_key(self.component) in {component_key(f) for f in folders}:
            return True
        return any(mention_names(m, rel) for m in self.mentions)


def _literal_head(pattern: str, any_depth: bool) -> tuple[str, ...]:
    """The leading segments of ``pattern`` that hold no glob character (docs/rules.md,
    "Glob semantics"): every path it matches starts with them. A bare name matches at
    any depth in ``any_depth`` formats: no head. A brace, escape or class stops it
    (one before the first `/` could hide an alternative without a `/`)."""
    if any_depth and "/" not in pattern:
        return ()
    head: list[str] = []
    for segment in pattern.split("/"):
        if segment in ("", "."):  # a leading `/` or `./`, `a//b`: dropped as GlobSet drops them
            continue
        if _NOT_LITERAL.intersection(segment):
            break
        head.append(segment)
        if len(head) == PREFIX_DEPTH:
            break
    return tuple(head)


def _capped(patterns: tuple[str, ...], any_depth: bool) -> GlobSet:
    """The compiled patterns; none when they are over a cap (rule_scope refuses such a
    scope, but one stored before the caps existed may still hold it)."""
    return GlobSet(() if over_budget(patterns) else patterns, bare_any_depth=any_depth)


def _below(rel: str, base: str) -> str | None:
    """``rel`` relative to ``base`` (both relative to the root), None when outside it."""
    if not base:
        return rel
    prefix = base.rstrip("/") + "/"
    return rel[len(prefix) :] if rel.startswith(prefix) else None


def component_key(name: str) -> str:
    """A component or folder name compared without case, ``_`` read as ``-``."""
    return name.strip().lower().replace("_", "-")


def mention_key(mention: str) -> str:
    """The last part of a path named in a text (its file or folder name): the key a
    touched file's parts are looked up by."""
    return mention.rstrip("/").rsplit("/", 1)[-1]


def mention_names(mention: str, rel: str) -> bool:
    """Whether a path named in a text is the file ``rel`` or a folder above it."""
    folder = mention.endswith("/")
    m = mention.strip("/").removeprefix("./")
    if not m:
        return False
    if not folder and (rel == m or rel.endswith("/" + m) or m.endswith("/" + rel)):
        return True  # the file: by its path, its tail, or an absolute path ending in it
    parent = rel.rsplit("/", 1)[0] if "/" in rel else ""
    if not parent:
        return False
    # A folder: named with a trailing slash, or as a path of two or more parts
    # (a lone word like `src` or `api` names too much to count).
    if folder or ("/" in m and "." not in m.rsplit("/", 1)[-1]):
        return f"/{m}/" in f"/{parent}/"
    return False


def rule_scope(fmt: str, base: str, front: Mapping[str, Any] | None) -> Scope:
    """The scope of a rule file of format ``fmt`` under ``base``, from its front matter.

    ``fmt`` "" (a rule in a configured or user-level folder outside any known
    layout) reads the keys it has; with none, the rule is ranked like any record.
    """
    front = front or {}
    warnings: list[str] = []
    fmt = fmt or _format_from_keys(front)

    def globs(key: str) -> tuple[str, ...]:
        value = front.get(key)
        if value is not None and not isinstance(value, (str, list, tuple)):
            warnings.append(f"front matter {key!r} is not text or a list of text; ignored")
        found = split_patterns(value)
        if (why := over_budget(found)) is not None:
            # Never compiled, never guessed at: the rule attaches to no file.
            warnings.append(f"front matter {key!r} is {TOO_LARGE} ({why}); attached to no file")
            raise _Unusable
        return found

    mode, patterns = REQUESTED, _NONE
    try:
        mode, patterns = _mode_and_patterns(fmt, base, front, globs, warnings)
    except _Unusable:
        mode, patterns = MANUAL, _NONE
    if mode not in (FILES, BOTH):
        patterns = _NONE
    return Scope(fmt, mode, patterns, base, org=org_wide(front), warnings=tuple(warnings))


ORG_SCOPE = "org"  # the front matter value `scope: org`


def org_wide(front: Mapping[str, Any]) -> bool:
    """Whether a rule's front matter says ``scope: org``: in the org index it applies to
    every repository's files (docs/rules.md); any other value keeps it to its own."""
    value = front.get("scope")
    return isinstance(value, str) and value.strip().lower() == ORG_SCOPE


class _Unusable(Exception):
    """A rule's scope is over a cap of rules/globs.py."""


def _mode_and_patterns(
    fmt: str,
    base: str,
    front: Mapping[str, Any],
    globs: Callable[[str], tuple[str, ...]],
    warnings: list[str],
) -> tuple[str, tuple[str, ...]]:
    mode, patterns = REQUESTED, _NONE
    if fmt == "cursor":
        described = bool(str(front.get("description") or "").strip())
        patterns = _NONE if front.get("alwaysApply") is True else globs("globs")
        if front.get("alwaysApply") is True:
            mode = ALWAYS
        elif patterns:
            mode = BOTH if described else FILES
        else:
            mode = REQUESTED if described else MANUAL
    elif fmt in ("claude", "cline"):
        patterns = globs("paths")
        mode = FILES if patterns else ALWAYS
    elif fmt == "copilot-instructions":
        patterns = globs("applyTo")
        mode = FILES if patterns else MANUAL
    elif fmt == "windsurf":
        patterns = globs("globs")
        mode = _windsurf_mode(front.get("trigger"), patterns, warnings)
    elif fmt in ("claude-md", "agents-md"):
        mode, patterns = (FILES, EVERYTHING) if base else (ALWAYS, ())
    elif fmt in ("cursorrules", "copilot"):
        mode = ALWAYS
    return mode, patterns


def _format_from_keys(front: Mapping[str, Any]) -> str:
    """The format a rule outside any known folder is written in, by its scope keys."""
    if "alwaysApply" in front or ("globs" in front and "trigger" not in front):
        return "cursor"
    if "trigger" in front:
        return "windsurf"
    if "applyTo" in front:
        return "copilot-instructions"
    if "paths" in front:
        return "claude"
    return ""


def _windsurf_mode(trigger: Any, patterns: tuple[str, ...], warnings: list[str]) -> str:
    if isinstance(trigger, str) and trigger.strip() in WINDSURF_TRIGGERS:
        mode = WINDSURF_TRIGGERS[trigger.strip()]
        return MANUAL if mode == FILES and not patterns else mode
    if trigger not in (None, ""):
        warnings.append(f"unknown Windsurf trigger {str(trigger)[:40]!r}; read from its globs")
    return FILES if patterns else ALWAYS


# A path with a folder (`src/api/users.py`, `docs/adr/`), or a file name with an
# extension (`settings.py`, `docker-compose.yml`). URLs are dropped after matching.
_PATHLIKE = re.compile(
    r"(?<![\w@%+~=:/.-])"
    r"(?:\.{1,2}/|/|~/)?[\w@+-][\w@.+-]*(?:/[\w@.+-]+)+/?"
    r"|(?<![\w@%+~=:/.-])[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,7}(?![\w/])"
)
_NOT_FILES = frozenset({"com", "org", "net", "io", "dev", "ai", "co", "edu", "gov", "app"})


def named_scope(text: str, component: str = "") -> Scope:
    """The files a note's or an ADR's ``text`` names (paths and file names), and its component."""
    seen: dict[str, None] = {}
    for found in _PATHLIKE.finditer(text):
        token = found.group(0).rstrip(".")
        start = found.start()
        if text[max(0, start - 3) : start] == "://" or "://" in token:
            continue
        ext = token.rsplit(".", 1)[-1].lower() if "/" not in token else ""
        if ext in _NOT_FILES or len(token) > MAX_MENTION_CHARS or token.count("/") > 12:
            continue
        seen.setdefault(token, None)
        if len(seen) >= MAX_MENTIONS:
            break
    return Scope(mentions=tuple(seen), component=component.strip(), symbols=named_symbols(text))
