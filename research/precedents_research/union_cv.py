"""Cross-validate "the learned relevance may speak where the cosine rules stay silent" (issue #9).

    python -m precedents_research.union_cv        # ~6 min on 2 cores (15 adapters)

The shipped decision is the cosine rules (SPEC §5: ``min_top``, ``min_gap``,
``wide_gap``). The rule measured here adds a second way to speak: when the
rules say nothing, but the adapter's relevance (the best adapted score of the
top 3, :mod:`precedents.recall.relevance`) reaches ``R`` and the top cosine
reaches a floor, the records near the top are shown. On dev it injected more
situational records at the same quiet (docs/eval.md); this checks the
adapter's side of that on messages it never saw: records are held out five
folds at a time, as in ``train_relevance.py --cv``, and the adapter of each
fold is trained without them.

Per held-out part it prints the situational records injected and the
unrelated messages left quiet, for the cosine rules alone and with the
relevance route at each ``R``. The selection is the product's
(:func:`precedents.recall.selection.select`, at MiniLM's default cosine
thresholds) over the part's own store, conversations and ADR marks aside.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from precedents.config import Thresholds
from precedents.recall.selection import select
from precedents.store.rows import DocumentHit, DocumentRecord
from precedents_research import train_relevance as tr

RULES = Thresholds(0.48, 0.095, 0.10, 0.05)  # MiniLM's cosine defaults, the route off
ROUTE = (0.40, 0.42, 0.44, 0.45, 0.46, 0.48, 0.50)
PROJECT = "/cv"


def chosen(scores: list[float], order: list[int], relevance: float, th: Thresholds) -> set[int]:
    """The records the product's :func:`select` shows for these ranked scores."""
    hits = [
        DocumentHit(DocumentRecord("note", PROJECT, f"/cv/{d}", str(d)), score, 0)
        for d, score in zip(order, scores, strict=True)
    ]
    return {int(h.record.name) for h in select(hits, th, PROJECT, relevance).chosen}


def fold_figures(
    part: dict[str, Any], pos: list[tuple[int, list[int]]], unrel: list[int], model: tr.Adapter
) -> dict[str, list[int]]:
    """[situational injected, unrelated quiet] for the rules alone ("rules") and each R."""
    out = {key: [0, 0] for key in ("rules", *map(str, ROUTE))}
    rows = [(j, set(ids)) for j, ids in pos] + [(u, None) for u in unrel]
    with torch.no_grad():
        q = part["Q"][[j for j, _ in rows]]
        cos = tr.doc_scores(q, part)
        adapted = tr.doc_scores(model(q), part)
    for r, (_, expected) in enumerate(rows):
        order = torch.argsort(cos[r], descending=True)[:11].tolist()  # what the gap reads
        scores = [float(cos[r, d]) for d in order]
        relevance = max(float(adapted[r, d]) for d in order[:3])
        for key in out:
            speak = None if key == "rules" else float(key)
            shown = chosen(scores, order, relevance, replace(RULES, speak_relevance=speak))
            if expected is None:
                out[key][1] += int(not shown)
            else:
                out[key][0] += int(bool(expected & shown))
    return out


def main(argv: list[str] | None = None) -> int:
    """Train an adapter per fold and print the held-out figures."""
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    torch.set_num_threads(2)
    parts = {name: tr.embed_part(name) for name in tr.PARTS}
    for name, part in parts.items():
        rng = np.random.default_rng(tr.SEED)
        fold_of = rng.integers(0, 5, part["records"])
        ufold = rng.integers(0, 5, len(part["unrelated"]))
        total = {key: [0, 0] for key in ("rules", *map(str, ROUTE))}
        for f in range(5):
            train_pos = [(j, ids) for j, ids in part["positives"] if fold_of[ids[0]] != f]
            test_pos = [(j, ids) for j, ids in part["positives"] if fold_of[ids[0]] == f]
            train_u = [u for u, g in zip(part["unrelated"], ufold, strict=True) if g != f]
            test_u = [u for u, g in zip(part["unrelated"], ufold, strict=True) if g == f]
            batches: list[tr.Batch] = [
                (part, [j for j, _ in train_pos], [ids for _, ids in train_pos], train_u)
            ]
            batches += [tr.all_pairs(p) for n, p in parts.items() if n != name]
            figures = fold_figures(part, test_pos, test_u, tr.train(batches))
            for key, (inj, quiet) in figures.items():
                total[key][0] += inj
                total[key][1] += quiet
        n_pos, n_u = len(part["positives"]), len(part["unrelated"])
        print(f"{name}: {n_pos} messages with a record, {n_u} unrelated", flush=True)
        for key, (inj, quiet) in total.items():
            label = "cosine rules alone" if key == "rules" else f"+ relevance >= {key}"
            print(
                f"  {label:22} injected {inj:4}/{n_pos} ({inj / n_pos:.1%})"
                f"  quiet {quiet:4}/{n_u} ({quiet / n_u:.1%})",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
