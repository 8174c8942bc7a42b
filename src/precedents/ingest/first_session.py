"""The background index of one project, started by the daemon at its first session.

``python -m precedents.ingest.first_session ROOT``: the daemon
(:mod:`precedents.query_daemon.projects`) runs this in a child process at
background priority, never in its own threads: embedding takes whole cores for
seconds to minutes, and the daemon's threads answer hooks in milliseconds.

Only that project is walked: its own ADRs, rule files and team notes (and its git
history), and its Claude Code folder (conversations, memory notes) when there is
one. Not every project Claude Code was ever used in: a first session must not wait
behind the user's whole history. The pass is the indexer's ordinary sync under the
writer lock (a running `reindex` or watcher is waited for), so an interrupted pass
goes on next time and an unchanged file is not embedded again.

Exit 0 when indexed; 1 with one line on stderr when it could not be (the daemon
logs the exit; the provisional rules keep serving).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

from precedents.config import Settings, load_settings
from precedents.errors import PrecedentsError
from precedents.ingest.background import lower_priority
from precedents.ingest.report import IndexReport
from precedents.ingest.sources import (
    JSONL,
    MARKDOWN,
    SourceDir,
    claude_folder_matches,
    project_sources,
    walk,
)

log = logging.getLogger("precedents.ingest")

MODULE = "precedents.ingest.first_session"


def project_only_sources(settings: Settings, root: str) -> list[SourceDir]:
    """The sources of the project at ``root`` alone: its own folders, and its Claude Code
    folder's conversations and memory notes (as ``claude_sources`` finds them)."""
    out = project_sources(Path(root))
    if not settings.discover_claude:
        return out
    projects = settings.claude_dir / "projects"
    try:
        folders = sorted(p for p in projects.iterdir() if p.is_dir())
    except OSError:
        folders = []
    for folder in folders:
        if claude_folder_matches(folder.name, root):
            out.append(SourceDir("conversation", folder, root, JSONL))
            if (folder / "memory").is_dir():
                out.append(SourceDir("note", folder / "memory", root, MARKDOWN))
    return out


def has_sources(settings: Settings, root: str) -> bool:
    """Whether the project at ``root`` has anything to index: a source folder that
    exists, or a git history. A scratch folder Claude Code was started in has none:
    it is neither registered nor indexed."""
    return any(_holds(s) for s in project_only_sources(settings, root))


def _holds(source: SourceDir) -> bool:
    if source.refused:
        return False
    if source.history:
        return True
    if source.names:  # the project's own folder, for `AGENTS.md` and the like
        return any((source.root / name).is_file() for name in source.names)
    return source.root.is_dir()


def index_project(settings: Settings, root: str) -> IndexReport:
    """Bring the store in line with the project at ``root``'s sources (only those:
    other projects' rows are left as they are)."""
    from precedents.ingest.indexer import Indexer, lazy_store
    from precedents.runlock import WriterLock
    from precedents.store.health import save, tree_stamp
    from precedents.store.summary import summarize

    found = project_only_sources(settings, root)
    writer = WriterLock(settings.run_dir)
    with writer.held():
        lazy = lazy_store(settings)
        store = lazy.open()
        report = Indexer(settings, store, lazy.model, writer).sync(walk(found))
        # What `status` reads without opening the store (as `reindex` leaves it).
        stamp = tree_stamp(store.path)
        if stamp is not None:
            save(settings.index_dir, settings.cache_dir, stamp[0], summarize(store))
    return report


def main(argv: list[str] | None = None) -> int:
    """Index the project named on the command line; one line on stderr says how it went."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not Path(args[0]).is_absolute():
        print("usage: python -m precedents.ingest.first_session ROOT", file=sys.stderr)
        return 2
    lower_priority()  # the daemon lowered it already; a child started by hand too
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    started = time.monotonic()
    try:
        report = index_project(load_settings(), args[0])
    except (PrecedentsError, OSError) as exc:
        print(f"precedents: indexing {args[0]} failed: {exc}", file=sys.stderr)
        return 1
    line = {
        "project": args[0],
        "files_indexed": report.files_indexed,
        "problems": len(report.problems),
        "s": round(time.monotonic() - started, 2),
    }
    print(time.strftime("%Y-%m-%dT%H:%M:%S ") + "indexed " + json.dumps(line), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
