"""Which stored records a pass found gone: only those its sources would have produced.

A record's source is (kind, root folder, path). A pass over some folders (``reindex
--notes DIR``, the watcher's reconcile of a new folder) removes a record only when
one of the sources it walked would list a file of that kind at that path and the
file is no longer there. A path prefix alone is not enough: a notes folder named
over a repository's root (``--notes REPO``) does not list its `.cursor/rules` (hidden),
its `AGENTS.md` or its ADRs (left to their readers, :func:`~.sources.yields_to`), so it
must not remove their records either (issue #29: "3 unchanged, 3 removed").
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from precedents.ingest.sources import SourceDir, Walk
from precedents.secrets.names import withheld_reason
from precedents.store import FileRecord


def gone_paths(known: Mapping[str, FileRecord], walk: Walk) -> list[str]:
    """The stored files ``walk`` shows are gone: the records its sources would have
    produced whose file it did not find, and every record whose path carries a secret
    (a store built before names were checked may hold some)."""
    present = {str(f.path) for f in walk.files}
    whole = tuple(str(w).rstrip(os.sep) + os.sep for w in walk.whole)
    gone: list[str] = []
    for path, record in known.items():
        # A commit record (ROOT@SHA) is no file: a repository nested in a walked folder
        # keeps its records; its own pass drops those a rewritten history lost.
        if record.kind == "commit":
            continue
        withheld = withheld_reason(path) is not None
        missing = path not in present and (
            bool(whole and path.startswith(whole)) or _produced(record, path, walk)
        )
        if withheld or missing:
            gone.append(path)
    return gone


def _produced(record: FileRecord, path: str, walk: Walk) -> bool:
    return produced_by(record, path, walk.sources, walk.left_out)


def produced_by(
    record: FileRecord, path: str, sources: Iterable[SourceDir], left_out: Iterable[SourceDir]
) -> bool:
    """Whether one of ``sources`` would have produced ``record`` (same kind, a file it
    lists), or one of ``left_out`` held it (a folder refused whole, a link out of the
    project: every record of its kind under it goes)."""
    if any(s.kind == record.kind and s.covers(path) for s in sources):
        return True
    return any(s.kind == record.kind and _under(path, s) for s in left_out)


def _under(path: str, src: SourceDir) -> bool:
    return path.startswith(str(src.root).rstrip(os.sep) + os.sep)
