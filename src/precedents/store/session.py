"""The LanceDB session every store of a process opens its tables in: bounded caches.

LanceDB's caches (manifests, fragment metadata, indexes) default to gigabytes
and keep an entry for every version a writer makes: +26 MiB per ~1,200
commits, measured, and the watcher commits for hours (issue #28: a pull of
5,000 team notes, indexed file by file, took its RSS past 1.2 GB). The tables'
current versions, which are all a store reads, fit in far less.
"""

from __future__ import annotations

import functools
from typing import Any

CACHE_BYTES = 16 << 20


@functools.cache
def session() -> Any:
    """One session per process, its caches bounded (shared by every store it opens)."""
    import lancedb

    return lancedb.Session(
        index_cache_size_bytes=CACHE_BYTES, metadata_cache_size_bytes=CACHE_BYTES
    )
