"""Records by file scope: what the file hook gives, and which rules a message may rank.

Built once per snapshot from the stored scopes (:mod:`precedents.rules.scope`):
rules attached by their globs, notes and ADRs that name files, and the
rules that always apply. Matching a touched file costs a few regex matches
per scoped record; no model, no vectors.

Compiling the rules' globs is another matter (issue #28: 10,000 rules took
2-3 s per snapshot): :meth:`FileScopes.compile` does it off the hooks' path
(the daemon's refresh thread), reusing the previous snapshot's compiled sets,
and a rule not compiled yet is matched by no hook.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any

from precedents.rules.globs import SNAPSHOT_BUDGET, GlobCache
from precedents.rules.scope import (
    PREFIX_DEPTH,
    Scope,
    component_key,
    mention_key,
    mention_names,
    named_scope,
)
from precedents.store.rows import DocumentRecord

# The session's most recent touched files a message's rules are matched against.
MAX_TOUCHED = 256
# Glob matches one message may spend deciding which rules it must not rank (~30 ms):
# 10,000 rules against 256 touched files would be 2.5 million. Past it, the rules not
# yet found in scope are not ranked (never a rule shown out of its scope).
MAX_MATCHES = 20_000


@dataclass(frozen=True, slots=True)
class Scoped:
    """One record with its scope and the content hash it was indexed at."""

    record: DocumentRecord
    scope: Scope
    digest: str


def relative_to_root(path: str, root: str, cwd: str) -> str | None:
    """``path`` (absolute, or relative to ``cwd``) relative to the project ``root``,
    with ``/`` separators; None when it lies outside the project."""
    full = os.path.normpath(os.path.join(cwd, path))
    root = os.path.normpath(root)
    rel = _inside(full, root)
    if rel is None:  # the same place by another name (a symlinked checkout, /private/tmp)
        rel = _inside(os.path.realpath(full), os.path.realpath(root))
    return rel


def _inside(full: str, root: str) -> str | None:
    prefix = root.rstrip(os.sep) + os.sep
    if not full.startswith(prefix):
        return None
    rel = full[len(prefix) :].replace(os.sep, "/")
    return rel or None


class FileScopes:
    """The scoped records of one snapshot, by project key."""

    def __init__(
        self,
        meta: Iterable[Mapping[str, Any]],
        parse: Callable[[str | None], Scope] = Scope.from_json,
    ) -> None:
        """``meta``: the snapshot's chunk rows; each document counts once. ``parse``: how a
        stored scope is read (the org's shares one :class:`Scope` per identical scope,
        recall/org.py)."""
        self.digests: dict[str, str] = {}
        # Conversation logs by file stem, which Claude Code makes the session id.
        self.logs_by_session: dict[str, str] = {}
        # Decision commits by record path: the file hook finds them through the
        # indexer's per-project map of current paths (recall/commit_files.py).
        self.commits: dict[str, DocumentRecord] = {}
        self._by_project: dict[str, list[Scoped]] = {}
        # Notes and ADRs by the names their mentions end in, and by component: a
        # touched file looks up its own name and its folders' instead of every record.
        self._mentions: dict[str, dict[str, list[tuple[str, Scoped]]]] = {}
        self._components: dict[str, dict[str, list[Scoped]]] = {}
        # And by the code names they name (rules/symbols.py).
        self._symbols: dict[str, dict[str, list[Scoped]]] = {}
        # The rules' compiled globs (see compile); None until they are. The compiled
        # rules by project, then by their literal prefixes (Scope.prefixes).
        self.globs: GlobCache | None = None
        self._rules: dict[str, dict[tuple[str, ...], list[Scoped]]] = {}
        self._ready: dict[str, list[Scoped]] = {}
        for row in meta:
            path = row["path"]
            if path in self.digests:
                continue
            self.digests[path] = str(row.get("source_hash") or "")
            if row["kind"] == "conversation":
                self.logs_by_session[os.path.splitext(os.path.basename(path))[0]] = path
            elif row["kind"] == "commit":
                self.commits[path] = DocumentRecord.from_row(row)
                continue  # its scope names files as they were named when it was indexed
            scope = parse(row.get("scope"))
            if scope == Scope():
                continue
            scoped = Scoped(DocumentRecord.from_row(row), scope, self.digests[path])
            self._by_project.setdefault(row["project"], []).append(scoped)
            # A chat's scope is the files its deciding exchange names (issue #27).
            if row["kind"] in ("adr", "note", "conversation"):
                self._index_names(row["project"], scoped)

    def compile(
        self, previous: FileScopes | None = None, budget: int = SNAPSHOT_BUDGET
    ) -> GlobCache:
        """Compile every attaching rule's globs, reusing ``previous``'s, within the
        snapshot's budget (rules/globs.py; rules past it stay uncompiled and attach to
        no file). Projects take turns, each in path order: a repository of 100,000
        rules spends the budget on its own rules, not on another project's. Call it
        before the hooks see this object."""
        cache = GlobCache(previous.globs if previous is not None else None, budget)
        groups = [
            sorted((s for s in group if _attaching(s)), key=lambda s: s.record.path)
            for _, group in sorted(self._by_project.items())
        ]
        turns = (s for round_ in zip_longest(*groups) for s in round_ if s is not None)
        ready: dict[str, list[Scoped]] = {}
        rules: dict[str, dict[tuple[str, ...], list[Scoped]]] = {}
        for scoped in turns:
            if scoped.scope.compile(cache):
                project = scoped.record.project
                ready.setdefault(project, []).append(scoped)
                by_prefix = rules.setdefault(project, {})
                for prefix in scoped.scope.prefixes:
                    by_prefix.setdefault(prefix, []).append(scoped)
        cache.seal()
        # Whole, at once: a hook may be reading this object already (the first snapshot).
        self._ready, self._rules, self.globs = ready, rules, cache
        return cache

    def _candidates(self, keys: Sequence[str], rel: str) -> dict[str, Scoped]:
        """The compiled rules of ``keys`` that may cover ``rel``: those filed under one of
        its leading folders (or under none), by path."""
        parts = [p for p in rel.split("/") if p not in ("", ".")]
        heads = [tuple(parts[:j]) for j in range(min(PREFIX_DEPTH, len(parts)) + 1)]
        found: dict[str, Scoped] = {}
        for key in keys:
            by_prefix = self._rules.get(key)
            if by_prefix:
                for head in heads:
                    for scoped in by_prefix.get(head, ()):
                        found.setdefault(scoped.record.path, scoped)
        return found

    def _index_names(self, project: str, scoped: Scoped) -> None:
        names = self._mentions.setdefault(project, {})
        for mention in scoped.scope.mentions:
            names.setdefault(mention_key(mention), []).append((mention, scoped))
        if scoped.scope.component:
            by = self._components.setdefault(project, {})
            by.setdefault(component_key(scoped.scope.component), []).append(scoped)
        if scoped.scope.symbols:
            symbols = self._symbols.setdefault(project, {})
            for symbol in scoped.scope.symbols:
                symbols.setdefault(symbol, []).append(scoped)

    def names_symbols(self, keys: Sequence[str]) -> bool:
        """Whether any record of the projects ``keys`` names code (a touched file's
        names are read only then)."""
        return any(self._symbols.get(k) for k in keys)

    def of(self, keys: Sequence[str]) -> list[Scoped]:
        """Every scoped record of the projects ``keys``."""
        return [s for k in keys for s in self._by_project.get(k, ())]

    def attached(self, keys: Sequence[str], rel: str) -> list[Scoped]:
        """The rules whose scope covers the file ``rel``, the most specific folder first."""
        found = [s for s in self._candidates(keys, rel).values() if s.scope.applies_to(rel)]
        return sorted(
            found, key=lambda s: (-s.scope.base.count("/") - bool(s.scope.base), s.record.path)
        )

    def naming(
        self, keys: Sequence[str], rel: str, declared: frozenset[str] = frozenset()
    ) -> list[Scoped]:
        """The ADRs, notes and deciding chats that name the file ``rel``, its folder, its
        component, or code it declares (``declared``: rules/symbols.py)."""
        parts = rel.split("/")
        found: dict[str, Scoped] = {}
        for key in keys:
            symbols = self._symbols.get(key, {})
            for name in declared & symbols.keys():
                for scoped in symbols[name]:
                    found.setdefault(scoped.record.path, scoped)
            names = self._mentions.get(key, {})
            for part in parts:
                for mention, scoped in names.get(part, ()):
                    if mention_names(mention, rel):
                        found.setdefault(scoped.record.path, scoped)
            components = self._components.get(key, {})
            for folder in parts[:-1]:
                for scoped in components.get(component_key(folder), ()):
                    found.setdefault(scoped.record.path, scoped)
        return sorted(found.values(), key=lambda s: (s.record.kind != "adr", s.record.path))

    def always(self, keys: Sequence[str]) -> list[Scoped]:
        """The rules the agent loads every time that Claude Code does not load itself."""
        found = [s for s in self.of(keys) if s.record.kind == "rule" and s.scope.listed_at_start]
        return sorted(found, key=lambda s: (s.record.project == "*", s.record.path))

    def unranked(
        self, keys: Sequence[str], touched: Sequence[str], message: str, root: str
    ) -> set[str]:
        """The rules a message must not rank: always and manual ones, and rules scoped
        to files when neither the message nor the session's touched files are in scope.
        ``root``: the project's, for the absolute paths a message may name."""
        out = {
            s.record.path
            for s in self.of(keys)
            if s.record.kind == "rule" and not s.scope.ranked
            # Uncompiled ones too: over the budget, or this snapshot's not compiled yet.
        }
        if any(self._ready.get(k) for k in keys):
            out -= self._in_scope(keys, touched[-MAX_TOUCHED:], message, root)
        return out

    def _in_scope(
        self, keys: Sequence[str], touched: Sequence[str], message: str, root: str
    ) -> set[str]:
        """The compiled rules a touched file (the most recent first) or a path or file
        name the message names falls in, within MAX_MATCHES glob matches."""
        found: set[str] = set()
        work = 0
        for rel in reversed(touched):
            for path, s in self._candidates(keys, rel).items():
                work += 1
                if path not in found and s.scope.applies_to(rel):
                    found.add(path)
                if work > MAX_MATCHES:
                    return found
        ready = [s for k in keys for s in self._ready.get(k, ())]
        for token in named_scope(message).mentions:
            token = token.rstrip("/").removeprefix(root.rstrip("/") + "/")
            token = token.removeprefix("./").lstrip("/")
            for path, s in self._candidates(keys, token).items():
                work += 1
                if path not in found and s.scope.applies_to(token):
                    found.add(path)
                if work > MAX_MATCHES:
                    return found
            if "/" not in token:  # a file name: a rule whose patterns end in it
                for s in ready[: max(0, MAX_MATCHES - work)]:
                    if s.record.path not in found and s.scope.could_name(token):
                        found.add(s.record.path)
                work += len(ready)
            if work > MAX_MATCHES:
                break
        return found


def _attaching(s: Scoped) -> bool:
    return s.record.kind == "rule" and s.scope.attaches
