"""Row types and Arrow schemas of the store's tables (chunks, files, meta)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from precedents.errors import StoreError
from precedents.kinds import KINDS as _KINDS
from precedents.kinds import SHARED_PROJECT as SHARED_PROJECT
from precedents.kinds import Kind, is_kind

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
)


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


@dataclass(frozen=True)
class DocumentRecord:
    """What is known about one indexed document, the same on each of its chunks."""

    kind: Kind
    project: str
    path: str
    name: str
    description: str = ""
    date: str = ""
    adr_id: str = ""

    @property
    def doc_id(self) -> str:
        """A document is its source file."""
        return self.path

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> DocumentRecord:
        """The document a chunk row (from LanceDB or the daemon's copy) belongs to."""
        kind = row["kind"]
        if not is_kind(kind):
            raise StoreError(f"a row of {row['path']!r} has no known kind ({kind!r})")
        return cls(
            kind=kind,
            project=row["project"],
            path=row["path"],
            name=row["name"] or "",
            description=row["description"] or "",
            date=row["date"] or "",
            adr_id=row["adr_id"] or "",
        )


@dataclass(frozen=True)
class FileRecord:
    """One row of the file table: what was indexed from a source file, by content hash."""

    path: str
    kind: Kind
    project: str
    sha256: str
    size: int
    chunks: int
    indexed_at: float


@dataclass(frozen=True)
class DocumentHit:
    """A search result: one document, scored by its best chunk (cosine similarity)."""

    record: DocumentRecord
    score: float
    chunk_index: int

    def to_json(self) -> dict[str, object]:
        """The ``precedents query --json`` shape of one result."""
        r = self.record
        return {
            "kind": r.kind,
            "project": r.project,
            "path": r.path,
            "name": r.name,
            "description": r.description,
            "date": r.date,
            "adr_id": r.adr_id,
            "score": round(self.score, 4),
        }


def count_files(files: pa.Table) -> dict[tuple[str, str], dict[str, int]]:
    """Files, documents (files with chunks) and chunks per (kind, project) of a file table."""
    out: dict[tuple[str, str], dict[str, int]] = {}
    for row in files.to_pylist():
        key = (row["kind"], row["project"])
        entry = out.setdefault(key, {"files": 0, "documents": 0, "chunks": 0})
        entry["files"] += 1
        entry["documents"] += 1 if row["chunks"] else 0
        entry["chunks"] += int(row["chunks"] or 0)
    return out


def rows_and_matrix(
    chunks: pa.Table, dimension: int
) -> tuple[list[dict[str, Any]], NDArray[np.float32]]:
    """Chunk rows read with ``META_COLUMNS`` and ``vector``: metadata dicts and one matrix."""
    vec_col = chunks.column("vector").combine_chunks()
    matrix = vec_col.values.to_numpy(zero_copy_only=False).reshape(-1, dimension)
    meta = chunks.drop_columns(["vector"]).to_pylist()
    return meta, np.ascontiguousarray(matrix, dtype=np.float32)
