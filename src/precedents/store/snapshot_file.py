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


def read(path: Path) -> Exported:
    """The snapshot in ``path``; :class:`SnapshotFileError` when it cannot be used."""
    try:
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(bytes(data["header"]).decode("utf-8"))
            matrix = np.ascontiguousarray(data["matrix"], dtype=np.float32)
            multilingual = np.ascontiguousarray(data["second"], dtype=np.float32)
            lexical = {k: np.asarray(data[k]) for k in data.files if k.startswith("lex_")}
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
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise SnapshotFileError(f"{path}: bad header ({exc})") from exc
    rows = len(snap.multilingual_ids)
    if len(snap.meta) != len(snap.matrix) or rows != len(snap.multilingual_vectors):
        raise SnapshotFileError(f"{path}: rows and vectors disagree")
    return snap
