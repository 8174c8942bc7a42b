"""A big pull searchable by its heads first (issue #28: 5,000 team notes in one pull).

Embedding is what a pull of thousands of notes waits on: all-MiniLM-L6-v2 embeds
~40 full chunks a second on 2 cores (a note of 100-400 words is 3.5 chunks: 7
minutes for 5,000 notes on a quiet machine, 15 under load), and before this every
note of the pull waited for the ones sorted before it.

So a burst of many files (more than :data:`HEADS_FROM` in a pass of the indexer,
more than 64 in one of the watcher's bursts: watcher/batches.py) is indexed in two
passes. The first gives each new or changed note, rule and ADR one short vector —
its *head*, the first :data:`HEAD_CHARS` characters of its first chunk: the name,
the description, what a note is found by — stored as its only chunk under a
provisional hash (:data:`PROVISIONAL` + the file's sha256). A head costs a fifth of
a full chunk (~35 word pieces, not ~170: 307 heads a second against 69 chunks on 2
quiet cores) and a note needs one instead of 3.5, so every note of the pull is
searchable, by what it is about, in a small part of the time. The second pass is
the ordinary one: the provisional hash differs from the file's, so each such file
is indexed in full (reusing what the first pass read: :class:`Headed`) and its head
row replaced. A watcher stopped between the passes does the second at its next
start (the hashes still differ), and a file already holding its head is not headed
again.

Conversations are not headed: they are indexed newest first after the documents
(``first_things_first``), and a chat's head is not what it is found by.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

import numpy as np
from numpy.typing import NDArray

from precedents.ingest.report import IndexReport
from precedents.store.rows import DocumentRecord, FileRecord

if TYPE_CHECKING:
    from precedents.ingest.sources import Problem, SourceFile
    from precedents.store import Store

# A burst of more files than this is headed first: the watcher applies a pull in
# groups of this many (watcher/batches.py), so a group is never headed on its own.
HEADS_FROM = 256
# Name, description (most of it) and maybe the start of the body: ~35 word pieces. On
# 400 of bench/big_pull.py's notes (2 cores, quiet): 307 heads/s, the note its own query finds first
# for 91.7%; 256 characters: 210/s and 94.5%; 128: 377/s and 86.8%.
HEAD_CHARS = 160
PROVISIONAL = "head:"
# Heads embedded and committed together: one commit, and one new snapshot for the
# daemon, per ~2 s of embedding on 2 cores.
HEAD_BATCH = 256
# Documents kept between the passes (a few KB each): a bigger pull reads the rest twice.
HEADED_KEPT = 20_000


@dataclass(frozen=True)
class Headed:
    """A document the heads pass read, masked and chunked, for the full pass to reuse."""

    digest: str
    doc: DocumentRecord
    chunks: list[str]
    problems: list[Problem]


class Prepared(Protocol):
    @property
    def file(self) -> FileRecord: ...
    @property
    def doc(self) -> DocumentRecord | None: ...
    @property
    def chunks(self) -> list[str]: ...


class Indexer(Protocol):
    """What the heads pass needs of :class:`precedents.ingest.indexer.Indexer` (named
    here, not imported: the indexer imports this module)."""

    headed: dict[str, Headed]

    @property
    def store(self) -> Store: ...

    def prepare(
        self, src: SourceFile, known: dict[str, FileRecord], report: IndexReport
    ) -> Prepared | None: ...

    def embed(self, texts: list[str]) -> NDArray[np.float32]: ...


def provisional(record: FileRecord | None) -> bool:
    """Whether a stored file row holds only the head of its file (a second pass is due)."""
    return record is not None and record.sha256.startswith(PROVISIONAL)


def index_heads(
    indexer: Indexer,
    files: Sequence[SourceFile],
    known: dict[str, FileRecord],
    stop: Callable[[], None] | None = None,
) -> int:
    """Store a head vector for each new or changed document of ``files``; returns how many.

    ``known`` (path -> stored file row) is updated with each head's row, so a full
    pass given it next indexes those files again. ``stop`` is called between batches
    (the watcher raises from it to stop). Problems are not reported here: each
    document read is kept in ``indexer.headed`` with its problems, and the full pass
    that follows takes it from there (reporting them once) instead of reading it again.
    """
    pending: list[tuple[FileRecord, DocumentRecord, str]] = []
    headed = 0
    for src in files:
        if src.kind == "conversation":
            continue
        one = IndexReport()
        prepared = indexer.prepare(src, known, one)
        if prepared is None or prepared.doc is None or not prepared.chunks:
            continue
        digest = prepared.file.sha256
        if len(indexer.headed) < HEADED_KEPT:
            kept = Headed(digest, prepared.doc, prepared.chunks, one.problems)
            indexer.headed[prepared.file.path] = kept
        old = known.get(prepared.file.path)
        if old is not None and old.sha256 == PROVISIONAL + digest:
            continue  # headed by an earlier pass that was stopped before its full one
        file = replace(prepared.file, sha256=PROVISIONAL + digest, chunks=1)
        pending.append((file, prepared.doc, prepared.chunks[0][:HEAD_CHARS]))
        if len(pending) >= HEAD_BATCH:
            headed += _write(indexer, pending, known)
            pending = []
            if stop is not None:
                stop()
    return headed + _write(indexer, pending, known)


def _write(
    indexer: Indexer,
    pending: list[tuple[FileRecord, DocumentRecord, str]],
    known: dict[str, FileRecord],
) -> int:
    if not pending:
        return 0
    vectors = indexer.embed([head for _, _, head in pending])
    indexer.store.replace_documents(
        [(file, doc, [head], vectors[i : i + 1]) for i, (file, doc, head) in enumerate(pending)]
    )
    known.update((file.path, file) for file, _, _ in pending)
    return len(pending)
