"""Query latency with the model warm: embed, store search, and both, p50/p95/max over 200.

Two indexes: the dev notes (real vectors from the bundled model) and a
synthetic 10k-chunk store (random unit vectors: flat-scan time depends on rows
and dimension, not on content, and this keeps the benchmark minutes shorter).

    .venv/bin/python bench/query.py
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
EVAL = REPO.parent / "shared" / "eval"
RUNS = 200


def messages() -> list[str]:
    texts: list[str] = []
    for name in ("dev/questions.jsonl", "dev/unrelated.jsonl", "dev-situational/messages.jsonl"):
        path = EVAL / name
        if path.exists():
            texts += [json.loads(line)["text"] for line in path.read_text().splitlines() if line]
    return texts or ["how do I make git forget a file but keep it on disk?"]


def figures(label: str, samples: list[float]) -> None:
    ms = sorted(s * 1000 for s in samples)
    p95 = ms[int(0.95 * (len(ms) - 1))]
    print(
        f"  {label:<22} p50 {statistics.median(ms):6.1f} ms  p95 {p95:6.1f} ms  "
        f"max {ms[-1]:6.1f} ms  (n={len(ms)})"
    )


def measure(fn: Callable[[str], object], texts: list[str]) -> list[float]:
    out = []
    for i in range(RUNS):
        t = time.perf_counter()
        fn(texts[i % len(texts)])
        out.append(time.perf_counter() - t)
    return out


def bench_store(label: str, store: object, embedder: object, texts: list[str]) -> None:
    from precedents.ingest.sources import project_keys
    from precedents.recall import search

    keys = project_keys("/bench")
    vectors = {t: embedder.encode_queries([t])[0] for t in texts}  # type: ignore[attr-defined]
    print(f"{label}: {store.count()} chunks")  # type: ignore[attr-defined]
    figures("embed query", measure(lambda t: embedder.encode_queries([t]), texts))  # type: ignore[attr-defined]
    figures(
        "load vectors + rank (k=5)", measure(lambda t: search(store, vectors[t], keys, k=5), texts)
    )  # type: ignore[attr-defined]
    figures(
        "embed + search",
        measure(lambda t: search(store, embedder.encode_queries([t])[0], keys, k=5), texts),
    )  # type: ignore[attr-defined]


def main() -> int:
    import numpy as np

    from precedents.config import load_settings
    from precedents.ingest.indexer import Indexer
    from precedents.ingest.sources import Sources, configured_sources, walk
    from precedents.models.embedding import load_embedder
    from precedents.store import DocumentRecord, FileRecord, Store, open_store

    texts = messages()
    embedder = load_embedder()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["PRECEDENTS_HOME"] = str(Path(tmp) / "state")
        os.environ["PRECEDENTS_CLAUDE_DIR"] = str(Path(tmp) / "claude")
        settings = load_settings()
        if (EVAL / "dev" / "notes").is_dir():
            store = open_store(settings.index_dir, embedder)
            sources = walk(
                configured_sources(
                    settings, Sources(notes=[EVAL / "dev" / "notes"], project="/bench")
                )
            )
            Indexer(settings, store, embedder).sync(sources)
            bench_store("dev notes", store, embedder, texts)

        synth = Store(Path(tmp) / "synthetic", embedder.model_id, embedder.dimension)
        rng = np.random.default_rng(3)
        items = []
        for i in range(10_000 // 6 + 1):
            v = rng.standard_normal((6, embedder.dimension)).astype(np.float32)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            path = f"/bench/n{i}.md"
            items.append(
                (
                    FileRecord(path, "note", "/bench", f"h{i}", 1, 6, 0.0),
                    DocumentRecord("note", "/bench", path, f"n{i}"),
                    ["x"] * 6,
                    v,
                )
            )
        synth.replace_documents(items)
        synth.maybe_compact(force=True)
        bench_store("synthetic", synth, embedder, texts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
