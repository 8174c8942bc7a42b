"""A pulled version of the org table as the daemon's snapshot file (no Lance in the daemon).

    python -m precedents.org.snapshot TABLE_DIR VERSION OUT_FILE

The pull (:mod:`precedents.org.pull`) mirrors the served version's files into
``<state>/org/`` and runs this in a child, like the local store's export
(:mod:`precedents.store.export`): the daemon then reads one ``.npz`` with
numpy, and the child's memory goes back to the system.

Each row's ``path`` becomes :func:`org_path` (``org://<repository>/<path>``): a
document's identity everywhere downstream (muting, `why`, sessions), never a
path on this machine; ``repo`` keeps the repository's name. No multilingual
vectors: the org build embeds with the profile's model alone. No word index
either: recall weighs words only for conversations, which the org index never
holds (it would add 10.8 MiB to the 70 MiB file of 30,000 records,
docs/org.md).

Rows are written document by document (a document's chunks next to each other,
in chunk order), the document's fields on its first row alone (a later chunk's
row is :data:`LATER_FIELDS`: 140,000 rows of 30,000 documents would
otherwise repeat names and descriptions into a 121 MiB header, parsed whole by
the daemon), and :data:`ORG_DOCS` holds one vector per document
(:func:`document_vectors`): the daemon ranks those first and reads the chunk
vectors of the best documents only (:class:`precedents.recall.org_ranking.OrgSnapshot`).

The daemon imports this module for its names alone (:mod:`precedents.recall.org`):
pyarrow and Lance are imported by :func:`export_org`, in the child.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from precedents.inert import shown_repo

ORG_SCHEME: Final = "org://"
# In Settings.org_dir: the file the pull writes and the daemon reads.
ORG_SNAPSHOT: Final = "snapshot.npz"
ORG_STATUS: Final = "status.json"
ORG_COLUMNS: Final = ("mark", "successors", "url")
# What a document's later chunk's row holds: which document and chunk (all the daemon
# reads of it, recall/org_columns.py ``Packed``), and the repository, name and mark a
# reader of the file lists rows by; the rest is on the document's first row alone.
LATER_FIELDS: Final = ("path", "chunk_index", "repo", "name", "mark")
# The snapshot file's array of document vectors, one row per document in row order.
ORG_DOCS: Final = "org_docs"


def org_path(repo: str, relpath: str) -> str:
    """A record's identity in the daemon: its repository (as its label shows it, so the
    path cannot carry a mark of ours either) and its path there."""
    return f"{ORG_SCHEME}{shown_repo(repo)}/{relpath}"


def export_org(table: str | Path, version: int, out: Path, *, model: str, dimension: int) -> int:
    """Write version ``version`` of the org table at ``table`` to ``out``; the row count."""
    import lance

    from precedents.store.schema import META_COLUMNS, rows_and_matrix
    from precedents.store.snapshot_file import Exported, write

    dataset = lance.dataset(str(table), version=version)
    names = set(dataset.schema.names)
    columns = [c for c in (*META_COLUMNS, *ORG_COLUMNS) if c in names]
    read = dataset.to_table(columns=[*columns, "vector"])
    meta, matrix = rows_and_matrix(read, dimension)
    del read
    first: dict[str, int] = {}
    for row in meta:
        row["repo"] = str(row["project"])
        row["path"] = row["doc_id"] = org_path(row["repo"], str(row["path"]))
        first.setdefault(row["path"], len(first))
    summary = _summary(meta, version)
    # Document by document, each in chunk order (see the module docstring).
    order = sorted(
        range(len(meta)),
        key=lambda i: (first[meta[i]["path"]], int(meta[i].get("chunk_index") or 0)),
    )
    rows: list[dict[str, Any]] = []
    starts: list[int] = []
    for i in order:
        row = meta[i]
        if starts and rows[starts[-1]]["path"] == row["path"]:
            row = {k: row.get(k) for k in LATER_FIELDS}
        else:
            starts.append(len(rows))
        rows.append(row)
    matrix = np.ascontiguousarray(matrix[np.asarray(order, dtype=np.int64)], dtype=np.float32)
    starts_arr = np.asarray(starts, dtype=np.int64)
    write(
        out,
        Exported(
            fingerprint=f"org:{version}",
            model=model,
            dimension=dimension,
            meta=rows,
            matrix=matrix,
            summary=summary,
            extra={ORG_DOCS: document_vectors(matrix, starts_arr)},
        ),
    )
    return len(rows)


def document_vectors(matrix: NDArray[np.float32], starts: NDArray[np.int64]) -> NDArray[np.float32]:
    """One vector per document: the normalised mean of its chunk vectors (``matrix``'s
    rows, each document's contiguous from its entry in ``starts``). A question ranks
    documents by these first (recall/org_ranking.py); the mean keeps what every
    chunk says, where the first chunk alone would lose an ADR's later sections."""
    if not len(starts):
        return np.zeros((0, matrix.shape[1]), dtype=np.float32)
    sums = np.add.reduceat(np.asarray(matrix, dtype=np.float32), starts, axis=0)
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(sums / norms, dtype=np.float32)


def _summary(meta: list[dict[str, Any]], version: int) -> dict[str, Any]:
    documents = [m for m in meta if m.get("chunk_index") == 0]
    return {
        "org_version": version,
        "chunks": len(meta),
        "documents": len(documents),
        "repos": len({m["repo"] for m in documents}),
    }


def main(argv: list[str] | None = None) -> int:
    """The child's entry point: 0 written (stdout: rows and seconds), 1 failure (one line)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 5:
        print(
            "usage: python -m precedents.org.snapshot TABLE VERSION OUT MODEL DIMENSION",
            file=sys.stderr,
        )
        return 2
    started = time.perf_counter()
    try:
        rows = export_org(
            args[0], int(args[1]), Path(args[2]), model=args[3], dimension=int(args[4])
        )
    except Exception as exc:  # lance's own, OSError: one line for the caller's log
        print(f"org export failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(f"{rows} {time.perf_counter() - started:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
