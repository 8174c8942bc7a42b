"""The LanceDB store: schema, upsert/delete by content hash, compaction, opening.

Knows LanceDB and pyarrow, takes vectors as arrays; imports neither the model
nor the daemon. Ranking lives in :mod:`precedents.recall`.

The row types (:mod:`.rows`) load with the package; the store itself (and so
pyarrow) on first use of ``Store``, ``open_store`` and the rest: the daemon
ranks rows it reads from an export file and never needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from precedents.kinds import KINDS, SHARED_PROJECT
from precedents.lazy import lazy_attributes
from precedents.store.rows import DocumentHit, DocumentRecord, FileRecord

if TYPE_CHECKING:
    from precedents.store.collection import Store
    from precedents.store.opening import (
        LazyStore,
        VectorModel,
        beside,
        open_store,
        recover,
        switch_in,
    )

_LAZY = {
    "Store": "collection",
    "LazyStore": "opening",
    "VectorModel": "opening",
    "beside": "opening",
    "open_store": "opening",
    "recover": "opening",
    "switch_in": "opening",
}


__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "KINDS",
    "SHARED_PROJECT",
    "DocumentHit",
    "DocumentRecord",
    "FileRecord",
    "LazyStore",
    "Store",
    "VectorModel",
    "beside",
    "open_store",
    "recover",
    "switch_in",
]
