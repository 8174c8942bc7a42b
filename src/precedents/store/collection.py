"""The one object that owns the LanceDB store: schema, content-hash dedup, search.

Design notes (measured facts in SPEC §3):
- A changed file's rows are replaced by one ``merge_insert`` keyed on chunk id
  with ``when_not_matched_by_source_delete`` scoped to that file's path: one
  atomic commit, so a reader never sees the file missing.
- Writes are batched (~1,024 rows a commit): layout decides flat-scan speed.
- Every commit is a version; :meth:`Store.maybe_compact` compacts after a number
  of commits, keeping a margin of minutes so a reader refreshing its view never
  meets a deleted version.
- The model id and dimension are recorded in the meta table; opening a store
  built with another model raises :class:`ModelMismatch` (callers then rebuild:
  a mixed table is never allowed).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from precedents.config import ensure_private_dir
from precedents.errors import ModelMismatch, StoreError
from precedents.kinds import Kind
from precedents.store.failures import LANCE_ERRORS as _LANCE_ERRORS
from precedents.store.failures import damaged, failed
from precedents.store.multilingual import (
    MULTILINGUAL_TABLE,
    MultilingualVectors,
    multilingual_schema,
)
from precedents.store.schema import (
    ADDED_COLUMNS,
    CHUNKS,
    FILES,
    FILES_SCHEMA,
    META,
    META_SCHEMA,
    RULE_COLUMNS,
    RULE_ROWS,
    DocumentRecord,
    FileRecord,
    chunks_schema,
    count_files,
    present,
    present_columns,
    rows_and_matrix,
    scope_rows,
)
from precedents.store.session import session
from precedents.store.summary import DOCUMENT_COLUMNS, DOCUMENT_ROWS

log = logging.getLogger("precedents.store")

WRITE_BATCH_ROWS = 1024
COMPACT_EVERY_COMMITS = 50
CLEANUP_MARGIN = timedelta(minutes=10)

T = TypeVar("T")


def _translated(fn: Callable[..., T]) -> Callable[..., T]:
    """LanceDB/Arrow failures of a store method become one :class:`StoreError`.

    A damaged folder (a truncated or overwritten data file) surfaces as
    RuntimeError/OSError deep in lance; callers only need to know the index is
    unusable and can be rebuilt from the sources.
    """

    @functools.wraps(fn)
    def wrapper(self: Store, *args: Any, **kwargs: Any) -> T:
        try:
            return fn(self, *args, **kwargs)
        except StoreError:
            raise
        except _LANCE_ERRORS as exc:
            raise damaged(self.path, exc) from exc

    return wrapper


def _sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _in_list(column: str, values: Iterable[str]) -> str:
    vals = sorted(set(values))
    return f"{column} IN ({', '.join(_sql_str(v) for v in vals)})" if vals else "false"


class Store:
    """The chunk, file and meta tables of one LanceDB folder."""

    def __init__(
        self,
        path: Path,
        model_id: str,
        dimension: int,
        *,
        reader: bool = False,
        create: bool = True,
    ) -> None:
        """Open (or create) the store at ``path`` for vectors of ``model_id``/``dimension``.

        ``reader=True`` makes every query see other processes' commits (the
        daemon reads while the watcher writes).
        """
        import lancedb

        self.path = path
        self.model_id = model_id
        self.dimension = dimension
        self._commits = 0
        if not create and not path.exists():
            raise StoreError(f"no index at {path}; run `precedents reindex` first")
        ensure_private_dir(path)
        interval = timedelta(0) if reader else None
        try:
            self._db = lancedb.connect(path, read_consistency_interval=interval, session=session())
            self._chunks = self._open_or_create(CHUNKS, chunks_schema(dimension))
            self._files = self._open_or_create(FILES, FILES_SCHEMA)
            self._meta = self._open_or_create(META, META_SCHEMA)
            self.multilingual = MultilingualVectors(
                self._open_or_create(MULTILINGUAL_TABLE, multilingual_schema()), _in_list
            )
            if not reader:
                self._add_columns()
        except _LANCE_ERRORS as exc:
            raise failed(path, "opening the index", exc) from exc
        self._check_model()

    def _add_columns(self) -> None:
        """Give a chunk table built before a column existed that column, empty: the
        rows are filled in when their files are read again (indexer.CHUNKER_VERSION)."""
        have = set(self._chunks.schema.names)
        missing = {c: "CAST(NULL AS STRING)" for c in ADDED_COLUMNS if c not in have}
        if missing:
            log.info("adding column(s) %s to the chunk table", ", ".join(missing))
            self._chunks.add_columns(missing)

    # -- opening ---------------------------------------------------------------

    def _open_or_create(self, name: str, schema: pa.Schema) -> Any:
        if name in self._table_names():
            return self._db.open_table(name)
        return self._db.create_table(name, schema=schema, exist_ok=True)

    def _table_names(self) -> list[str]:
        result = self._db.list_tables()
        names = getattr(result, "tables", result)
        return [str(n) for n in names]

    def _check_model(self) -> None:
        meta = self.meta()
        stored_model, stored_dim = meta.get("model"), meta.get("dimension")
        if stored_model is None:
            self.set_meta({"model": self.model_id, "dimension": str(self.dimension)})
            return
        if stored_model != self.model_id or stored_dim != str(self.dimension):
            raise ModelMismatch(
                f"the index was built with {stored_model} ({stored_dim}d), not "
                f"{self.model_id} ({self.dimension}d); run `precedents reindex --full`"
            )

    @staticmethod
    def exists(path: Path) -> bool:
        """Whether ``path`` holds a store (its meta table), without importing LanceDB."""
        return (path / f"{META}.lance").exists()

    @classmethod
    def stored_model(cls, path: Path) -> tuple[str, int] | None:
        """The (model id, dimension) an existing store was built with, or None."""
        import lancedb

        if not cls.exists(path):
            return None
        try:
            db = lancedb.connect(path)
            tbl = db.open_table(META)
            rows = {r["key"]: r["value"] for r in tbl.to_arrow().to_pylist()}
        except _LANCE_ERRORS as exc:
            raise damaged(path, exc) from exc
        if "model" not in rows:
            return None
        return rows["model"], int(rows.get("dimension") or 0)

    @staticmethod
    def drop(path: Path) -> None:
        """Delete the whole store folder (it is derived data: a reindex rebuilds it)."""
        import shutil

        if path.exists():
            shutil.rmtree(path)

    # -- meta ------------------------------------------------------------------

    @_translated
    def meta(self) -> dict[str, str]:
        """Key/value facts recorded with the store (model, dimension, last index time...)."""
        rows = self._meta.to_arrow().to_pylist()
        return {str(r["key"]): str(r["value"]) for r in rows}

    @_translated
    def set_meta(self, values: dict[str, str]) -> None:
        """Record ``values`` in the meta table (one commit)."""
        data = pa.table(
            {"key": list(values), "value": [values[k] for k in values]}, schema=META_SCHEMA
        )
        (
            self._meta.merge_insert("key")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(data)
        )

    # -- files -----------------------------------------------------------------

    @_translated
    def files(self) -> dict[str, FileRecord]:
        """Every indexed file by path."""
        rows = self._files.to_arrow().to_pylist()
        return {r["path"]: FileRecord(**r) for r in rows}

    @_translated
    def file_hash(self, path: str) -> str | None:
        """The sha256 a file had when it was last indexed, or None."""
        rows = self._files.search().where(f"path = {_sql_str(path)}").limit(1).to_list()
        return str(rows[0]["sha256"]) if rows else None

    # -- writing ---------------------------------------------------------------

    @_translated
    def replace_documents(
        self,
        items: Sequence[
            tuple[FileRecord, DocumentRecord | None, Sequence[str], NDArray[np.float32]]
        ],
        multilingual: Mapping[str, NDArray[np.float32]] | None = None,
    ) -> None:
        """Replace the rows of each file with its new chunks, in batched atomic commits.

        Each item is (file row, document, chunk texts, vectors). A file with no
        document (an automated session, an empty note) keeps only its file row,
        so an unchanged file is recognised by its hash next time.
        ``multilingual`` maps a file's path to its chunks' multilingual vectors, for the files
        not written in English (:mod:`precedents.store.multilingual`).
        """
        multilingual = multilingual or {}
        batch: list[
            tuple[FileRecord, DocumentRecord | None, Sequence[str], NDArray[np.float32]]
        ] = []
        rows = 0
        for item in items:
            batch.append(item)
            rows += len(item[2])
            if rows >= WRITE_BATCH_ROWS:
                self._write_batch(batch, multilingual)
                batch, rows = [], 0
        if batch:
            self._write_batch(batch, multilingual)

    def _write_batch(
        self,
        batch: Sequence[
            tuple[FileRecord, DocumentRecord | None, Sequence[str], NDArray[np.float32]]
        ],
        multilingual: Mapping[str, NDArray[np.float32]],
    ) -> None:
        columns: dict[str, list[Any]] = {f.name: [] for f in chunks_schema(self.dimension)}
        vectors: list[NDArray[np.float32]] = []
        for file, doc, texts, vecs in batch:
            if doc is None or not texts:
                continue
            if vecs.shape != (len(texts), self.dimension):
                raise StoreError(f"{file.path}: {vecs.shape} vectors for {len(texts)} chunks")
            for i, text in enumerate(texts):
                columns["chunk_id"].append(f"{doc.doc_id}#{i}")
                columns["doc_id"].append(doc.doc_id)
                columns["kind"].append(doc.kind)
                columns["project"].append(doc.project)
                columns["path"].append(doc.path)
                columns["name"].append(doc.name)
                columns["description"].append(doc.description)
                columns["date"].append(doc.date)
                columns["adr_id"].append(doc.adr_id)
                columns["chunk_index"].append(i)
                columns["text"].append(text)
                columns["source_hash"].append(file.sha256)
                columns["scope"].append(doc.scope)
                columns["origin"].append(doc.origin)
                columns["author"].append(doc.author)
                columns["decided"].append(doc.decided)
            vectors.append(vecs)
        schema = chunks_schema(self.dimension)
        flat = np.concatenate(vectors).reshape(-1) if vectors else np.zeros(0, dtype=np.float32)
        columns["vector"] = pa.FixedSizeListArray.from_arrays(
            pa.array(flat, type=pa.float32()), self.dimension
        )
        data = pa.table(columns, schema=schema)
        paths = [file.path for file, *_ in batch]
        try:
            (
                self._chunks.merge_insert("chunk_id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .when_not_matched_by_source_delete(_in_list("path", paths))
                .execute(data)
            )
            # Before the file rows: a crash in between leaves chunks without a file
            # row, which repair() removes and the next pass writes again.
            self._commits += self.multilingual.replace(
                paths, *_multilingual_rows(batch, multilingual)
            )
            self._upsert_files([file for file, *_ in batch])
        except _LANCE_ERRORS as exc:
            raise failed(self.path, "writing to the index", exc) from exc
        self._commits += 2

    def _upsert_files(self, files: Sequence[FileRecord]) -> None:
        data = pa.table(
            {f.name: [getattr(r, f.name) for r in files] for f in FILES_SCHEMA}, schema=FILES_SCHEMA
        )
        (
            self._files.merge_insert("path")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(data)
        )

    @_translated
    def delete_files(self, paths: Iterable[str]) -> int:
        """Remove every row of the given source files; returns how many files were known."""
        paths = sorted(set(paths))
        if not paths:
            return 0
        known = [p for p in paths if p in self.files()]
        where = _in_list("path", paths)
        try:
            self._chunks.delete(where)
            self._commits += self.multilingual.delete(paths)
            self._files.delete(where)
        except _LANCE_ERRORS as exc:
            raise failed(self.path, "deleting from the index", exc) from exc
        self._commits += 2
        return len(known)

    # -- maintenance -----------------------------------------------------------

    @_translated
    def check(self) -> int:
        """Read every file row and every chunk id: raises :class:`StoreError` if damaged.

        Cheap (one narrow column) next to an embedding pass, and it catches the
        data files a crash or a disk error left unreadable.
        """
        for attempt in range(2):
            try:
                self._files.to_arrow()
                chunks = self._chunks.search().select(["chunk_id"]).limit(None).to_arrow()
                return int(chunks.num_rows)
            except _LANCE_ERRORS:
                if attempt:
                    raise
                # Another process may have just compacted: a fresh view, then judge.
                self.refresh()
        return 0

    @_translated
    def repair(self) -> int:
        """Drop what a crash left half-written; returns how many files it touched.

        A file is written as two commits (its chunk rows, then its file row),
        and deleted as two. Cut between them, the store held chunks with no
        file row — a deleted note injected for good — or a file row whose
        chunks are gone. Both kinds are removed, so the next pass indexes the
        file again if it still exists. Reads two narrow columns, not the text.
        """
        files = self.files()
        table = self._chunks.search().select(["path", "source_hash"]).limit(None).to_arrow()
        hashes: dict[str, set[str]] = {}
        for path, digest in zip(
            table.column("path").to_pylist(), table.column("source_hash").to_pylist(), strict=True
        ):
            hashes.setdefault(path, set()).add(digest)
        orphans = {p for p, h in hashes.items() if p not in files or h != {files[p].sha256}}
        hollow = {p for p, f in files.items() if f.chunks > 0 and p not in hashes}
        broken = sorted(orphans | hollow)
        if broken:
            log.warning("repairing %d half-written file(s) in the index", len(broken))
            self.delete_files(broken)
        return len(broken)

    def maybe_compact(self, force: bool = False) -> bool:
        """Compact and clean old versions after many commits (or when forced)."""
        if not force and self._commits < COMPACT_EVERY_COMMITS:
            return False
        for tbl in (self._chunks, self._files, self._meta, self.multilingual.table()):
            try:
                tbl.optimize(cleanup_older_than=CLEANUP_MARGIN)
            except (OSError, ValueError, RuntimeError) as exc:
                log.warning("compaction of %s failed: %s", tbl.name, exc)
        self._commits = 0
        return True

    @_translated
    def version(self) -> int:
        """The chunk table's version: it changes with every commit (readers reload on change)."""
        return int(self._chunks.version)

    def refresh(self) -> None:
        """See the latest commits of other processes (after a 'Not found' error)."""
        for tbl in (self._chunks, self._files, self._meta, self.multilingual.table()):
            tbl.checkout_latest()

    # -- reading ---------------------------------------------------------------

    @_translated
    def count(self, kind: Kind | None = None) -> int:
        """Chunk rows, of one kind or all."""
        return int(self._chunks.count_rows(f"kind = {_sql_str(kind)}" if kind else None))

    @_translated
    def counts(self) -> dict[tuple[str, str], dict[str, int]]:
        """Documents and chunks per (kind, project)."""
        return count_files(self._files.to_arrow())

    def size_bytes(self) -> int:
        """Bytes on disk, every version included."""
        return sum(p.stat().st_size for p in self.path.rglob("*") if p.is_file())

    @_translated
    def all_vectors(
        self, projects: Sequence[str], *, text: bool = False
    ) -> tuple[list[dict[str, Any]], NDArray[np.float32]]:
        """Metadata rows and the vector matrix of the given projects (for in-memory search);
        with ``text``, each row also holds its chunk's text (for the word index)."""
        cols = present_columns(self._chunks.schema.names) + (["text"] if text else [])
        tbl = self._chunks.search().where(_in_list("project", projects)).select(cols)
        return rows_and_matrix(tbl.limit(None).to_arrow(), self.dimension)

    @_translated
    def rule_scopes(self) -> list[tuple[str, str, str]]:
        """(path, project, scope JSON) of every rule document (`status` counts formats)."""
        if "scope" not in self._chunks.schema.names:
            return []
        tbl = self._chunks.search().where(RULE_ROWS).select(RULE_COLUMNS).limit(None)
        return scope_rows(tbl.to_arrow().to_pylist())

    @_translated
    def document_fields(self) -> list[dict[str, Any]]:
        """One row per document: the fields `status` reads for suspect records."""
        cols = present(DOCUMENT_COLUMNS, self._chunks.schema.names)
        tbl = self._chunks.search().where(DOCUMENT_ROWS).select(cols).limit(None)
        return list(tbl.to_arrow().to_pylist())

    @_translated
    def multilingual_vectors(
        self, projects: Sequence[str]
    ) -> tuple[list[str], NDArray[np.float32]]:
        """Chunk ids and multilingual vectors of ``projects`` (see :mod:`.multilingual`)."""
        return self.multilingual.load(projects)

    def stamp(self, **values: str) -> None:
        """Record facts such as the last index time in the meta table."""
        self.set_meta({k: v for k, v in values.items()})


def _multilingual_rows(
    batch: Sequence[tuple[FileRecord, DocumentRecord | None, Sequence[str], NDArray[np.float32]]],
    multilingual: Mapping[str, NDArray[np.float32]],
) -> tuple[list[tuple[str, str, str]], list[NDArray[np.float32]]]:
    """The multilingual rows of a batch: (chunk id, path, project) and one vector each."""
    rows: list[tuple[str, str, str]] = []
    vectors: list[NDArray[np.float32]] = []
    for _file, doc, texts, _ in batch:
        vecs = multilingual.get(doc.path) if doc is not None else None
        if doc is None or vecs is None or len(vecs) != len(texts):
            continue
        rows += [(f"{doc.doc_id}#{i}", doc.path, doc.project) for i in range(len(texts))]
        vectors.append(vecs)
    return rows, vectors


def now() -> float:
    """Wall-clock seconds, for ``indexed_at``."""
    return time.time()
