"""The organisation's records in every channel (issue #30): the pulled org snapshot.

The org pull writes ``<state>/org/snapshot.npz`` (:func:`precedents.org.snapshot.export_org`):
every chunk of the served version of the org table, each row's ``path``
``org://<repository>/<path>``, its repository in ``repo``, an ADR's ``mark`` and
``successors`` as the org build read them from its repository's ADR graph.

:class:`OrgRecords` holds it beside the project's own vectors:

* loaded (again when the file's identity changes: the pull replaces it
  atomically) by :meth:`OrgRecords.refresh`, which the daemon calls on its
  refresh thread, never on a hook's path; its rows held as columns, not one dict
  each (:mod:`precedents.recall.org_columns`: 30,000 records in 74 MiB, not 118);
  its chunk vectors memory-mapped from the file, not read into memory, ranked
  under the project key :data:`ORG_KEY` in two stages (one vector per document,
  then the best documents' chunks: :class:`~precedents.recall.org_ranking.OrgSnapshot`,
  the same hits and scores as the one ranking code,
  :meth:`~precedents.recall.vectors.VectorSnapshot.rank_many`) and merged with
  the project's hits (:func:`~precedents.recall.vectors.merged`), so the hook,
  `query`, eval and MCP order org records alike;
* rules keep their scope: a rule of repository X ranks and attaches only in a
  project that is X, unless its front matter says ``scope: org``
  (:attr:`precedents.rules.scope.Scope.org`); an org rule a message does not rank
  by itself (one scoped to files, one loaded always) never ranks for a message:
  the file hook gives it for a file in its scope, SessionStart lists an always
  one (working out per message which org rules a message names cost 14 ms at
  30,000 records);
* an ADR or a note that names a path, a component or code is in
  :attr:`OrgRecords.scopes`, matched by the file hook like the project's own;
* the project's own copy wins: an org record of the project's repository (its
  name, or its ``origin`` remote's URL) whose path the project has indexed, or
  any org record whose content hash a record of the project has, is left out
  (:meth:`OrgRecords.excluded`): no line twice.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from threading import Lock
from typing import Any

from precedents.ingest.background import release_memory
from precedents.org.snapshot import ORG_DOCS, ORG_SCHEME, ORG_SNAPSHOT, org_path
from precedents.recall.files import FileScopes, Scoped
from precedents.recall.org_columns import ORG_KEY, Documents, Packed, Rows
from precedents.recall.org_ranking import OrgSnapshot
from precedents.recall.source import Model
from precedents.recall.vectors import EMPTY, VectorSnapshot
from precedents.rules.scope import Scope
from precedents.store import snapshot_file
from precedents.store.rows import DocumentRecord
from precedents.store.snapshot_file import SnapshotFileError

log = logging.getLogger("precedents.daemon")

__all__ = ["ORG_KEY", "OrgRecords", "origin_url", "repo_key"]

# Projects whose "which org records are theirs" is remembered (a daemon serves a few).
MAX_PROJECTS = 64
_REMOTE = re.compile(r'^\s*\[remote\s+"origin"\]\s*$')
_URL = re.compile(r"^\s*url\s*=\s*(\S+)\s*$")


def repo_key(url: str) -> str:
    """A repository URL or path as two spellings of it compare: no scheme, user, ``.git``
    or trailing slash, ``host:owner/name`` as ``host/owner/name``, lower case."""
    text = url.strip().rstrip("/").removesuffix(".git").lower()
    text = re.sub(r"^[a-z+]+://", "", text)
    text = re.sub(r"^[^@/]+@", "", text)
    return re.sub(r"^([^/:]+):(?!/)", r"\1/", text)


def origin_url(root: str) -> str:
    """The ``origin`` remote's URL in ``root``'s ``.git/config`` ('' when none): read as
    text, no git process (the hook's path may ask)."""
    try:
        with open(os.path.join(root, ".git", "config"), encoding="utf-8") as handle:
            lines = handle.read(65536).splitlines()
    except (OSError, UnicodeDecodeError):
        return ""
    inside = False
    for line in lines:
        if line.lstrip().startswith("["):
            inside = bool(_REMOTE.match(line))
        elif inside and (m := _URL.match(line)):
            return m.group(1)
    return ""


def _scope_parser() -> Callable[[str | None], Scope]:
    """:meth:`Scope.from_json` with one :class:`Scope` per identical stored scope (an
    organisation's rules repeat their globs; each Scope is ~230 bytes)."""
    seen: dict[str, Scope] = {}

    def parse(text: str | None) -> Scope:
        key = text or ""
        found = seen.get(key)
        if found is None:
            found = seen[key] = Scope.from_json(key)
        return found

    return parse


_EMPTY = Scope()


class _OrgScopes(FileScopes):
    """The org records' file scopes, filed without their names and descriptions (~13 MiB
    at 30,000 records), which are read back when a record is given."""

    def __init__(
        self,
        docs: Documents,
        rows: Iterator[Mapping[str, Any]],
        parse: Callable[[str | None], Scope],
    ) -> None:
        super().__init__(rows, parse)
        self._docs = docs

    def _whole(self, found: list[Scoped]) -> list[Scoped]:
        docs, out = self._docs, []
        for s in found:
            d = docs.index[s.record.path]
            name, description = docs.names[d], docs.descriptions[d]
            record = replace(s.record, name=name, description=description)
            out.append(Scoped(record, s.scope, docs.digest(d)))
        return out

    def attached(self, keys: Sequence[str], rel: str) -> list[Scoped]:
        """:meth:`FileScopes.attached`, each record whole."""
        return self._whole(super().attached(keys, rel))

    def naming(
        self, keys: Sequence[str], rel: str, declared: frozenset[str] = frozenset()
    ) -> list[Scoped]:
        """:meth:`FileScopes.naming`, each record whole."""
        return self._whole(super().naming(keys, rel, declared))

    def always(self, keys: Sequence[str]) -> list[Scoped]:
        """:meth:`FileScopes.always`, each record whole."""
        return self._whole(super().always(keys))


class OrgRecords:
    """The org snapshot in memory: vectors, scoped records, and which are a project's own."""

    def __init__(self, folder: Path) -> None:
        """``folder``: ``Settings.org_dir``, where the pull writes the snapshot file."""
        self.file = folder / ORG_SNAPSHOT
        self.snapshot: VectorSnapshot = EMPTY
        self.scopes = FileScopes(())
        self.problem = ""  # why the last file could not be served ('' when it was)
        self._stamp: tuple[int, int, int] | None = None
        self._documents: Documents | None = None  # the served snapshot's, as columns
        self._successors: dict[str, str] = {}  # an ADR's successors as stored (JSON), by path
        self._urls: dict[str, str] = {}  # repository -> repo_key of its source
        self._plain_rules: dict[str, frozenset[str]] = {}  # repository -> its own rules
        self._all_plain: frozenset[str] = frozenset()
        self._unranked: frozenset[str] = frozenset()  # rules a message never ranks
        self._own: dict[str, tuple[frozenset[str], frozenset[str]]] = {}  # root -> repos, rules
        self._excluded: dict[str, tuple[Any, Any, frozenset[str], frozenset[str]]] = {}
        self._lock = Lock()

    @property
    def version(self) -> Any:
        """The served org version's fingerprint (None before one is loaded)."""
        return self.snapshot.version

    def refresh(self, model: Model) -> bool:
        """Load the snapshot file when it changed (the pull replaced it); True when a
        new one is served. A file of another model or a torn one is not served (the
        previous one keeps serving) and says why in :attr:`problem`."""
        try:
            st = os.stat(self.file)
        except OSError:
            if self._stamp is not None and self.snapshot.rows:
                return False  # gone (a pull rewriting it, `org` switched off): keep serving
            return False
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        try:
            exported = snapshot_file.read(self.file, mapped=True)
        except SnapshotFileError as exc:
            self.problem = f"the org snapshot could not be read: {exc}"
            log.warning("%s", self.problem)
            return False
        if (exported.model, exported.dimension) != tuple(model):
            self.problem = (
                f"the org index was built with {exported.model} ({exported.dimension}d), "
                f"not {model.id}: its records are not served"
            )
            log.warning("%s", self.problem)
            return False
        version, matrix = exported.fingerprint, exported.matrix
        coarse, reader = exported.extra.get(ORG_DOCS), exported.rows
        # The parsed rows go before anything that stays is made (org_columns.py).
        packed = Packed(exported.meta)
        del exported
        release_memory()
        self._install(version, packed, matrix, coarse, reader)
        log.info("org index loaded: %d chunks (%s)", self.snapshot.rows, version)
        return True

    def _install(
        self, version: str, packed: Packed, matrix: Any, coarse: Any = None, reader: Any = None
    ) -> None:
        docs = Documents(packed)
        urls: dict[str, str] = {}
        for d, url in enumerate(packed.text["url"]):
            if docs.repo[d] not in urls:
                urls[docs.repo[d]] = repo_key(url)
        successors = {
            docs.paths[d]: later
            for d, later in enumerate(packed.text["successors"])
            if later and later != "[]"
        }
        parse = _scope_parser()
        stored = [parse(text) for text in packed.text["scope"]]
        plain: dict[str, set[str]] = {}
        unranked: set[str] = set()
        for d, scope in enumerate(stored):
            if docs.kind[d] == "rule":
                if not scope.ranked:
                    unranked.add(docs.paths[d])
                if not scope.org:
                    plain.setdefault(docs.repo[d], set()).add(docs.paths[d])
        snapshot = OrgSnapshot(
            version=version,
            meta=Rows(docs),
            matrix=matrix,
            documents=docs,
            coarse=coarse,
            reader=reader,
        )
        scopes = _OrgScopes(docs, self._scope_rows(docs, packed, stored), parse)
        scopes.compile(self.scopes)  # off the hooks' path: the previous scopes serve till now
        snapshot.warm((ORG_KEY,))
        with self._lock:
            self.snapshot, self.scopes, self._documents = snapshot, scopes, docs
            self._successors = successors
            self._urls = urls
            self._plain_rules = {r: frozenset(p) for r, p in plain.items()}
            self._all_plain = frozenset(p for paths in plain.values() for p in paths)
            self._unranked = frozenset(unranked)
            self._own.clear()
            self._excluded.clear()
        self.problem = ""
        release_memory()  # what the load made and dropped (the packed text, the rows read)

    @staticmethod
    def _scope_rows(
        docs: Documents, packed: Packed, stored: Sequence[Scope]
    ) -> Iterator[Mapping[str, Any]]:
        """The documents as the file scopes file them: a rule of its repository alone
        under ``ORG_KEY:<repository>``, every other record under ``ORG_KEY``; no name or
        description (:class:`_OrgScopes` reads those when it gives a record). One row at
        a time: none of them stays."""
        keys: dict[str, str] = {}
        texts: dict[str, str] = {}
        for d, text in enumerate(packed.text["scope"]):
            scope = stored[d]
            if scope == _EMPTY:
                continue
            repo = docs.repo[d]
            project = ORG_KEY
            if docs.kind[d] == "rule" and not scope.org:
                project = keys.setdefault(repo, f"{ORG_KEY}:{repo}")
            yield {
                "path": docs.paths[d],
                "kind": docs.kind[d],
                "project": project,
                "name": "",
                "description": "",
                "date": docs.date[d],
                "adr_id": docs.adr_id[d],
                "scope": texts.setdefault(text, text),
                "origin": "org",
                "repo": repo,
                "mark": docs.mark[d],
            }

    # -- a project's view --------------------------------------------------------

    def _own_of(self, root: str) -> tuple[frozenset[str], frozenset[str]]:
        """The repositories that are the project at ``root`` (by name or by its origin
        remote's URL) and the plain rules of those."""
        with self._lock:
            cached = self._own.get(root)
        if cached is not None:
            return cached
        names = {os.path.basename(root.rstrip("/"))}
        remote = origin_url(root)
        if remote:
            key = repo_key(remote)
            names.add(key.rsplit("/", 1)[-1])
            names.update(r for r, u in self._urls.items() if u and u == key)
        repos = frozenset(r for r in names if r in self._urls)
        rules = frozenset(p for r in repos for p in self._plain_rules.get(r, ()))
        with self._lock:
            if len(self._own) >= MAX_PROJECTS:
                self._own.clear()
            self._own[root] = (repos, rules)
        return repos, rules

    def keys_for(self, root: str) -> tuple[str, ...]:
        """The file scopes' keys of the org records that may apply in ``root``."""
        repos, _ = self._own_of(root)
        return (ORG_KEY, *(f"{ORG_KEY}:{r}" for r in sorted(repos)))

    def excluded(
        self, root: str, local: VectorSnapshot, keys: tuple[str, ...], *, ranking: bool = True
    ) -> frozenset[str]:
        """The org records the project at ``root`` must never be given: the rules of
        other repositories (without ``scope: org``), and the org copies of what the
        project holds itself (``local``, its rows under ``keys``); with ``ranking``,
        also the org rules no message ranks by itself (the file hook gives those).
        Remembered per project until either snapshot changes; the same object each
        time (the ranking keeps its documents' mask by it)."""
        if not self.snapshot.rows:
            return frozenset()
        with self._lock:
            cached = self._excluded.get(root)
        if cached is not None and cached[:2] == (local.version, self.version):
            return cached[3] if ranking else cached[2]
        repos, own_rules = self._own_of(root)
        wanted = set(keys)
        digests: list[str] = []
        copies: set[str] = set()
        prefix = root.rstrip("/") + "/"
        index = self._documents.index if self._documents is not None else {}
        for row in local.meta:
            if row["project"] not in wanted or row.get("chunk_index"):
                continue
            digests.append(str(row.get("source_hash") or ""))
            path = str(row["path"])
            if repos and path.startswith(prefix):
                rel = path[len(prefix) :]
                copies.update(p for r in repos if (p := org_path(r, rel)) in index)
        if self._documents is not None:
            copies |= self._documents.with_digests(digests)
        out = frozenset((self._all_plain - own_rules) | copies)
        ranked = out | self._unranked
        with self._lock:
            if len(self._excluded) >= MAX_PROJECTS:
                self._excluded.clear()
            self._excluded[root] = (local.version, self.version, out, ranked)
        return ranked if ranking else out

    # -- records -----------------------------------------------------------------

    def record(self, path: str) -> DocumentRecord | None:
        """The org record at ``path`` (``org://…``), None when the snapshot has none."""
        docs = self._documents
        d = docs.index.get(path) if docs is not None else None
        return docs.record(d) if docs is not None and d is not None else None

    def digest(self, path: str) -> str:
        """The content hash ``path`` was built at ('' when unknown)."""
        docs = self._documents
        d = docs.index.get(path) if docs is not None else None
        return docs.digest(d) if docs is not None and d is not None else ""

    def successors(self, record: DocumentRecord) -> list[DocumentRecord]:
        """The ADRs that replaced an org ADR, across repositories, as the org build
        stored them (a path in its own repository, or an ``org://`` path)."""
        stored = self._successors.get(record.path)
        if stored is None or record.kind != "adr":
            return []
        try:
            named = json.loads(stored)
        except ValueError:
            return []
        out = []
        for item in named if isinstance(named, list) else ():
            if not isinstance(item, str) or not item:
                continue
            path = item if item.startswith(ORG_SCHEME) else org_path(record.repo, item)
            found = self.record(path)
            if found is not None:
                out.append(found)
        return out
