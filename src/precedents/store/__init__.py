"""The LanceDB store: schema, upsert/delete by content hash, compaction, opening.

Knows LanceDB and pyarrow, takes vectors as arrays; imports neither the model
nor the daemon. Ranking lives in :mod:`precedents.recall`.
"""

from precedents.store.collection import Store
from precedents.store.opening import (
    LazyStore,
    VectorModel,
    beside,
    open_store,
    recover,
    switch_in,
)
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
    "beside",
    "open_store",
    "recover",
    "switch_in",
]
