"""Export the store's vectors to a snapshot file, in a child process of the daemon.

    python -m precedents.store.export INDEX_DIR OUT_FILE

Exit status: 0 written (stdout: the seconds it took); 3 no usable index yet
(nothing written); 1 failure, with one line on stderr. The child reads the
model id from the store itself, so the daemon can start it before its own
model has loaded; the daemon then compares the two. Why a child:
:mod:`precedents.snapshot_file`.

It reads the tables with ``lance`` (the format library under LanceDB), not
``lancedb``: the same files, read-only, at the latest version, with a third of
the import time (0.55 s against 1.5 s on 2 cores), which keeps a saved note
searchable within the spec's 2 s. The rows and counts are turned into Python
by the same functions :class:`~precedents.store.Store` uses.
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from precedents.lexical import Postings, TermCache, document_texts
from precedents.snapshot_file import NO_INDEX, Exported, fingerprint, write
from precedents.store.schema import (
    CHUNKS,
    FILES,
    META,
    RULE_COLUMNS,
    RULE_ROWS,
    count_files,
    present_columns,
    rows_and_matrix,
    scope_rows,
)
from precedents.store.second import SECOND, SECOND_DIMENSION
from precedents.store.summary import DOCUMENT_COLUMNS, DOCUMENT_ROWS, summarize

# Beside the snapshot file: each document's term counts by content hash.
TERM_CACHE = "terms.npz"


class TableReader:
    """A read-only view of one store's tables at their latest version (no LanceDB)."""

    def __init__(self, index_dir: Path) -> None:
        """Open the tables of ``index_dir`` (the second-vector table may be absent)."""
        import lance

        self.path = index_dir
        self._lance = lance
        self._meta = self._open(META)
        self._documents: list[dict[str, Any]] | None = None

    def _open(self, name: str) -> Any:
        return self._lance.dataset(str(self.path / f"{name}.lance"))

    def meta(self) -> dict[str, str]:
        """The meta table's key/value facts (model, dimension, stamps)."""
        return {str(r["key"]): str(r["value"]) for r in self._meta.to_table().to_pylist()}

    def counts(self) -> dict[tuple[str, str], dict[str, int]]:
        """Files, documents and chunks per (kind, project)."""
        return count_files(self._open(FILES).to_table())

    def size_bytes(self) -> int:
        """Bytes on disk, every version included."""
        return sum(p.stat().st_size for p in self.path.rglob("*") if p.is_file())

    def rule_scopes(self) -> list[tuple[str, str, str]]:
        """(path, project, scope JSON) of every rule document (`status` counts formats)."""
        table = self._open(CHUNKS)
        if "scope" not in table.schema.names:
            return []
        return scope_rows(table.to_table(columns=RULE_COLUMNS, filter=RULE_ROWS).to_pylist())

    def document_fields(self) -> list[dict[str, Any]]:
        """One row per document: the fields `status` reads for suspect records (those of
        :meth:`vectors` when it ran: the export reads the chunk table once)."""
        if self._documents is not None:
            return self._documents
        table = self._open(CHUNKS)
        return list(table.to_table(columns=DOCUMENT_COLUMNS, filter=DOCUMENT_ROWS).to_pylist())

    def vectors(
        self, dimension: int
    ) -> tuple[list[dict[str, Any]], NDArray[np.float32], list[str]]:
        """Every chunk's metadata row, vector and text (one read: the same rows in the
        same order)."""
        table = self._open(CHUNKS)
        read = table.to_table(columns=[*present_columns(table.schema.names), "text"])
        texts = [str(t or "") for t in read.column("text").to_pylist()]
        meta, matrix = rows_and_matrix(read.drop_columns(["text"]), dimension)
        self._documents = [m for m in meta if m.get("chunk_index") == 0]
        return meta, matrix, texts

    def second_vectors(self) -> tuple[list[str], NDArray[np.float32]]:
        """Chunk ids and multilingual vectors (none when the table does not exist)."""
        if not (self.path / f"{SECOND}.lance").exists():
            return [], np.zeros((0, SECOND_DIMENSION), dtype=np.float32)
        tbl = self._open(SECOND).to_table(columns=["chunk_id", "vector"])
        matrix = tbl.column("vector").combine_chunks().values.to_numpy(zero_copy_only=False)
        ids = [str(c) for c in tbl.column("chunk_id").to_pylist()]
        return ids, np.ascontiguousarray(matrix.reshape(-1, SECOND_DIMENSION), dtype=np.float32)


def word_index(meta: list[dict[str, Any]], texts: list[str], cache_file: Path) -> Postings:
    """The word index of the documents in ``meta`` (first-appearance order), counting
    only the documents whose content changed since the last export (:class:`TermCache`)."""
    cache = TermCache.load(cache_file)
    digests = {m["path"]: str(m.get("source_hash") or "") for m in meta}
    paths, documents = document_texts([m["path"] for m in meta], texts)
    counted = [
        cache.counts(TermCache.key(path, digests[path]), chunks)
        for path, chunks in zip(paths, documents, strict=True)
    ]
    with contextlib.suppress(OSError):  # the next export counts again: slower, never wrong
        cache.save(cache_file)
    return Postings.assemble(counted)


def export(index_dir: Path, out: Path) -> bool:
    """Write every chunk of the store at ``index_dir`` to ``out``; False when there is
    no usable index yet (no store, or no model recorded in it)."""
    # Taken before reading: a commit landing during the export changes the
    # fingerprint again, so the daemon exports once more instead of missing it.
    stamp = fingerprint(index_dir)
    if stamp is None or not (index_dir / f"{META}.lance").exists():
        return False
    reader = TableReader(index_dir)
    facts = reader.meta()
    if "model" not in facts:
        return False
    dimension = int(facts.get("dimension") or 0)
    meta, matrix, texts = reader.vectors(dimension)
    ids, vectors = reader.second_vectors()
    words = word_index(meta, texts, out.with_name(TERM_CACHE))
    write(
        out,
        Exported(
            fingerprint=stamp,
            model=facts["model"],
            dimension=dimension,
            meta=meta,
            matrix=matrix,
            second_ids=ids,
            second_vectors=vectors,
            summary=summarize(reader),
            lexical=dict(words.to_arrays()),
        ),
    )
    return True


def main(argv: list[str] | None = None) -> int:
    """The child's entry point (see the module docstring for the exit statuses)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m precedents.store.export INDEX_DIR OUT_FILE", file=sys.stderr)
        return 2
    started = time.perf_counter()
    try:
        if not export(Path(args[0]), Path(args[1])):
            return NO_INDEX
        print(f"{time.perf_counter() - started:.3f}")
        return 0
    except Exception as exc:  # OSError, lance's own: one line for the daemon's log
        print(f"export failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
