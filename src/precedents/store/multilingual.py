"""Multilingual vectors: the multilingual model's vectors for the chunks not written in English.

The default model reads English only; a record in another language also gets a
vector from the multilingual model (see :mod:`precedents.recall.multilingual`).
They live in their own table, keyed like the chunks, because most stores have
none at all: an English-only store holds an empty table and pays nothing, and
the chunk table's schema (one vector of the default model's width) stays as it
is. The rows of a file are replaced together with its chunks (same batch, same
writer) and removed with them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

# The table's name on disk. It says "second" (the model's first name) and stays so:
# renaming it would hide the vectors of every store written before.
MULTILINGUAL_TABLE = "chunks_second"
# The multilingual model's width (Universal Sentence Encoder multilingual v3).
MULTILINGUAL_DIMENSION = 512


def multilingual_schema(dimension: int = MULTILINGUAL_DIMENSION) -> pa.Schema:
    """One row per chunk that has a multilingual vector."""
    return pa.schema(
        [
            pa.field("chunk_id", pa.string(), nullable=False),
            pa.field("path", pa.string(), nullable=False),
            pa.field("project", pa.string(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dimension)),
        ]
    )


class MultilingualVectors:
    """The multilingual-vector table of one store (written only through :class:`Store`)."""

    def __init__(self, table: Any, in_list: Callable[[str, Iterable[str]], str]) -> None:
        """``table`` is the open LanceDB table; ``in_list`` builds ``column IN (...)``."""
        self._table = table
        self._in_list = in_list

    def count(self) -> int:
        """Rows in the table."""
        return int(self._table.count_rows())

    def replace(
        self,
        paths: Sequence[str],
        rows: Sequence[tuple[str, str, str]],
        vectors: Sequence[NDArray[np.float32]],
    ) -> int:
        """Make ``rows`` ((chunk id, path, project), one vector each) the rows of ``paths``.

        Returns the commits made: none when there is nothing to add and nothing
        to remove, which is every batch of an English-only store.
        """
        commits = 0
        if paths and self.count():
            self._table.delete(self._in_list("path", paths))
            commits += 1
        if rows:
            flat = np.concatenate([np.asarray(v, dtype=np.float32).reshape(-1) for v in vectors])
            data = pa.table(
                {
                    "chunk_id": [r[0] for r in rows],
                    "path": [r[1] for r in rows],
                    "project": [r[2] for r in rows],
                    "vector": pa.FixedSizeListArray.from_arrays(
                        pa.array(flat, type=pa.float32()), MULTILINGUAL_DIMENSION
                    ),
                },
                schema=multilingual_schema(),
            )
            self._table.add(data)
            commits += 1
        return commits

    def delete(self, paths: Sequence[str]) -> int:
        """Remove the rows of ``paths``; returns the commits made."""
        if not paths or not self.count():
            return 0
        self._table.delete(self._in_list("path", paths))
        return 1

    def load(self, projects: Sequence[str]) -> tuple[list[str], NDArray[np.float32]]:
        """Chunk ids and vectors of ``projects`` (empty when the store has none)."""
        if not projects or not self.count():
            return [], np.zeros((0, MULTILINGUAL_DIMENSION), dtype=np.float32)
        query = self._table.search().where(self._in_list("project", projects))
        arrow = query.select(["chunk_id", "vector"]).limit(None).to_arrow()
        vec = arrow.column("vector").combine_chunks()
        matrix = vec.values.to_numpy(zero_copy_only=False).reshape(-1, MULTILINGUAL_DIMENSION)
        ids = [str(c) for c in arrow.column("chunk_id").to_pylist()]
        return ids, np.ascontiguousarray(matrix, dtype=np.float32)

    def table(self) -> Any:
        """The LanceDB table (for compaction and version checkout)."""
        return self._table
