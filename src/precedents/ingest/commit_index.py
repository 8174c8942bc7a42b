"""Git history into the store: a project's decision commits as records of kind ``commit``.

Run by every indexing pass (``Indexer.sync``: ``reindex``, the watcher's start)
for each git project the walk knows (``Walk.repos``), and by the watcher's
rescan (``Indexer.sync_commits``). Per project, reading is incremental
(``read_commits(known_head=...)``: ``known..HEAD``): the head the records are
current with is in the store's meta (``head_key``: a store rebuilt from the
sources has none and reads the history again), the path history
(commit_history.py) a JSON file under the cache folder, ``commits/<key>.json``.

A record per commit with rationale: path ``<git root>@<first 12 hex of the sha>``
(unique per record, and what the reader is shown: the repository and the
commit), content hash the full sha (an unchanged commit costs no embedding),
name the subject, description ``rationale_sentence(body)``, date the committer
date, chunks subject + masked body, scope the files it touched by their names
when it was indexed.

What the daemon's file hook needs is written beside it, small and bounded:
``commits/<key>.files.json`` maps each file's current path to its decision
commits (newest first, at most ``PER_FILE``) with their ``later changed by``
line, so a Read/Edit/Write is answered from memory, without git, and follows
renames made after the commit was indexed (recall/commit_files.py).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from precedents.errors import PrecedentsError
from precedents.ingest.chunking import chunk_document
from precedents.ingest.commit_history import PathHistory, build_history, later_line, update_history
from precedents.ingest.commit_paths import FOLDER, commit_path, files_map_path, state_path
from precedents.ingest.commits import Commit, rationale_sentence, read_commits
from precedents.ingest.report import IndexReport
from precedents.ingest.sources import Problem
from precedents.rules.scope import Scope
from precedents.runlock import write_private
from precedents.secrets.mask import mask_secrets
from precedents.secrets.names import shown_path
from precedents.store import DocumentRecord, FileRecord, Store

# The newest decision commits kept as records per project: a first index of a long
# history embeds at most this many (1-2 chunks each); older ones are left out.
MAX_RECORDS: Final = 2_000
MAX_SCOPE_FILES: Final = 50  # files named in one commit's scope
STATE_VERSION: Final = 1


@dataclass
class _State:
    head: str | None
    history: PathHistory


def head_key(root: str) -> str:
    """The store's meta key of the head project ``root``'s records are current with."""
    return f"commit_head:{root}"


def _load_state(store: Store, cache_dir: Path, root: str) -> _State:
    """The head the store's records of ``root`` are current with, and the path history.

    The head is the store's (its meta): a store rebuilt beside the old one
    (`reindex --full`) has none, so its commits are read again; the history
    file is used only when it is current with that head.
    """
    stored = store.meta().get(head_key(root))
    state = _read_state(cache_dir, root)
    if stored is None or state.head != stored or state.history.head != stored:
        return _State(None, PathHistory())
    return state


def _read_state(cache_dir: Path, root: str) -> _State:
    try:
        data = json.loads(state_path(cache_dir, root).read_text("utf-8"))
        if data.get("version") != STATE_VERSION or data.get("root") != root:
            raise ValueError("another version or project")
        head = data.get("head")
        return _State(
            head if isinstance(head, str) else None, PathHistory.from_json(data["history"])
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return _State(None, PathHistory())  # no state, or a damaged one: read it all


def _save_state(cache_dir: Path, root: str, history: PathHistory, problems: list[str]) -> None:
    folder = cache_dir / FOLDER
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    state = {"version": STATE_VERSION, "root": root, "head": history.head}
    state["history"] = history.to_json()
    write_private(state_path(cache_dir, root), json.dumps(state, separators=(",", ":")))
    files: dict[str, list[list[Any]]] = {}
    for path, decisions in history.by_path.items():
        files[path] = [
            [d.sha[:12], later_line(d.later[-1]) if d.later else ""] for d in reversed(decisions)
        ]
    small = {"version": STATE_VERSION, "root": root, "files": files, "problems": problems}
    write_private(files_map_path(cache_dir, root), json.dumps(small, separators=(",", ":")))


def _record(root: str, commit: Commit, names: Iterable[str]) -> tuple[DocumentRecord, list[str]]:
    scope = Scope(mentions=tuple(sorted(names))[:MAX_SCOPE_FILES])
    rationale = rationale_sentence(commit.body)
    doc = DocumentRecord(
        "commit", root, commit_path(root, commit.sha), commit.subject, rationale,
        commit.date, scope=scope.to_json(),
    )  # fmt: skip
    return doc, chunk_document(commit.subject, "", commit.body)


def _current_names(history: PathHistory) -> dict[str, set[str]]:
    names: dict[str, set[str]] = {}
    for path, decisions in history.by_path.items():
        for d in decisions:
            names.setdefault(d.sha, set()).add(path)
    return names


Flush = Callable[[list[tuple[FileRecord, DocumentRecord, list[str]]]], None]


def index_repos(
    store: Store, cache_dir: Path, repos: Iterable[str], flush: Flush, report: IndexReport
) -> None:
    """:func:`index_repo` for each of ``repos``; a repository that breaks the reader is
    one problem line, and the others still index."""
    for root in repos:
        try:
            index_repo(store, cache_dir, root, flush, report)
        except PrecedentsError:
            raise  # the store's or the model's: every source fails alike
        except Exception as exc:
            why = f"commits not read ({type(exc).__name__})"
            report.problems.append(Problem(shown_path(root), why))


def index_repo(store: Store, cache_dir: Path, root: str, flush: Flush, report: IndexReport) -> None:
    """Bring project ``root``'s commit records up to its HEAD (module docstring).

    ``flush`` embeds and writes (file row, document, chunks) items. Never raises
    for a bad repository: its problems go to ``report`` (and to ``status``).
    """
    state = _load_state(store, cache_dir, root)
    read = read_commits(Path(root), known_head=state.head, mask=mask_secrets)
    problems = list(read.problems)
    if read.head == state.head and not read.commits:
        if problems:
            report.problems += [Problem(shown_path(root), p) for p in problems]
        _save_problems(cache_dir, root, state, problems)
        return
    full = state.head is None or read.rewritten
    history = build_history(Path(root), read) if full else state.history
    if not full:
        update_history(Path(root), history, read)
    problems += history.problems
    known = {p: f for p, f in store.files().items() if f.kind == "commit" and f.project == root}
    decisions = [c for c in read.commits if c.rationale]
    if len(decisions) > MAX_RECORDS:
        problems.append(f"only the newest {MAX_RECORDS:,} commits with rationale are records")
        decisions = decisions[:MAX_RECORDS]
    if full and read.head is not None and read.head != state.head:
        # A first read, or history rewritten: rows of commits no longer read go.
        keep = {commit_path(root, c.sha) for c in decisions}
        gone = [p for p in known if p not in keep]
        report.files_deleted += store.delete_files(gone)
    names = _current_names(history)
    items: list[tuple[FileRecord, DocumentRecord, list[str]]] = []
    for commit in decisions:
        path = commit_path(root, commit.sha)
        old = known.get(path)
        if old is not None and old.sha256 == commit.sha:
            continue
        files = names.get(commit.sha) or {f.path for f in commit.files if f.status != "D"}
        doc, chunks = _record(root, commit, files)
        size = len(commit.subject) + len(commit.body)
        items.append(
            (
                FileRecord(path, "commit", root, commit.sha, size, len(chunks), time.time()),
                doc,
                chunks,
            )
        )
        report.commits_indexed += 1
    flush(items)
    report.problems += [Problem(shown_path(root), p) for p in problems]
    try:
        _save_state(cache_dir, root, history, problems)
    except OSError as exc:  # the records are stored; the next pass reads the range again
        report.problems.append(Problem(shown_path(root), f"commit state not saved: {exc.strerror}"))
        return
    if history.head is not None and history.head != state.head:
        # Last: a pass cut short before it reads the same range again (no embedding:
        # every commit already stored is known by its sha).
        store.stamp(**{head_key(root): history.head})


def _save_problems(cache_dir: Path, root: str, state: _State, problems: list[str]) -> None:
    """Nothing new: keep the state, refresh the problems ``status`` shows."""
    path = files_map_path(cache_dir, root)
    try:
        data = json.loads(path.read_text("utf-8"))
        if data.get("problems") == problems:
            return
        data["problems"] = problems
        write_private(path, json.dumps(data, separators=(",", ":")))
    except (OSError, ValueError, AttributeError):
        with contextlib.suppress(OSError):
            _save_state(cache_dir, root, state.history, problems)
