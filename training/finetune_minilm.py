"""Fine-tune the bundled all-MiniLM-L6-v2 on the training pairs (issue #9 experiment).

    python training/finetune_minilm.py OUT_DIR                 # train on every part
    python training/finetune_minilm.py OUT_DIR --hold-out rules  # train on the others,
                                                                 # report top-3 on rules

Contrastive fine-tuning (multiple-negatives ranking loss): each message is
pulled towards the best chunk of its record and pushed from the other
records' chunks in the batch and from one hard negative — the highest-scoring
chunk of another record of the same corpus under the base model (records
listed in a pair's ``also`` are never negatives). Plain torch loop over the
sentence-transformers modules (no ``datasets``/``accelerate`` needed).

Data: ``training/data/{rules,adrs,notes}`` only — disjoint from every
evaluation set (``tests/test_training_data.py``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent
DATA = ROOT / "data"
PARTS = ("rules", "adrs", "notes")
SEED = 0


def corpus(part: str) -> tuple[list[list[str]], dict[str, int], list[dict[str, Any]]]:
    """Records chunked as indexed, their index by relative path, and the English pairs."""
    from precedents.ingest.chunking import chunk_document, parse_note
    from precedents.secrets.mask import mask_secrets

    folder = DATA / part
    paths = sorted(p for p in (folder / "records").rglob("*") if p.is_file())
    chunks = []
    for p in paths:
        meta = parse_note(mask_secrets(p.read_text(encoding="utf-8", errors="replace")), p.stem)
        chunks.append(chunk_document(meta.name, meta.description, meta.body))
    index = {str(p.relative_to(folder)): i for i, p in enumerate(paths)}
    pairs = [json.loads(line) for line in (folder / "pairs.jsonl").open(encoding="utf-8")]
    pairs = [r for r in pairs if r["kind"] in ("situational", "paraphrase")]
    return chunks, index, pairs


def triples(model: Any, part: str) -> tuple[list[tuple[str, str, str]], dict[str, Any]]:
    """(message, positive chunk, hard negative chunk) for a part, and its eval material."""
    chunks, index, pairs = corpus(part)
    flat = [c for cs in chunks for c in cs]
    owner = np.array([i for i, cs in enumerate(chunks) for _ in cs])
    vecs = model.encode(flat, batch_size=64, normalize_embeddings=True)
    qv = model.encode([r["text"] for r in pairs], batch_size=64, normalize_embeddings=True)
    out = []
    for r, q in zip(pairs, qv, strict=True):
        target = index[r["record"]]
        ok = {target, *(index[a] for a in r.get("also", []) if a in index)}
        scores = vecs @ q
        mine = np.flatnonzero(owner == target)
        positive = flat[int(mine[np.argmax(scores[mine])])]
        order = np.argsort(-scores)
        negative = next(flat[int(k)] for k in order if owner[k] not in ok)
        out.append((r["text"], positive, negative))
    return out, {"flat": flat, "owner": owner, "index": index, "pairs": pairs}


def top3(model: Any, material: dict[str, Any]) -> float:
    """Share of the part's messages whose record is among the top 3 (best chunk per record)."""
    vecs = model.encode(material["flat"], batch_size=64, normalize_embeddings=True)
    qv = model.encode([r["text"] for r in material["pairs"]], normalize_embeddings=True)
    owner, index = material["owner"], material["index"]
    n_rec = owner.max() + 1
    hits = 0
    for r, q in zip(material["pairs"], qv, strict=True):
        best = np.full(n_rec, -2.0)
        np.maximum.at(best, owner, vecs @ q)
        ok = {index[r["record"]], *(index[a] for a in r.get("also", []) if a in index)}
        hits += bool(ok & set(np.argsort(-best)[:3].tolist()))
    return hits / len(material["pairs"])


def train(model: Any, data: list[tuple[str, str, str]], epochs: int, batch: int) -> None:
    """Multiple-negatives ranking loss with one hard negative per message."""
    model.max_seq_length = 128  # training speed; records are chunked to ~700 chars anyway
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.01)
    steps = epochs * (len(data) // batch)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / (0.1 * steps)) * max(0.0, 1 - s / steps)
    )
    rng = random.Random(SEED)
    model.train()
    step, started = 0, time.time()
    for _ in range(epochs):
        rng.shuffle(data)
        for i in range(0, len(data) - batch + 1, batch):
            part = data[i : i + batch]
            emb = [embed(model, [t[k] for t in part]) for k in range(3)]
            docs = torch.cat([emb[1], emb[2]])
            logits = emb[0] @ docs.T * 20.0
            loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(part)))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            if step % 10 == 0:
                print(
                    f"step {step}/{steps} loss {loss.item():.3f} {time.time() - started:.0f}s",
                    file=sys.stderr,
                )
    model.eval()
    model.max_seq_length = 256


def embed(model: Any, texts: list[str]) -> torch.Tensor:
    """Normalized sentence embeddings with gradients."""
    features = model.tokenize(texts)
    out = model(features)["sentence_embedding"]
    return torch.nn.functional.normalize(out, dim=-1)


def main(argv: list[str] | None = None) -> int:
    """Train, optionally holding one part out and reporting its top-3 before and after."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--hold-out", choices=PARTS)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args(argv)
    torch.manual_seed(SEED)
    from precedents.models.embedding import load_embedder

    base = load_embedder("sentence-transformers/all-MiniLM-L6-v2", "cpu", runtime="torch")
    model = base._model  # type: ignore[attr-defined]
    data: list[tuple[str, str, str]] = []
    held: dict[str, Any] | None = None
    for part in PARTS:
        t, material = triples(model, part)
        if part == args.hold_out:
            held = material
        else:
            data += t
    before = top3(model, held) if held else None
    print(f"training on {len(data)} triples", file=sys.stderr)
    train(model, data, args.epochs, args.batch)
    if held is not None:
        print(f"held-out {args.hold_out}: top-3 {before:.3f} -> {top3(model, held):.3f}")
    model.save(str(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
