"""Train the relevance adapter shipped in ``precedents/recall/data/`` (issue #9).

    python -m precedents_research.train_relevance       # train on every part, write the artifact
    python -m precedents_research.train_relevance --cv  # 5-fold cross-validation figures only

What it learns: a linear map on the *query* vector of the bundled model
(all-MiniLM-L6-v2), ``q' = normalize(q + q·A)``, and a "nothing applies" score
``b``, fitted with one softmax over every record of a corpus plus that null
class: a message's own record(s) should win, an unrelated message should land
on the null class. Record vectors are untouched (nothing is re-embedded).
The product ranks with the plain cosine and uses the adapted score of the
top-ranked records to decide whether to inject (measured: ranking with the
adapted vector lost top-3 hits; deciding with it found far more of them at
the same quiet rate — see docs/eval.md).

Data: ``research/data/{rules,adrs,notes}`` — public records (SOURCE.md and
licences in each folder) with hand-written messages; disjoint from every
evaluation set (``tests/test_training_data.py`` proves it).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np
import torch

from precedents_research.paths import ARTIFACTS, DATA

PARTS = ("rules", "adrs", "notes")
OUT = ARTIFACTS / "relevance-minilm-v1.npz"
TAU = 0.05
EPOCHS = 60
L2 = 1e-2
LR = 3e-3
SEED = 0


def embed_part(name: str) -> dict[str, Any]:
    """Records chunked as the indexer chunks them, and every message, embedded."""
    from precedents.ingest.chunking import chunk_document, parse_note
    from precedents.models.embedding import load_embedder
    from precedents.secrets.mask import mask_secrets

    part = DATA / name
    model = load_embedder()
    records = sorted(p for p in (part / "records").rglob("*") if p.suffix in (".md", ".mdc"))
    index = {str(p.relative_to(part)): i for i, p in enumerate(records)}
    texts: list[str] = []
    owner: list[int] = []
    for i, path in enumerate(records):
        meta = parse_note(
            mask_secrets(path.read_text(encoding="utf-8", errors="replace")), path.stem
        )
        for chunk in chunk_document(meta.name, meta.description, meta.body):
            texts.append(chunk)
            owner.append(i)
    messages = [
        json.loads(line)
        for f in ("pairs.jsonl", "unrelated.jsonl")
        for line in (part / f).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    positives, unrelated = [], []
    for j, m in enumerate(messages):
        if m["kind"] == "unrelated":
            unrelated.append(j)
            continue
        names = (
            [m.get("trap"), m.get("successor")]
            if m["kind"] == "superseded_trap"
            else [m.get("record"), *(m.get("also") or [])]
        )
        ids = [index[n] for n in names if n in index]
        if ids:
            positives.append((j, ids))
    return {
        "C": torch.tensor(model.encode_passages(texts)),
        "owner": torch.tensor(owner),
        "Q": torch.tensor(model.encode_queries([m["text"] for m in messages])),
        "records": len(records),
        "positives": positives,
        "unrelated": unrelated,
    }


def doc_scores(q: torch.Tensor, part: dict[str, Any]) -> torch.Tensor:
    """Each record's best chunk score, per query (the product's scoring)."""
    s = q @ part["C"].T
    out = torch.full((q.shape[0], part["records"]), -2.0)
    index = part["owner"].expand(q.shape[0], -1)
    return out.scatter_reduce(1, index, s, reduce="amax", include_self=True)


class Adapter(torch.nn.Module):
    """``normalize(q + q·A)`` and the null score ``b``."""

    def __init__(self, dim: int = 384) -> None:
        super().__init__()
        self.A = torch.nn.Parameter(torch.zeros(dim, dim))
        self.b = torch.nn.Parameter(torch.tensor(0.45))

    def forward(self, q: torch.Tensor) -> torch.Tensor:
        q2 = q + q @ self.A
        return q2 / q2.norm(dim=1, keepdim=True)


Batch = tuple[dict[str, Any], list[int], list[list[int]], list[int]]


def train(batches: list[Batch]) -> Adapter:
    """Full-batch Adam on the softmax over records + null, with an L2 pull towards identity."""
    torch.manual_seed(SEED)
    model = Adapter()
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    for _ in range(EPOCHS):
        opt.zero_grad()
        loss = L2 * (model.A**2).sum()
        for part, pidx, targets, uidx in batches:
            if pidx:
                s = doc_scores(model(part["Q"][pidx]), part)
                logits = torch.cat([s, model.b.expand(len(pidx), 1)], 1) / TAU
                mask = torch.zeros_like(logits, dtype=torch.bool)
                for r, ids in enumerate(targets):
                    mask[r, ids] = True
                pos = torch.logsumexp(logits.masked_fill(~mask, -1e9), 1)
                loss = loss + (torch.logsumexp(logits, 1) - pos).mean()
            if uidx:
                s = doc_scores(model(part["Q"][uidx]), part)
                logits = torch.cat([s, model.b.expand(len(uidx), 1)], 1) / TAU
                loss = loss + (torch.logsumexp(logits, 1) - logits[:, -1]).mean()
        loss.backward()
        opt.step()
    return model


def measure(
    part: dict[str, Any],
    pos: list[tuple[int, list[int]]],
    unrel: list[int],
    model: Adapter | None,
    quiet: float = 0.85,
) -> tuple[float, float]:
    """(top-3 rate, injected rate at the threshold that keeps ``quiet`` of unrelated silent).

    Ranking is always by the plain cosine; the decision score is the plain top
    score (no model) or the adapted score of the best of the top 3 (model).
    """
    with torch.no_grad():
        qp, qu = part["Q"][[j for j, _ in pos]], part["Q"][unrel]
        sp, su = doc_scores(qp, part), doc_scores(qu, part)
        top_p, top_u = sp.topk(3, dim=1).indices, su.topk(3, dim=1).indices
        if model is None:
            dp, du = sp.max(1).values, su.max(1).values
        else:
            dp = doc_scores(model(qp), part).gather(1, top_p).max(1).values
            du = doc_scores(model(qu), part).gather(1, top_u).max(1).values
    top3 = [bool(set(top_p[r].tolist()) & set(ids)) for r, (_, ids) in enumerate(pos)]
    threshold = torch.quantile(du, quiet).item()
    injected = [t and d.item() > threshold for t, d in zip(top3, dp, strict=True)]
    return float(np.mean(top3)), float(np.mean(injected))


def cross_validate(parts: dict[str, dict[str, Any]], k: int = 5) -> None:
    """Records held out by fold (their messages unseen in training), the other parts in full."""
    for name, part in parts.items():
        rng = np.random.default_rng(SEED)
        fold_of = rng.integers(0, k, part["records"])
        ufold = rng.integers(0, k, len(part["unrelated"]))
        base, adapted = [], []
        for f in range(k):
            train_pos = [(j, ids) for j, ids in part["positives"] if fold_of[ids[0]] != f]
            test_pos = [(j, ids) for j, ids in part["positives"] if fold_of[ids[0]] == f]
            train_u = [u for u, g in zip(part["unrelated"], ufold, strict=True) if g != f]
            test_u = [u for u, g in zip(part["unrelated"], ufold, strict=True) if g == f]
            batches: list[Batch] = [
                (part, [j for j, _ in train_pos], [ids for _, ids in train_pos], train_u)
            ]
            batches += [all_pairs(p) for n, p in parts.items() if n != name]
            model = train(batches)
            base.append(measure(part, test_pos, test_u, None))
            adapted.append(measure(part, test_pos, test_u, model))
        b, a = np.mean(base, 0), np.mean(adapted, 0)
        print(
            f"{name:6} top-3 {b[0]:.3f} | injected at 85% quiet: cosine {b[1]:.3f}, "
            f"adapter {a[1]:.3f}",
            flush=True,
        )


def all_pairs(part: dict[str, Any]) -> Batch:
    pos = part["positives"]
    return (part, [j for j, _ in pos], [ids for _, ids in pos], part["unrelated"])


def main(argv: list[str]) -> int:
    """Train (or cross-validate) and write the artifact."""
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--cv", action="store_true", help="print cross-validated figures only")
    opts = args.parse_args(argv)
    torch.set_num_threads(2)
    parts = {name: embed_part(name) for name in PARTS}
    if opts.cv:
        cross_validate(parts)
        return 0
    model = train([all_pairs(p) for p in parts.values()])
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        OUT,
        A=model.A.detach().numpy().astype(np.float16),
        b=np.float32(model.b.item()),
        model=np.str_("sentence-transformers/all-MiniLM-L6-v2"),
        version=np.str_("minilm-v1"),
    )
    print(f"wrote {OUT} ({OUT.stat().st_size / 1024:.0f} KiB), null score {model.b.item():.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
