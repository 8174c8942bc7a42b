"""The store's vectors as one plain file, so the daemon never loads LanceDB.

Why: LanceDB and its open tables are ~130 MiB of the daemon's memory (import
77 MiB, four open tables 37 MiB, Arrow read buffers), more than the model. The
daemon only ever needs every chunk's vector and metadata, which it keeps in
numpy anyway (:mod:`precedents.recall.vectors`). So a short-lived child
process (:mod:`precedents.store.export`) reads the store and writes this file;
the daemon reads it with numpy alone and the child's memory goes back to the
system when it exits.

When: the daemon compares :func:`fingerprint` — the newest manifest names of
the chunk tables, read from the folder without LanceDB — with the one of the
file it holds, and exports again when they differ.

Format: an uncompressed ``.npz`` holding the matrix, the multilingual vectors,
the word index (:mod:`precedents.store.lexical`, documents numbered in the order
they first appear in the metadata rows) and one JSON header (format,
fingerprint, model, metadata rows, summary). Never a record's text.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import tempfile
import weakref
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from numpy.typing import NDArray

# 2: the word index; 3: rows carry origin and author (team notes, issue #23);
# 4: conversations carry where their decision passage was said (`decided`, issue #27).
FORMAT = 4
# The export child's exit status when there is no usable index yet (store/export.py).
NO_INDEX = 3
# The tables whose commits change what a question can find (store/schema.py,
# store/multilingual.py name them; literal here so this module never imports pyarrow).
WATCHED_TABLES = ("chunks", "chunks_second")


class SnapshotFileError(Exception):
    """The file is missing, torn or of another format (export it again)."""


@dataclass
class Exported:
    """What the export child read from the store."""

    fingerprint: str
    model: str
    dimension: int
    meta: list[dict[str, Any]]
    matrix: NDArray[np.float32]
    multilingual_ids: list[str] = field(default_factory=list)
    multilingual_vectors: NDArray[np.float32] = field(
        default_factory=lambda: np.zeros((0, 0), dtype=np.float32)
    )
    summary: dict[str, Any] = field(default_factory=dict)
    # precedents.store.lexical.Postings.to_arrays() of the documents, in first-appearance order.
    lexical: dict[str, NDArray[np.generic]] = field(default_factory=dict)
    # Any other arrays of the file, by name (the org snapshot's document vectors).
    extra: dict[str, NDArray[np.generic]] = field(default_factory=dict)
    # The matrix's rows read from the file on demand (read(..., mapped=True)).
    rows: MemberRows | None = None


def fingerprint(index_dir: Path) -> str | None:
    """Which commit of the chunk tables the store is at, from file names alone.

    LanceDB writes one manifest per commit into ``<table>.lance/_versions``;
    the newest name changes with every commit, and a cleanup of old versions
    only changes the count (a harmless extra export). None when there is no
    chunk table yet.
    """
    parts = []
    for table in WATCHED_TABLES:
        try:
            names = os.listdir(index_dir / f"{table}.lance" / "_versions")
        except OSError:
            if table == WATCHED_TABLES[0]:
                return None
            names = []
        manifests = sorted(n for n in names if n.endswith(".manifest"))
        edge = f"{manifests[0]}..{manifests[-1]}" if manifests else "-"
        parts.append(f"{table}:{len(manifests)}:{edge}")
    return " ".join(parts)


def write(path: Path, snap: Exported) -> None:
    """Write ``snap`` to ``path`` atomically (0600): a reader never sees half a file."""
    header = {
        "format": FORMAT,
        "fingerprint": snap.fingerprint,
        "model": snap.model,
        "dimension": snap.dimension,
        "meta": snap.meta,
        # "second": the multilingual model's first name, kept in the file's keys.
        "second_ids": snap.multilingual_ids,
        "summary": snap.summary,
    }
    raw = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    arrays: dict[str, Any] = {
        "header": raw,
        "matrix": np.ascontiguousarray(snap.matrix, dtype=np.float32),
        "second": np.ascontiguousarray(snap.multilingual_vectors, dtype=np.float32),
        **snap.lexical,
        **snap.extra,
    }
    save_npz(path, arrays)


def save_npz(path: Path, arrays: dict[str, Any]) -> None:
    """Write ``arrays`` as an uncompressed ``.npz`` at ``path``, atomically, 0600 (the
    state folder's umask): a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".npz", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            np.savez(out, **arrays)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


_KNOWN = ("header", "matrix", "second")


def read(path: Path, *, mapped: bool = False) -> Exported:
    """The snapshot in ``path``; :class:`SnapshotFileError` when it cannot be used.

    ``mapped``: the matrix is not read. It is memory-mapped where it lies in the file
    (:func:`mapped_member`) and its rows can be read a few at a time
    (:class:`MemberRows`, :attr:`Exported.rows`), both from the file opened once here
    (a file the pull puts in its place meanwhile is another file): the org snapshot's
    140,000 rows are 205 MiB, of which recall/org_ranking.py reads a few hundred
    documents' rows a question."""
    rows: MemberRows | None = None
    try:
        with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as data:
            header = json.loads(bytes(data["header"]).decode("utf-8"))
            if mapped:
                matrix = mapped_member(handle, "matrix")
                rows = MemberRows(handle, "matrix")
            else:
                matrix = np.ascontiguousarray(data["matrix"], dtype=np.float32)
            multilingual = np.ascontiguousarray(data["second"], dtype=np.float32)
            lexical = {k: np.asarray(data[k]) for k in data.files if k.startswith("lex_")}
            extra = {
                k: np.asarray(data[k])
                for k in data.files
                if k not in _KNOWN and not k.startswith("lex_")
            }
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise SnapshotFileError(f"{path}: {exc}") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise SnapshotFileError(f"{path}: not a format-{FORMAT} snapshot")
    try:
        snap = Exported(
            fingerprint=str(header["fingerprint"]),
            model=str(header["model"]),
            dimension=int(header["dimension"]),
            meta=list(header["meta"]),
            matrix=matrix.reshape(-1, int(header["dimension"])),
            multilingual_ids=[str(i) for i in header["second_ids"]],
            multilingual_vectors=multilingual,
            summary=dict(header["summary"]),
            lexical=lexical,
            extra=extra,
            rows=rows,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise SnapshotFileError(f"{path}: bad header ({exc})") from exc
    second = len(snap.multilingual_ids)
    if len(snap.meta) != len(snap.matrix) or second != len(snap.multilingual_vectors):
        raise SnapshotFileError(f"{path}: rows and vectors disagree")
    return snap


def _member_at(handle: BinaryIO, name: str) -> tuple[int, tuple[int, int]]:
    """Where float32 matrix ``name`` of the uncompressed ``.npz`` open in ``handle``
    starts in the file, and its shape (:class:`ValueError` when it is compressed or
    of another type)."""
    handle.seek(0)
    with zipfile.ZipFile(handle) as archive:
        info = archive.getinfo(f"{name}.npy")
    if info.compress_type != zipfile.ZIP_STORED:
        raise ValueError(f"{name} is compressed")
    handle.seek(info.header_offset)
    local = handle.read(30)
    if local[:4] != b"PK\x03\x04":
        raise ValueError(f"{name}: no local header")
    # The local header's own name and extra lengths (not the central directory's).
    skip = int.from_bytes(local[26:28], "little") + int.from_bytes(local[28:30], "little")
    handle.seek(info.header_offset + 30 + skip)
    version = np.lib.format.read_magic(handle)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
    else:
        raise ValueError(f"{name}: .npy format {version}")
    if dtype != np.dtype(np.float32) or fortran or len(shape) != 2:
        raise ValueError(f"{name}: not a float32 matrix")
    return handle.tell(), (int(shape[0]), int(shape[1]))


def mapped_member(handle: BinaryIO, name: str) -> NDArray[np.float32]:
    """Matrix ``name`` of the uncompressed ``.npz`` open in ``handle`` as a read-only
    memory map of the file (:func:`_member_at`). The map lives as long as the array
    does; the file may be replaced meanwhile (its old inode stays until the map goes).
    A read maps whole page-cache folios (up to megabytes each on this project's Linux
    6.18): rows read through the map count in the process's VmRSS, so the ranking
    reads its rows with :class:`MemberRows` instead."""
    offset, shape = _member_at(handle, name)
    if not shape[0] * shape[1]:
        return np.zeros(shape, dtype=np.float32)
    mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    array = np.frombuffer(mapped, dtype=np.float32, count=shape[0] * shape[1], offset=offset)
    return array.reshape(shape)


class MemberRows:
    """Rows of a float32 matrix in an uncompressed ``.npz``, read with ``pread`` into the
    caller's memory: nothing mapped, nothing left resident but the page cache's."""

    def __init__(self, handle: BinaryIO, name: str) -> None:
        """Matrix ``name`` of the file open in ``handle`` (kept open by a copy of its
        descriptor, closed when this object goes)."""
        self._offset, self.shape = _member_at(handle, name)
        self._fd = os.dup(handle.fileno())
        weakref.finalize(self, os.close, self._fd)

    def read(self, starts: NDArray[np.int64], counts: NDArray[np.int64]) -> NDArray[np.float32]:
        """Runs of rows, each ``counts[i]`` rows from row ``starts[i]``, one after another."""
        width = self.shape[1] * 4
        out = np.empty((int(counts.sum()), self.shape[1]), dtype=np.float32)
        view = memoryview(out.data).cast("B")
        at = 0
        for start, count in zip(starts.tolist(), counts.tolist(), strict=True):
            size = count * width
            got = os.preadv(self._fd, [view[at : at + size]], self._offset + start * width)
            if got != size:
                raise OSError(f"short read of rows {start}..{start + count}")
            at += size
        return out
