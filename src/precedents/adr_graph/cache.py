"""The graph cache: keyed by a hash of every ADR file's name and content, never mtimes.

mtimes lie (checkouts, copies, clock skew); content does not. Hashing a folder
of 1,000 records costs a few milliseconds, parsing it a hundred, so every
caller hashes and only a changed folder is parsed again.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from precedents.adr_graph.model import AdrRecord, NonAdr

# Bump when the parser or the rule changes: an old cache must not answer.
# 4: relations read from text; 3: the status-word table; 2: no record text, masked titles
CACHE_VERSION = "adr-graph-5"


@dataclass
class CachedGraph:
    """What is stored: everything a graph is built from (plain data, so it pickles).

    Build one with :meth:`of`, which stamps the current :data:`CACHE_VERSION`.
    """

    version: str
    key: str
    records: list[AdrRecord]
    non_adrs: list[NonAdr]
    warnings: list[str]
    cycles: list[list[str]]

    @classmethod
    def of(
        cls,
        key: str,
        records: Iterable[AdrRecord],
        non_adrs: Iterable[NonAdr],
        warnings: Iterable[str],
        cycles: Iterable[Iterable[str]],
    ) -> CachedGraph:
        """A snapshot of a built graph under ``key``, copied (later edits do not leak in).

        Whole ADR texts are left out: the cache keeps what the graph needs
        (ids, statuses, relations, titles), never a record's body.
        """
        return cls(
            CACHE_VERSION,
            key,
            [replace(r, text="") for r in records],
            list(non_adrs),
            list(warnings),
            [list(c) for c in cycles],
        )


def folder_key(blobs: Mapping[str, bytes | str | None]) -> str:
    """sha256 over every file's relative name and content, in name order."""
    h = hashlib.sha256(CACHE_VERSION.encode())
    for name in sorted(blobs):
        data = blobs[name]
        h.update(name.encode("utf-8", "surrogateescape") + b"\0")
        if data is None:
            h.update(b"\1unreadable\0")
        elif isinstance(data, str):  # refused, for this reason
            h.update(b"\2" + data.encode() + b"\0")
        else:
            h.update(hashlib.sha256(data).digest())
    return h.hexdigest()


def cache_file(cache_dir: Path, folder: Path) -> Path:
    """One cache file per folder (by its absolute path), replaced on each rebuild."""
    digest = hashlib.sha256(str(Path(folder).resolve()).encode()).hexdigest()[:24]
    return Path(cache_dir) / f"{digest}.pickle"


def load(cache_dir: Path, folder: Path, key: str) -> CachedGraph | None:
    """The cached graph when its key matches; None when absent, stale or damaged."""
    path = cache_file(cache_dir, folder)
    try:
        with path.open("rb") as fh:
            data = pickle.load(fh)  # our own 0700 cache folder
    except (
        OSError,
        pickle.UnpicklingError,
        EOFError,
        AttributeError,
        ImportError,
        TypeError,
        ValueError,
        IndexError,
    ):
        return None
    if not isinstance(data, CachedGraph) or data.version != CACHE_VERSION or data.key != key:
        return None
    return data


def store(cache_dir: Path, folder: Path, data: CachedGraph) -> None:
    """Write a built graph atomically; a cache that cannot be written is simply skipped."""
    path = cache_file(cache_dir, folder)
    try:
        # Private, like everything under the state directory (0700 when created here).
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".adr-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(data, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        return
