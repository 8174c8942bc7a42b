"""The org snapshot's rows as columns, not one dict per row (issue #30's memory goal).

30,000 org records held as the snapshot file's JSON parses them cost the daemon
~75 MiB beside their 44 MiB matrix: a dict per row (~460 bytes), a str object per
field (49-80 bytes besides its characters; two or four bytes a character once one
is past Latin-1), and the parse's freed objects left scattered between the kept
ones, so that ``malloc_trim`` could not give their pages back. Here:

* the file's rows are first packed (:class:`Packed`) into one UTF-8 buffer per
  field, offsets and numpy arrays, and the parsed JSON is dropped *before* any
  object that stays is made, so its memory goes back whole;
* :class:`Documents` then keeps one entry per document: paths as strings (they are
  dictionary keys everywhere), the few values repeated on many rows (kind,
  repository, date, ADR id, mark) as one shared string each, names and
  descriptions in their buffers, read when a record is shown, content hashes as
  one fixed-width bytes array, sorted once for the "same text as the project's
  own" lookup;
* :class:`Rows` gives the ranking code (:class:`~precedents.recall.vectors.VectorSnapshot`)
  the rows it reads as mappings made on demand (:class:`Row`), and
  :class:`~precedents.recall.org_ranking.OrgSnapshot` ranks them and finds a
  document's chunks from the columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, overload

import numpy as np

from precedents.kinds import is_kind
from precedents.store.rows import DocumentRecord

# The project key of every org row in the daemon (recall/org.py files a rule scoped
# to its own repository under ORG_KEY:<repository> in the file scopes instead).
ORG_KEY: Final = "*org*"
# Per document, kept as text: read when a record is shown, or once at load.
TEXT_FIELDS: Final = ("path", "name", "description", "scope", "successors", "url")
# Per document, one shared string per distinct value.
SHARED_FIELDS: Final = ("kind", "repo", "date", "adr_id", "mark")
# What a row answers (Row), in this order; author, decided and scope are never asked
# of an org row (the file scopes read the scope at load).
ROW_KEYS: Final = (
    "doc_id",
    "kind",
    "project",
    "path",
    "name",
    "description",
    "date",
    "adr_id",
    "chunk_index",
    "source_hash",
    "origin",
    "repo",
    "mark",
)


class Strings:
    """A column of strings as one UTF-8 buffer and its end offsets: about a byte a
    character and no Python object per value."""

    __slots__ = ("_blob", "_ends")

    def __init__(self, values: Iterable[str]) -> None:
        """``values`` in order (encoded once, joined)."""
        parts = [v.encode("utf-8", "surrogatepass") for v in values]
        self._ends = np.cumsum(
            np.fromiter((len(p) for p in parts), dtype=np.int64, count=len(parts))
        )
        self._blob = b"".join(parts)

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, i: int) -> str:
        end = int(self._ends[i])
        start = int(self._ends[i - 1]) if i else 0
        return self._blob[start:end].decode("utf-8", "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))

    @property
    def nbytes(self) -> int:
        """What the column holds in memory."""
        return len(self._blob) + int(self._ends.nbytes)


class Packed:
    """The snapshot file's rows packed, so the parsed JSON can be dropped before the
    objects that stay are made (see the module docstring)."""

    def __init__(self, meta: Sequence[Mapping[str, Any]]) -> None:
        """``meta``: the file's rows, each document's chunks under one ``path``."""
        number: dict[str, int] = {}
        firsts: list[Mapping[str, Any]] = []
        self.row_doc = np.empty(len(meta), dtype=np.int32)  # each row's document
        self.chunk = np.empty(len(meta), dtype=np.int32)  # each row's chunk index
        for i, row in enumerate(meta):
            d = number.setdefault(str(row["path"]), len(number))
            if d == len(firsts):
                firsts.append(row)
            self.row_doc[i] = d
            self.chunk[i] = int(row.get("chunk_index") or 0)
        fields = (*TEXT_FIELDS, *SHARED_FIELDS)
        self.text = {f: Strings(str(r.get(f) or "") for r in firsts) for f in fields}
        self.digests = np.array(
            [str(r.get("source_hash") or "").encode("ascii", "replace") for r in firsts],
            dtype=np.bytes_,
        )


class Documents:
    """The org snapshot's documents, one entry each per column (see the module docstring)."""

    def __init__(self, packed: Packed) -> None:
        """Made from ``packed`` once the parsed rows are gone."""
        text = packed.text
        self.paths: list[str] = list(text["path"])
        self.index: dict[str, int] = {p: d for d, p in enumerate(self.paths)}
        shared: dict[str, str] = {}
        columns = [[shared.setdefault(v, v) for v in text[f]] for f in SHARED_FIELDS]
        self.kind, self.repo, self.date, self.adr_id, self.mark = columns
        self.names, self.descriptions = text["name"], text["description"]
        self.row_doc, self.chunk = packed.row_doc, packed.chunk
        # The content hashes once, sorted: the document at each place, each document's place.
        order = np.argsort(packed.digests, kind="stable")
        self._sorted = packed.digests[order]
        self._by_digest = order.astype(np.int32)
        self._place = np.empty(len(order), dtype=np.int32)
        self._place[order] = np.arange(len(order), dtype=np.int32)
        packed.digests = self._sorted[:0]

    def __len__(self) -> int:
        return len(self.paths)

    def digest(self, d: int) -> str:
        """Document ``d``'s content hash."""
        return bytes(self._sorted[self._place[d]]).decode("ascii")

    def with_digests(self, digests: Iterable[str]) -> set[str]:
        """The paths of the documents whose content hash is one of ``digests``."""
        width = self._sorted.dtype.itemsize
        wanted = [d.encode("ascii", "replace") for d in digests if d and len(d) <= width]
        if not wanted or not len(self.paths):
            return set()
        keys = np.array(wanted, dtype=self._sorted.dtype)
        lo = np.searchsorted(self._sorted, keys, side="left")
        hi = np.searchsorted(self._sorted, keys, side="right")
        out: set[str] = set()
        for a, b in zip(lo[lo < hi].tolist(), hi[lo < hi].tolist(), strict=True):
            out.update(self.paths[int(d)] for d in self._by_digest[a:b])
        return out

    def record(self, d: int, *, project: str = ORG_KEY, scope: str = "") -> DocumentRecord:
        """Document ``d`` as every channel shows it."""
        kind = self.kind[d]
        assert is_kind(kind), kind  # the org build writes known kinds only
        return DocumentRecord(
            kind=kind,
            project=project,
            path=self.paths[d],
            name=self.names[d],
            description=self.descriptions[d],
            date=self.date[d],
            adr_id=self.adr_id[d],
            scope=scope,
            origin="org",
            repo=self.repo[d],
            org_mark=self.mark[d],
        )


class Row(Mapping[str, Any]):
    """One org row as the ranking code reads it, made on demand from the columns."""

    __slots__ = ("_docs", "_row")

    def __init__(self, docs: Documents, row: int) -> None:
        """Row ``row`` of the snapshot."""
        self._docs, self._row = docs, row

    def __getitem__(self, key: str) -> Any:
        docs = self._docs
        d = int(docs.row_doc[self._row])
        if key in ("path", "doc_id"):
            return docs.paths[d]
        if key == "project":
            return ORG_KEY
        if key == "origin":
            return "org"
        if key == "chunk_index":
            return int(docs.chunk[self._row])
        if key == "source_hash":
            return docs.digest(d)
        if key == "name":
            return docs.names[d]
        if key == "description":
            return docs.descriptions[d]
        column = _SHARED.get(key)
        if column is None:
            raise KeyError(key)
        return getattr(docs, column)[d]

    def __iter__(self) -> Iterator[str]:
        return iter(ROW_KEYS)

    def __len__(self) -> int:
        return len(ROW_KEYS)


_SHARED = {f: f for f in SHARED_FIELDS}


class Rows(Sequence[Mapping[str, Any]]):
    """Every org row, as :class:`Row` objects made when read."""

    __slots__ = ("_docs",)

    def __init__(self, docs: Documents) -> None:
        """The rows of ``docs``."""
        self._docs = docs

    def __len__(self) -> int:
        return len(self._docs.row_doc)

    @overload
    def __getitem__(self, i: int) -> Mapping[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[Mapping[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> Mapping[str, Any] | Sequence[Mapping[str, Any]]:
        if isinstance(i, slice):
            return [Row(self._docs, r) for r in range(len(self))[i]]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        return Row(self._docs, i % len(self) if i < 0 else i)

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        return (Row(self._docs, r) for r in range(len(self)))
