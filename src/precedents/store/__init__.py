"""The LanceDB store: schema, upsert/delete by content hash, search, compaction.

Knows LanceDB and pyarrow, takes vectors as arrays; imports neither the model
nor the daemon.
"""

from precedents.store.collection import Store
from precedents.store.schema import (
    KINDS,
    SHARED_PROJECT,
    DocumentHit,
    DocumentRecord,
    FileRecord,
)

__all__ = ["KINDS", "SHARED_PROJECT", "DocumentHit", "DocumentRecord", "FileRecord", "Store"]
