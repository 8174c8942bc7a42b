"""The file hook's decision commits: a touched file's commits with rationale, from memory.

The indexer writes, per git project, a small map of each file's current path
to its decision commits, newest first, with the ``later changed by`` line of
the last commit without rationale that changed their lines
(ingest/commit_index.py). It is read here when it changes (one ``stat`` per
file touch), so the daemon never runs git for a Read/Edit/Write, and a file
renamed after its decision was indexed is still found under its new name.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from precedents.ingest.commit_paths import commit_path, files_map_path

# A project's map: {current path: [(record path, later line or "")]}.
FileMap = dict[str, list[tuple[str, str]]]


class CommitFiles:
    """The maps of every project asked about, each reloaded when its file changes."""

    def __init__(self, cache_dir: Path) -> None:
        self.cache_dir = cache_dir
        self._maps: dict[str, tuple[float, int, FileMap]] = {}
        self._lock = threading.Lock()

    def for_file(self, root: str, rel: str) -> list[tuple[str, str]]:
        """The decision commits that touched ``rel`` (relative to ``root``): (record path,
        ``later changed by`` line or ""), newest first."""
        return self._map(root).get(rel, [])

    def _map(self, root: str) -> FileMap:
        path = files_map_path(self.cache_dir, root)
        try:
            st = os.stat(path)
        except OSError:
            return {}
        with self._lock:
            held = self._maps.get(root)
            if held is not None and held[:2] == (st.st_mtime, st.st_size):
                return held[2]
        loaded = _read(path, root)
        with self._lock:
            self._maps[root] = (st.st_mtime, st.st_size, loaded)
        return loaded


def _read(path: Path, root: str) -> FileMap:
    """The map in ``path``; anything unreadable is an empty one (the hook stays quiet)."""
    try:
        data = json.loads(path.read_text("utf-8"))
        files = data["files"] if data.get("root") == root else {}
        return {
            str(rel): [(commit_path(root, str(sha)), str(later)) for sha, later in entries]
            for rel, entries in files.items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}
