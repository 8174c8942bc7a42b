"""Rule front matter that its agent would ignore or misread (docs/check.md, "Rules").

The file is read as recall reads it: its format from its path
(:func:`precedents.rules.formats.classify`), its front matter leniently, as
Cursor reads ``.mdc`` files (:func:`precedents.text.split_front_matter`),
its scope by :func:`precedents.rules.scope.rule_scope`, and its globs by
:class:`precedents.rules.globs.GlobSet`; so what `check` says a rule does is what
the file hook does with it. An error is a rule that silently does not do what it
says (a scope key its agent does not read, a trigger it does not know, a glob that
can never match, front matter it cannot read); a warning is a rule that works, but
maybe not as meant (manual rules, ignored keys, a Claude Code version that
misreads it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from precedents.check.globs import glob_problems
from precedents.check.model import ERROR, RULE, WARNING, Finding, Level
from precedents.rules.formats import RuleFile
from precedents.rules.globs import split_patterns
from precedents.rules.scope import (
    ALWAYS,
    BOTH,
    FILES,
    MANUAL,
    REQUESTED,
    TOO_LARGE,
    WINDSURF_TRIGGERS,
    Scope,
    rule_scope,
)
from precedents.text import FrontMatter, normalize, split_front_matter

AGENTS: Final = {
    "cursor": "Cursor",
    "cursorrules": "Cursor",
    "claude": "Claude Code",
    "claude-md": "Claude Code",
    "copilot": "GitHub Copilot",
    "copilot-instructions": "GitHub Copilot",
    "windsurf": "Windsurf",
    "cline": "Cline",
    "agents-md": "agents reading AGENTS.md",
}
# The one key each scoped format reads its globs from.
SCOPE_KEYS: Final = {
    "cursor": "globs",
    "claude": "paths",
    "cline": "paths",
    "copilot-instructions": "applyTo",
    "windsurf": "globs",
}
FOREIGN_KEYS: Final = ("globs", "paths", "applyTo")
# Formats whose agent reads front matter as plain `key: value` lines (Cursor's and
# Windsurf's own editors write `globs: **/*.ts` unquoted; Claude Code reads
# `paths: **/*.ts`, anthropics/claude-code#17204): YAML's refusal is no problem there.
PLAIN_PAIRS: Final = frozenset({"cursor", "cursorrules", "claude", "windsurf"})
# Claude Code reads `paths:` as a YAML list, or quoted, from this version on.
CLAUDE_PATHS_FIXED: Final = "2.1.84"
_LINE_IN_ERROR = re.compile(r"\(line (\d+)\)")


def _effect(scope: Scope) -> str:
    """What the agent does with a rule of this scope, as the end of a sentence."""
    return {
        ALWAYS: "applies everywhere, in every session",
        MANUAL: "is applied only when someone names it",
        REQUESTED: "is applied only when the agent picks it by its description",
        FILES: "is attached by its other patterns only",
        BOTH: "is attached by its other patterns only",
    }.get(scope.mode, "is ranked like any record")


def _key_line(raw: str | None, key: str) -> int:
    """The line of the file where front matter ``key:`` is written (the block starts on 2)."""
    for i, line in enumerate((raw or "").split("\n")):
        if re.match(rf"\s*{re.escape(key)}\s*:", line):
            return i + 2
    return 1


class _Found:
    """The findings of one rule file, each at the line of the key it is about."""

    def __init__(self, path: str, raw: str | None) -> None:
        self.path, self.raw = path, raw
        self.items: list[Finding] = []

    def add(self, level: Level, message: str, key: str = "") -> None:
        line = _key_line(self.raw, key) if key else 1
        self.items.append(Finding(self.path, line, level, RULE, message))


@dataclass
class ScopeBudget:
    """Glob matches one `check` run may spend naming scopes that match no tracked file
    (~2 s): 300 rules `**/*.xN` in a tree of 10,000 files were 10 s, and a hostile
    repository may hold thousands of each (issue #28). A rule past it gets no such
    warning. Only files under a scope's literal folders (Scope.prefixes) count."""

    left: int = 1_000_000


def rule_findings(
    path: str,
    placed: RuleFile,
    text: str,
    tracked: Sequence[str] | None = None,
    budget: ScopeBudget | None = None,
) -> list[Finding]:
    """What ``placed.format``'s agent would ignore or misread in the rule ``text`` at
    ``path`` (relative to the repository); ``tracked`` (the repository's files, when
    known) lets a scope that matches none of them be named, within ``budget`` (shared
    by a run's rules; a fresh one when None)."""
    fmt, agent = placed.format, AGENTS[placed.format]
    text = normalize(text)
    read = split_front_matter(text, lenient=True)
    found = _Found(path, read.raw)
    if read.problem is not None:
        _broken(found, read, fmt, agent)
        return found.items
    front: dict[str, Any] = read.data or {}
    if read.raw is not None and fmt in SCOPE_KEYS and fmt not in PLAIN_PAIRS:
        strict = split_front_matter(text)
        if strict.problem is not None:
            found.add(
                WARNING,
                f"front matter is not valid YAML ({strict.error}); precedents reads it as "
                f"plain `key: value` lines, as Cursor does, but {agent} may not: quote the "
                "values",
                _first_key(read.raw),
            )
    scope = rule_scope(fmt, placed.base, front)
    for warning in scope.warnings:
        if "not text or a list of text" in warning:
            key = warning.split("'")[1]
            found.add(
                ERROR,
                f"`{key}:` is {_kind_of(front.get(key))}, not text or a list of text: "
                f"{agent} reads no scope from it, and the rule {_effect(scope)}",
                key,
            )
        elif TOO_LARGE in warning:
            key = warning.split("'")[1]
            why = warning.split("(", 1)[1].rsplit(")", 1)[0]
            found.add(
                ERROR,
                f"`{key}:` is {TOO_LARGE} ({why}): precedents attaches the rule to no file",
                key,
            )
    if fmt in SCOPE_KEYS:
        _foreign_keys(found, fmt, agent, front, scope)
    else:
        _ignored_keys(found, fmt, front)
    check = _FORMAT_CHECKS.get(fmt)
    if check is not None:
        check(found, front, scope)
    if scope.attaches:
        _globs(found, fmt, scope, tracked, budget or ScopeBudget())
    return found.items


def _kind_of(value: object) -> str:
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    return "a mapping" if isinstance(value, dict) else f"a {type(value).__name__}"


def _first_key(raw: str | None) -> str:
    first = re.search(r"^\s*([A-Za-z_][\w.-]*)\s*:", raw or "", re.MULTILINE)
    return first.group(1) if first else ""


def _broken(found: _Found, read: FrontMatter, fmt: str, agent: str) -> None:
    """Front matter the agent cannot read: the scope in it is lost."""
    what = {
        "unclosed": "front matter opened by `---` is never closed",
        "invalid_yaml": f"front matter is not YAML ({read.error})",
        "not_a_mapping": f"front matter is not `key: value` lines ({read.error})",
    }[read.problem or "invalid_yaml"]
    if fmt in SCOPE_KEYS:
        found.add(ERROR, f"{what}: {agent} reads no scope or description from it")
    else:
        found.add(WARNING, f"{what}; {agent} reads no front matter here anyway")
    where = _LINE_IN_ERROR.search(read.error or "")
    if where is not None:  # at the line YAML names
        last = found.items[-1]
        found.items[-1] = Finding(last.path, int(where.group(1)), last.level, RULE, last.message)


def _foreign_keys(
    found: _Found, fmt: str, agent: str, front: Mapping[str, Any], scope: Scope
) -> None:
    """Another agent's scope key in place of this format's own one."""
    own = SCOPE_KEYS[fmt]
    if split_patterns(front.get(own)):
        return
    for key in FOREIGN_KEYS:
        if key != own and split_patterns(front.get(key)):
            issue = " (anthropics/claude-code#45587)" if fmt == "claude" else ""
            found.add(
                ERROR,
                f"{agent} scopes rules by `{own}:`, not `{key}:`: this rule "
                f"{_effect(scope)}{issue}; rename the key to `{own}:`",
                key,
            )
            return


def _ignored_keys(found: _Found, fmt: str, front: Mapping[str, Any]) -> None:
    """Scope keys in a file whose agent applies it by where it is, not by front matter."""
    keys = [k for k in (*FOREIGN_KEYS, "alwaysApply", "trigger") if k in front]
    if not keys:
        return
    where = {
        "cursorrules": "Cursor applies .cursorrules to every request",
        "copilot": "GitHub Copilot applies copilot-instructions.md to every request",
        "claude-md": "Claude Code applies a nested CLAUDE.md to every file below its folder",
    }.get(fmt, "agents apply AGENTS.md to every file below its folder")
    listed = ", ".join(f"`{k}:`" for k in keys)
    found.add(WARNING, f"{listed} ignored: {where}", keys[0])


def _cursor(found: _Found, front: Mapping[str, Any], scope: Scope) -> None:
    always = front.get("alwaysApply")
    if always is not None and not isinstance(always, bool) and str(always).strip():
        found.add(
            WARNING,
            f"`alwaysApply: {str(always)[:40]}` is not true or false: read as false",
            "alwaysApply",
        )
    if always is True and split_patterns(front.get("globs")):
        found.add(
            WARNING,
            "`globs:` ignored: `alwaysApply: true` applies the rule to every request",
            "globs",
        )
    trigger = front.get("trigger")
    windsurf_always = isinstance(trigger, str) and WINDSURF_TRIGGERS.get(trigger.strip()) == ALWAYS
    if windsurf_always and scope.mode != ALWAYS:
        found.add(
            ERROR,
            f"Cursor does not read `trigger:` (a Windsurf key): this rule {_effect(scope)}; "
            "write `alwaysApply: true`",
            "trigger",
        )
        return
    if scope.mode == MANUAL and not any(split_patterns(front.get(k)) for k in FOREIGN_KEYS):
        found.add(
            WARNING,
            "Cursor attaches this rule only when it is @-mentioned: it has no `description:`, "
            "`globs:` or `alwaysApply: true`",
        )


def _claude(found: _Found, front: Mapping[str, Any], scope: Scope) -> None:
    value = front.get("paths")
    if "paths" in front and not split_patterns(value) and not scope.warnings:
        found.add(
            WARNING, "`paths:` is empty: Claude Code loads this rule in every session", "paths"
        )
        return
    raw_value = _raw_value(found.raw, "paths")
    if isinstance(value, list) or (isinstance(value, str) and raw_value[:1] in ("'", '"')):
        form = "a YAML list" if isinstance(value, list) else "a quoted string"
        found.add(
            WARNING,
            f"`paths:` is {form}: Claude Code before {CLAUDE_PATHS_FIXED} never loads this rule "
            f"on a matching file (anthropics/claude-code#17204, fixed in {CLAUDE_PATHS_FIXED}); "
            f"use Claude Code {CLAUDE_PATHS_FIXED} or later, or write the patterns unquoted on "
            "one line, comma-separated",
            "paths",
        )


def _cline(found: _Found, front: Mapping[str, Any], scope: Scope) -> None:
    if "paths" in front and not split_patterns(front.get("paths")) and not scope.warnings:
        found.add(WARNING, "`paths:` is empty: Cline applies this rule everywhere", "paths")


def _copilot(found: _Found, front: Mapping[str, Any], scope: Scope) -> None:
    if scope.mode == MANUAL and not any(split_patterns(front.get(k)) for k in FOREIGN_KEYS):
        found.add(
            WARNING,
            "GitHub Copilot applies this file only when it is attached by hand: it has no "
            '`applyTo:` (write `applyTo: "**"` for every file)',
        )


def _windsurf(found: _Found, front: Mapping[str, Any], scope: Scope) -> None:
    trigger = front.get("trigger")
    known = isinstance(trigger, str) and trigger.strip() in WINDSURF_TRIGGERS
    name = str(trigger).strip() if trigger is not None else ""
    globs = split_patterns(front.get("globs"))
    if trigger not in (None, "") and not known:
        found.add(
            ERROR,
            f"Windsurf has no trigger {name[:40]!r} (it knows {', '.join(WINDSURF_TRIGGERS)}): "
            f"the rule is not applied as written; precedents reads it from its globs",
            "trigger",
        )
    elif known and name == "glob" and not globs:
        found.add(
            ERROR, "`trigger: glob` with no `globs:`: Windsurf never attaches this rule", "trigger"
        )
    elif known and name != "glob" and globs:
        found.add(
            WARNING,
            f"`globs:` ignored: `trigger: {name}` decides when Windsurf applies it",
            "globs",
        )
    if name == "model_decision" and not str(front.get("description") or "").strip():
        found.add(
            WARNING,
            "`trigger: model_decision` with no `description:`: Windsurf has nothing to decide by",
            "trigger",
        )


_FORMAT_CHECKS = {
    "cursor": _cursor,
    "claude": _claude,
    "cline": _cline,
    "copilot-instructions": _copilot,
    "windsurf": _windsurf,
}


def _raw_value(raw: str | None, key: str) -> str:
    """What follows ``key:`` on its line of the front matter, as written."""
    for line in (raw or "").split("\n"):
        found = re.match(rf"\s*{re.escape(key)}\s*:\s*(.*)$", line)
        if found:
            return found.group(1).strip()
    return ""


def _globs(
    found: _Found, fmt: str, scope: Scope, tracked: Sequence[str] | None, budget: ScopeBudget
) -> None:
    """Patterns that are malformed or can never match, and a scope no file matches."""
    key = SCOPE_KEYS.get(fmt, "")
    bad = False
    for pattern in scope.globs:
        for level, message in glob_problems(pattern):
            bad = bad or level == ERROR
            found.add(level, f"`{key}:` pattern `{pattern[:80]}` {message}", key)
    if bad or not tracked or scope.globs == ("**",):
        return
    if () not in scope.prefixes:  # only files under the scope's folders can match (C speed)
        heads = {"/".join(p) for p in scope.prefixes}
        below = tuple(f"{h}/" for h in heads)
        tracked = [rel for rel in tracked if rel.startswith(below) or rel in heads]
    matched = False
    for rel in tracked:
        if budget.left <= 0:
            return  # out of budget: unknown, so nothing said
        budget.left -= 1
        if scope.applies_to(rel):
            matched = True
            break
    if not matched:
        shown = ", ".join(scope.globs)[:120]
        found.add(
            WARNING,
            f"`{key}:` ({shown}) matches no file of the repository: the rule is never attached "
            "(a misspelt folder?)",
            key,
        )
