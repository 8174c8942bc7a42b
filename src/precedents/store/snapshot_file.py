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
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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

    ``mapped``: the matrix is not read but memory-mapped, read-only, where it lies in
    the file (:func:`mapped_member`): its pages are read when a row is, and are the
    page cache's, not the process's own (the org snapshot's 140,000 rows are 205 MiB;
    recall/org_columns.py reads a few hundred documents' rows a question)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(bytes(data["header"]).decode("utf-8"))
            if mapped:
                matrix = mapped_member(path, "matrix")
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
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise SnapshotFileError(f"{path}: bad header ({exc})") from exc
    rows = len(snap.multilingual_ids)
    if len(snap.meta) != len(snap.matrix) or rows != len(snap.multilingual_vectors):
        raise SnapshotFileError(f"{path}: rows and vectors disagree")
    return snap


def mapped_member(path: Path, name: str) -> NDArray[np.float32]:
    """Array ``name`` of the uncompressed ``.npz`` at ``path`` as a read-only memory map
    of the file (a float32 array; :class:`ValueError` when the member is compressed or
    of another type). The map lives as long as the array does; the file may be
    replaced meanwhile (its old inode stays until the map goes)."""
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(f"{name}.npy")
    if info.compress_type != zipfile.ZIP_STORED:
        raise ValueError(f"{name} is compressed")
    with open(path, "rb") as handle:
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
        offset = handle.tell()
        if dtype != np.dtype(np.float32) or fortran or len(shape) != 2:
            raise ValueError(f"{name}: not a float32 matrix")
        count = int(shape[0]) * int(shape[1])
        if not count:
            return np.zeros(shape, dtype=np.float32)
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    array = np.frombuffer(mapped, dtype=np.float32, count=count, offset=offset)
    return array.reshape(shape)


def release_pages(array: NDArray[np.generic]) -> None:
    """Give back the pages of the memory map under ``array`` (:func:`mapped_member`) that
    this process has read: they leave its resident set (the page cache keeps them; a
    later read maps them again). Nothing for an array that is not a map."""
    base: object = array
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "base", None) if not isinstance(base, memoryview) else base.obj
    if isinstance(base, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        with contextlib.suppress(OSError, ValueError):
            base.madvise(mmap.MADV_DONTNEED)
