"""Export the store's vectors to a snapshot file, in a child process of the daemon.

    python -m precedents.store.export INDEX_DIR OUT_FILE

Exit status: 0 written (stdout: the seconds it took); 3 no usable index yet
(nothing written); 1 failure, with one line on stderr. The child reads the
model id from the store itself, so the daemon can start it before its own
model has loaded; the daemon then compares the two. Why a child:
:mod:`precedents.store.snapshot_file`.

It reads the tables with ``lance`` (:mod:`.tables`), not ``lancedb``: a third
of the import time, which keeps a saved note searchable within the spec's 2 s.
Having read every table, it also saves the summary `status` answers from
(:mod:`.health`).
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path
from typing import Any

from precedents.store.health import save as save_summary
from precedents.store.health import tree_stamp
from precedents.store.lexical import Postings, TermCache, document_texts
from precedents.store.schema import META
from precedents.store.snapshot_file import NO_INDEX, Exported, fingerprint, write
from precedents.store.summary import summarize
from precedents.store.tables import TableReader

# Beside the snapshot file: each document's term counts by content hash.
TERM_CACHE = "terms.npz"


def word_index(meta: list[dict[str, Any]], texts: list[str], cache_file: Path) -> Postings:
    """The word index of the documents in ``meta`` (first-appearance order), counting
    only the documents whose content changed since the last export (:class:`TermCache`)."""
    cache = TermCache.load(cache_file)
    digests = {m["path"]: str(m.get("source_hash") or "") for m in meta}
    paths, documents = document_texts([m["path"] for m in meta], texts)
    counted = [
        cache.counts(TermCache.key(path, digests[path]), chunks)
        for path, chunks in zip(paths, documents, strict=True)
    ]
    with contextlib.suppress(OSError):  # the next export counts again: slower, never wrong
        cache.save(cache_file)
    return Postings.assemble(counted)


def export(index_dir: Path, out: Path) -> bool:
    """Write every chunk of the store at ``index_dir`` to ``out``; False when there is
    no usable index yet (no store, or no model recorded in it)."""
    # Taken before reading: a commit landing during the export changes the
    # fingerprint again, so the daemon exports once more instead of missing it.
    stamp = fingerprint(index_dir)
    tree = tree_stamp(index_dir)
    if stamp is None or not (index_dir / f"{META}.lance").exists():
        return False
    reader = TableReader(index_dir)
    facts = reader.meta()
    if "model" not in facts:
        return False
    dimension = int(facts.get("dimension") or 0)
    meta, matrix, texts = reader.vectors(dimension)
    ids, vectors = reader.multilingual_vectors()
    words = word_index(meta, texts, out.with_name(TERM_CACHE))
    summary = summarize(reader)
    write(
        out,
        Exported(
            fingerprint=stamp,
            model=facts["model"],
            dimension=dimension,
            meta=meta,
            matrix=matrix,
            multilingual_ids=ids,
            multilingual_vectors=vectors,
            summary=summary,
            lexical=dict(words.to_arrays()),
        ),
    )
    if tree is not None:  # every table was read: `status` may answer from this summary
        save_summary(index_dir, out.parent, tree[0], summary)
    return True


def main(argv: list[str] | None = None) -> int:
    """The child's entry point (see the module docstring for the exit statuses)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m precedents.store.export INDEX_DIR OUT_FILE", file=sys.stderr)
        return 2
    started = time.perf_counter()
    try:
        if not export(Path(args[0]), Path(args[1])):
            return NO_INDEX
        print(f"{time.perf_counter() - started:.3f}")
        return 0
    except Exception as exc:  # OSError, lance's own: one line for the daemon's log
        print(f"export failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
