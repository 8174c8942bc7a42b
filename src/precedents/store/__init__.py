"""The LanceDB store: schema, upsert/delete by content hash, compaction, opening.

Knows LanceDB and pyarrow, takes vectors as arrays; imports neither the model
nor the daemon. Ranking lives in :mod:`precedents.recall`.
"""

from precedents.store.collection import Store
from precedents.store.opening import LazyStore, VectorModel, open_store
from precedents.store.schema import (
    KINDS,
    SHARED_PROJECT,
    DocumentHit,
    DocumentRecord,
    FileRecord,
)

__all__ = [
    "KINDS",
    "SHARED_PROJECT",
    "DocumentHit",
    "DocumentRecord",
    "FileRecord",
    "LazyStore",
    "Store",
    "VectorModel",
    "open_store",
]
