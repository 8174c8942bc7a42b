"""Indexing throughput: the dev notes, then a synthetic corpus, with the real bundled model.

Prints chunks/s for a cold index (model load excluded and shown apart), the
cost of an unchanged re-run (zero embeddings), and store-only write speed.

    .venv/bin/python bench/index.py [--synthetic-chunks 10000]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
DEV_NOTES = REPO.parent / "shared" / "eval" / "dev" / "notes"

WORDS = [
    "deploy",
    "migration",
    "postgres",
    "index",
    "cache",
    "queue",
    "worker",
    "retry",
    "timeout",
    "token",
    "review",
    "branch",
    "rebase",
    "stash",
    "commit",
    "release",
    "rollback",
    "schema",
    "column",
    "table",
    "lock",
    "vacuum",
    "replica",
    "backup",
    "python",
    "typing",
    "async",
    "await",
    "test",
    "fixture",
    "mock",
    "docker",
    "compose",
    "nginx",
    "port",
    "socket",
    "thread",
    "memory",
    "leak",
    "profile",
    "latency",
    "budget",
    "feature",
    "flag",
    "checkout",
    "payment",
    "invoice",
    "refund",
]


def synthetic_notes(folder: Path, chunks: int, seed: int = 7) -> None:
    """Notes of ~3,300 characters: six chunks each under the 700/100/6 rule."""
    rng = random.Random(seed)
    for i in range(max(1, chunks // 6)):
        title = " ".join(rng.choice(WORDS) for _ in range(5))
        body = " ".join(rng.choice(WORDS) for _ in range(520))
        (folder / f"note-{i:05d}.md").write_text(
            f"---\nname: {title}\ndescription: {title} decision {i}\n---\n{body}\n"
        )


def run(label: str, notes: Path, embedder: object) -> None:
    from precedents.config import load_settings
    from precedents.ingest.indexer import Indexer
    from precedents.ingest.sources import Sources, configured_sources, walk
    from precedents.store import open_store

    settings = load_settings()
    store = open_store(settings.index_dir, embedder, rebuild=True)  # type: ignore[arg-type]
    sources = walk(configured_sources(settings, Sources(notes=[notes], project="/bench")))
    cold = Indexer(settings, store, embedder).sync(sources)  # type: ignore[arg-type]
    warm = Indexer(settings, store, embedder).sync(sources)  # type: ignore[arg-type]
    print(
        f"{label}: {cold.files_seen} files, {cold.chunks_embedded} chunks in "
        f"{cold.seconds:.1f}s = {cold.chunks_per_second:.1f} chunks/s "
        f"({cold.files_seen / cold.seconds:.1f} files/s); unchanged re-run "
        f"{warm.seconds * 1000:.0f} ms, {warm.chunks_embedded} chunks embedded"
    )


def store_only(rows: int, dim: int) -> None:
    import numpy as np

    from precedents.store import DocumentRecord, FileRecord, Store

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "idx", "bench/random", dim)
        rng = np.random.default_rng(1)
        items = []
        for i in range(rows // 6):
            v = rng.standard_normal((6, dim)).astype(np.float32)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            path = f"/bench/n{i}.md"
            items.append(
                (
                    FileRecord(path, "note", "/bench", f"h{i}", 1, 6, 0.0),
                    DocumentRecord("note", "/bench", path, f"n{i}"),
                    ["x" * 600] * 6,
                    v,
                )
            )
        t = time.perf_counter()
        store.replace_documents(items)
        dt = time.perf_counter() - t
        print(f"store only: {rows} rows x {dim}d written in {dt:.2f}s = {rows / dt:,.0f} rows/s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--synthetic-chunks", type=int, default=2000)
    parser.add_argument("--model", help="another model id or folder (set up beforehand)")
    args = parser.parse_args()
    from precedents.models.embedding import load_embedder

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["PRECEDENTS_HOME"] = str(Path(tmp) / "state")
        os.environ["PRECEDENTS_CLAUDE_DIR"] = str(Path(tmp) / "claude")
        t = time.perf_counter()
        if args.model:
            os.environ["PRECEDENTS_MODEL"] = args.model
        embedder = load_embedder(args.model) if args.model else load_embedder()
        print(
            f"model {embedder.model_id} on {embedder.device}: loaded in "
            f"{time.perf_counter() - t:.1f}s"
        )
        if DEV_NOTES.is_dir():
            run("dev notes", DEV_NOTES, embedder)
        else:
            print(f"dev notes: skipped ({DEV_NOTES} missing)")
        synth = Path(tmp) / "synthetic"
        synth.mkdir()
        synthetic_notes(synth, args.synthetic_chunks)
        run(f"synthetic {args.synthetic_chunks} chunks", synth, embedder)
    store_only(10_000, 384)
    return 0


if __name__ == "__main__":
    sys.exit(main())
