"""What the store holds and whether it can be read, without LanceDB when nothing changed.

`precedents status` answered in 4–6 s without a daemon (a model-free command
paying for LanceDB's import and a scan), and called a store whose chunk data
files were emptied healthy (issue #21). Here:

- :func:`tree_stamp` digests every file of the index folder (relative path,
  size, mtime) from the folder alone: any commit, compaction, truncation,
  deletion or rewritten manifest changes it.
- A summary is saved with the stamp it was read at (``status.json`` in the
  cache folder) by whoever just read the whole store: the daemon's export
  child, the end of a `reindex`, or `status` itself. While the stamp holds,
  `status` answers from that file, with no LanceDB, no ``lance``, no numpy.
- Otherwise the store is read with ``lance`` (the format library, a tenth of
  LanceDB's import): the summary's tables and one narrow column of each
  chunk table, which touches every data file. A failure is one line,
  :func:`~precedents.store.failures.damaged_line`, naming the fix.

A summary is only ever saved after a read that succeeded, and the stamp is
taken before reading: a store that changes during the read is read again next
time, never trusted.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from precedents.store.failures import LANCE_ERRORS, damaged

if TYPE_CHECKING:
    from precedents.store.tables import TableReader

log = logging.getLogger("precedents.store")

STATUS_FILE = "status.json"
FORMAT = 1
# Table folders `status` reads (store/schema.py, store/multilingual.py name them).
_META = "meta.lance"
_CHUNK_TABLES = ("chunks", "chunks_second")


def tree_stamp(index_dir: Path) -> tuple[str, int] | None:
    """(digest, bytes) of every file under ``index_dir``, or None when it holds no store.

    Reads names and ``stat`` only. Writers never rewrite a data file in place
    (LanceDB adds files and manifests), so an unchanged stamp means an
    unchanged store; damage that rewrites a file changes its size or mtime.
    """
    if not (index_dir / _META).is_dir():
        return None
    entries: list[str] = []
    total = 0
    pending = [index_dir]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(Path(entry.path))
                        continue
                    st = entry.stat(follow_symlinks=False)
                    rel = os.path.relpath(entry.path, index_dir)
                    entries.append(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}")
                    total += st.st_size
        except FileNotFoundError:
            continue  # a compaction removed it while we looked: the digest differs anyway
    digest = hashlib.sha256("\n".join(sorted(entries)).encode("utf-8", "surrogateescape"))
    return digest.hexdigest(), total


def cached(index_dir: Path, cache_dir: Path, stamp: str) -> dict[str, Any] | None:
    """The summary saved for ``index_dir`` at ``stamp``, or None (none, stale, unreadable)."""
    try:
        data = json.loads((cache_dir / STATUS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (
        not isinstance(data, dict)
        or data.get("format") != FORMAT
        or data.get("index_dir") != str(index_dir)
        or data.get("stamp") != stamp
        or not isinstance(data.get("summary"), dict)
    ):
        return None
    return dict(data["summary"])


def save(index_dir: Path, cache_dir: Path, stamp: str, summary: dict[str, Any]) -> None:
    """Record ``summary`` as read at ``stamp`` (atomically; a failure only costs a read)."""
    record = {"format": FORMAT, "index_dir": str(index_dir), "stamp": stamp, "summary": summary}
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".status-", suffix=".json", dir=cache_dir)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(record, out, ensure_ascii=False)
            os.replace(tmp, cache_dir / STATUS_FILE)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        log.info("could not save the status summary: %s", exc)


def summary(index_dir: Path, cache_dir: Path) -> tuple[dict[str, Any] | None, str]:
    """(summary, how it was found) of the store at ``index_dir``: ``"cache"`` or
    ``"store"``; (None, "") when there is no store or no model recorded in it yet.

    Raises :class:`~precedents.errors.StoreError` (one line naming the fix) when it cannot be read.
    """
    found = tree_stamp(index_dir)
    if found is None:
        return None, ""
    stamp, total = found
    hit = cached(index_dir, cache_dir, stamp)
    if hit is not None:
        return {**hit, "store_bytes": total}, "cache"
    read = read_store(index_dir)
    if read is not None:
        save(index_dir, cache_dir, stamp, read)
    return read, "store"


def verify(index_dir: Path, cache_dir: Path) -> None:
    """Raise :class:`~precedents.errors.StoreError` when the store at ``index_dir``
    cannot be read (no store is no error: the caller says `reindex`). Free while
    nothing changed since the last read."""
    summary(index_dir, cache_dir)


def read_store(index_dir: Path) -> dict[str, Any] | None:
    """The store's summary, read with ``lance``, every data file touched; None when no
    model is recorded yet. A commit landing during the read gets one more try."""
    for attempt in range(2):
        before = tree_stamp(index_dir)
        try:
            return _read(index_dir)
        except LANCE_ERRORS as exc:
            if attempt or tree_stamp(index_dir) == before:
                raise damaged(index_dir, exc) from None
            log.info("the index changed while it was read: reading it again")
    return None  # not reached: the second attempt returns or raises


def _read(index_dir: Path) -> dict[str, Any] | None:
    from precedents.store.summary import summarize
    from precedents.store.tables import TableReader

    reader = TableReader(index_dir)
    if "model" not in reader.meta():
        return None
    info = summarize(reader)
    _touch_chunk_tables(reader)
    return info


def _touch_chunk_tables(reader: TableReader) -> None:
    """Read one narrow column of each chunk table: every data file is opened and read,
    so an emptied, missing or overwritten one fails here (the summary reads few rows)."""
    for name in _CHUNK_TABLES:
        if name != _CHUNK_TABLES[0] and not (reader.path / f"{name}.lance").exists():
            continue
        reader.column(name, "chunk_id")
