"""Which source a changed path belongs to, and the watchdog watches on the source folders.

Routing follows :func:`precedents.ingest.sources.walk` exactly (first source in list
order wins, hidden names and other suffixes are skipped, ``MEMORY.md`` is not
a note), so an event never indexes a file the walk would not, and never under
another kind or project than the walk would.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch

from precedents.files import inside, undecodable
from precedents.ingest.sources import SourceDir, SourceFile, leaves_root, yields_to

log = logging.getLogger("precedents.watcher")

# What a save, a delete or a rename produces. FileOpened, FileClosedNoWrite and
# DirModified (one per change inside a folder) are noise, dropped in the emitter.
EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileDeletedEvent,
    FileClosedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]

WatchKey = tuple[str, bool]  # (folder, recursive)


def within(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or lies under it (string paths, no I/O)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def route(sources: Sequence[SourceDir], path: str) -> SourceFile | None:
    """The source a file belongs to, or None for temp files, hidden files and the like."""
    if undecodable(path):
        return None  # no tool downstream holds such a name; the walk reports it
    for src in sources:
        root = str(src.root)
        if path == root or not within(path, root):
            continue
        if src.linked_out():
            continue  # a folder left out, or a link out of its project: never read
        parts = Path(path[len(root.rstrip(os.sep)) + 1 :]).parts
        if not parts or ((not src.recursive or src.names) and len(parts) != 1):
            continue
        name = parts[-1]
        hidden = any(p.startswith(".") for p in parts) and name not in src.names
        if hidden or not src.takes(name) or yields_to(src, path, sources):
            continue  # a rule or ADR under a notes folder is its reader's (as in the walk)
        if _linked_out(Path(path), src.root):
            continue
        return SourceFile(Path(path), src.kind, src.project, src.root, src.origin)
    return None


def _linked_out(path: Path, root: Path) -> bool:
    """A file reached through a symlink that leaves its source folder (never indexed)."""
    inside = [p for p in (path, *path.parents) if p != root and within(str(p), str(root))]
    if not any(p.is_symlink() for p in inside):
        return False
    return leaves_root(path, root)


def may_hold_sources(claude_dir: Path, path: str) -> bool:
    """Whether a folder appearing at ``path`` can be a new Claude Code source folder.

    ``projects/`` or ``rules/`` in Claude's folder, a project folder in
    ``projects/``, or the ``memory/`` folder of a project.
    """
    claude = str(claude_dir)
    projects = os.path.join(claude, "projects")
    parent, name = os.path.split(path)
    if parent == claude:
        return name in ("projects", "rules")
    return parent == projects or (os.path.dirname(parent) == projects and name == "memory")


def awaited_at(src: SourceDir) -> str | None:
    """Where to watch for an optional source folder that does not exist yet: its nearest
    existing parent inside its project (a team folder before the first note is pulled).
    None when the folder exists, or nothing inside the project does."""
    if not src.optional or src.root.is_dir() or src.refused:
        return None
    project = src.project
    for parent in src.root.parents:
        if not within(str(parent), project):
            return None
        if parent.is_dir():
            # `.precedents -> /elsewhere`: the link is no place to wait in.
            return str(parent) if inside(parent, project) else None
    return None


def awaits(sources: Sequence[SourceDir], folder: str) -> bool:
    """Whether a folder appearing at ``folder`` is, or leads to, an optional source folder
    (sources are then discovered again, and watched). Not "one that is missing": by the
    time the event is read, a `git pull` has made the whole path."""
    return any(s.optional and within(str(s.root), folder) for s in sources)


def git_dirs(repos: Sequence[str]) -> dict[str, str]:
    """The git folder of each repository whose commits are read (``.git`` a folder; a
    worktree's ``.git`` file is left to the rescan), by that folder."""
    return {os.path.join(r, ".git"): r for r in repos if os.path.isdir(os.path.join(r, ".git"))}


def moved_ref(path: str, git_dir: str) -> bool:
    """Whether ``path`` inside ``git_dir`` says a branch moved: HEAD, packed-refs, a
    branch under refs/heads (git writes ``x.lock`` then renames it to ``x``)."""
    rel = os.path.relpath(path, git_dir).replace(os.sep, "/")
    if rel.endswith(".lock"):
        return False
    return rel in ("HEAD", "packed-refs") or rel.startswith("refs/heads/")


def wanted_watches(
    sources: Sequence[SourceDir], claude_dir: Path | None, repos: Sequence[str] = ()
) -> set[WatchKey]:
    """The watches ``sources`` need; with ``claude_dir``, also where new ones appear; with
    ``repos``, each one's git folder (HEAD, packed-refs) and its branches (refs/heads):
    a new commit is read at once, not at the next rescan (issue #27)."""
    # A folder linked out of its project is never watched (issue #28): its files are
    # not this repository's, and watching `/` or a home folder would cost the world.
    wanted = {(str(s.root), s.recursive) for s in sources if not s.linked_out()}
    for git_dir in git_dirs(repos):
        wanted |= {(git_dir, False), (os.path.join(git_dir, "refs", "heads"), True)}
    # Where an optional folder will appear (one level at a time: each new level is
    # discovered, then watched, until the folder itself is).
    wanted |= {(p, False) for p in map(awaited_at, sources) if p is not None}
    if claude_dir is not None:
        wanted |= {(str(claude_dir), False), (str(claude_dir / "projects"), False)}
    # A recursive watch of a folder already sees its direct children.
    return {(p, r) for p, r in wanted if r or (p, True) not in wanted}


class _Handler(FileSystemEventHandler):
    def __init__(self, on_event: Callable[[FileSystemEvent], None]) -> None:
        self._on_event = on_event

    def on_any_event(self, event: FileSystemEvent) -> None:
        self._on_event(event)


class Watches:
    """One watchdog observer and the watches scheduled on it, kept in line with a wanted set."""

    def __init__(self, on_event: Callable[[FileSystemEvent], None]) -> None:
        """``on_event`` is called on the observer's thread for every kept event."""
        self._handler = _Handler(on_event)
        self._observer: BaseObserver = Observer()
        self._watches: dict[WatchKey, ObservedWatch] = {}
        self._dead: set[str] = set()

    def start(self) -> None:
        """Start the observer thread."""
        self._observer.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the observer thread and wait for it."""
        self._observer.stop()
        if self._observer.is_alive():
            self._observer.join(timeout_s)

    @property
    def alive(self) -> bool:
        """Whether the observer thread runs."""
        return self._observer.is_alive()

    def mark_dead(self, folder: str) -> None:
        """A watched folder was deleted: its watch is re-made if the folder comes back."""
        self._dead.add(folder)

    def _alive(self, key: WatchKey, watch: ObservedWatch) -> bool:
        if key[0] in self._dead or not os.path.isdir(key[0]):
            return False
        # watchdog stops the emitter of a deleted folder but keeps the watch, so a
        # re-created folder would stay unwatched; its registry is private (getattr).
        emitters: Any = getattr(self._observer, "_emitter_for_watch", None)
        if not isinstance(emitters, dict):
            return True
        emitter = emitters.get(watch)
        return emitter is not None and bool(emitter.is_alive())

    def sync(self, wanted: set[WatchKey]) -> set[str]:
        """Drop unwanted or dead watches, add missing ones; returns folders newly watched."""
        for key, watch in list(self._watches.items()):
            if key not in wanted or not self._alive(key, watch):
                # KeyError & co: its emitter already died with its folder.
                with contextlib.suppress(KeyError, OSError, RuntimeError):
                    self._observer.unschedule(watch)
                del self._watches[key]
                self._dead.discard(key[0])
        added: set[str] = set()
        for key in sorted(wanted - set(self._watches)):
            path, recursive = key
            if not os.path.isdir(path):
                continue  # a parent watch or the next rescan picks it up when it appears
            try:
                self._watches[key] = self._observer.schedule(
                    self._handler, path, recursive=recursive, event_filter=EVENTS
                )
                added.add(path)
            except OSError as exc:  # vanished meanwhile, or the inotify watch limit
                log.warning("cannot watch %s: %s", path, exc.strerror or exc)
        return added
