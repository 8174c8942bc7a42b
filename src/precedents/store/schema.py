"""Row types and Arrow schemas of the store's tables (chunks, files, meta)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from precedents.kinds import KINDS as _KINDS
from precedents.kinds import SHARED_PROJECT as SHARED_PROJECT
from precedents.store.rows import DocumentHit as DocumentHit
from precedents.store.rows import DocumentRecord as DocumentRecord
from precedents.store.rows import FileRecord as FileRecord

CHUNKS = "chunks"
FILES = "files"
META = "meta"


KINDS = _KINDS  # re-exported: the store validates rows against it

# What a search hands back of a chunk row, and what the daemon keeps in memory
# (everything but its text, vector and hash).
META_COLUMNS = (
    "doc_id",
    "kind",
    "project",
    "path",
    "name",
    "description",
    "date",
    "adr_id",
    "chunk_index",
    "scope",
    "source_hash",
    "origin",
    "author",
    "decided",
)
# Columns added to the chunk table after stores were first built: an older
# table gets them (empty) when a writer opens it, and a reader fills them in.
# origin, author: a team note's mark and who wrote it (ingest/team.py, issue #23).
# decided: where a conversation's decision passage was said, YYYY-MM-DD#N (issue #27).
ADDED_COLUMNS = ("scope", "origin", "author", "decided")


def chunks_schema(dimension: int) -> pa.Schema:
    """One row per chunk; ``vector`` is normalized float32 of the model's dimension."""
    return pa.schema(
        [
            pa.field("chunk_id", pa.string(), nullable=False),
            pa.field("doc_id", pa.string(), nullable=False),
            pa.field("kind", pa.string(), nullable=False),
            pa.field("project", pa.string(), nullable=False),
            pa.field("path", pa.string(), nullable=False),
            pa.field("name", pa.string()),
            pa.field("description", pa.string()),
            pa.field("date", pa.string()),
            pa.field("adr_id", pa.string()),
            pa.field("chunk_index", pa.int32()),
            pa.field("text", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dimension)),
            pa.field("source_hash", pa.string()),
            # Last: a table built before they existed gets them appended (ADDED_COLUMNS).
            pa.field("scope", pa.string()),
            pa.field("origin", pa.string()),
            pa.field("author", pa.string()),
            pa.field("decided", pa.string()),
        ]
    )


FILES_SCHEMA = pa.schema(
    [
        pa.field("path", pa.string(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("project", pa.string(), nullable=False),
        pa.field("sha256", pa.string(), nullable=False),
        pa.field("size", pa.int64()),
        pa.field("chunks", pa.int32()),
        pa.field("indexed_at", pa.float64()),
    ]
)

META_SCHEMA = pa.schema(
    [pa.field("key", pa.string(), nullable=False), pa.field("value", pa.string())]
)


def count_files(files: pa.Table) -> dict[tuple[str, str], dict[str, int]]:
    """Files, documents (files with chunks) and chunks per (kind, project) of a file table."""
    out: dict[tuple[str, str], dict[str, int]] = {}
    for row in files.to_pylist():
        key = (row["kind"], row["project"])
        entry = out.setdefault(key, {"files": 0, "documents": 0, "chunks": 0, "indexed_at": 0})
        entry["files"] += 1
        entry["documents"] += 1 if row["chunks"] else 0
        entry["chunks"] += int(row["chunks"] or 0)
        # The newest write of a file, in whole seconds: `status`'s "last indexed" counts
        # every write (a `remember`, the watcher's), not only a full pass (issue #29).
        entry["indexed_at"] = max(entry["indexed_at"], int(row.get("indexed_at") or 0))
    return out


def present_columns(names: list[str]) -> list[str]:
    """The metadata columns a chunk table with column ``names`` has, plus ``vector``:
    a table built before :data:`ADDED_COLUMNS` existed is read without them."""
    return [*present(META_COLUMNS, names), "vector"]


def present(columns: Sequence[str], names: list[str]) -> list[str]:
    """Those of ``columns`` a chunk table with column ``names`` has (all but the
    :data:`ADDED_COLUMNS` it was built without)."""
    have = set(names)
    return [c for c in columns if c in have or c not in ADDED_COLUMNS]


def rows_and_matrix(
    chunks: pa.Table, dimension: int
) -> tuple[list[dict[str, Any]], NDArray[np.float32]]:
    """Chunk rows read with ``META_COLUMNS`` and ``vector``: metadata dicts and one matrix."""
    vec_col = chunks.column("vector").combine_chunks()
    matrix = vec_col.values.to_numpy(zero_copy_only=False).reshape(-1, dimension)
    meta = chunks.drop_columns(["vector"]).to_pylist()
    return meta, np.ascontiguousarray(matrix, dtype=np.float32)


# The rows `status` reads to count rule files by format (store/summary.py).
RULE_ROWS = "kind = 'rule' AND chunk_index = 0"
RULE_COLUMNS = ["path", "project", "scope"]


def scope_rows(rows: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(path, project, scope JSON) of rule rows read with :data:`RULE_COLUMNS`."""
    return [(str(r["path"]), str(r["project"]), str(r["scope"] or "")) for r in rows]
