"""Cross-validated figures of the chat rule on eval sets (issue #27, docs/eval.md).

The conversation thresholds (``conversation_top``, ``conversation_relevance``,
``conversation_gap``) are picked by ``precedents eval --tune`` on a dev set; reported
on that same set they flatter themselves. This script splits each set's messages
into folds (situational and unrelated apart, by position), tunes on all folds but
one with :func:`precedents.evaluation.core.tune`, scores the held-out fold with
:func:`precedents.evaluation.core.score`, and sums the held-out figures::

    python -m precedents_research.decisions_cv --set tests/fixtures/decisions [--folds 5]

It uses the package's public API only: the same ranking, selection and tuning the
product runs (``precedents eval``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from precedents.config import load_settings
from precedents.evaluation.core import EvalRun, prepare, score, tune


def folds_of(run: EvalRun, folds: int) -> list[EvalRun]:
    """``run``'s messages in ``folds`` parts, each kind spread evenly by position."""
    parts: list[list[Any]] = [[] for _ in range(folds)]
    by_kind: dict[str, int] = {}
    for ranked in run.ranked:
        kind = ranked.message.kind
        n = by_kind.get(kind, 0)
        by_kind[kind] = n + 1
        parts[n % folds].append(ranked)
    return [replace(run, ranked=part) for part in parts]


def cross_validate(run: EvalRun, folds: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Held-out figures summed over the folds, and each fold's chosen thresholds."""
    parts = folds_of(run, folds)
    total: dict[str, list[int]] = {}
    chosen = []
    for k, held in enumerate(parts):
        train = replace(run, ranked=[r for i, p in enumerate(parts) if i != k for r in p.ranked])
        thresholds, _ = tune(train)
        chosen.append(
            {
                "conversation_top": thresholds.conversation_top,
                "conversation_relevance": thresholds.conversation_relevance,
                "conversation_gap": thresholds.conversation_gap,
            }
        )
        for key, v in score(held, thresholds).items():
            entry = total.setdefault(key, [0, 0])
            entry[0] += v["ok"]
            entry[1] += v["n"]
    figures = {k: {"ok": v[0], "n": v[1], "rate": round(v[0] / v[1], 3)} for k, v in total.items()}
    return figures, chosen


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", type=Path, required=True, dest="sets")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    run = prepare(load_settings(), args.sets)
    figures, chosen = cross_validate(run, args.folds)
    if args.json:
        print(json.dumps({"figures": figures, "chosen": chosen}, indent=2))
        return 0
    for key, v in figures.items():
        print(f"  {key:<66} {v['ok']:>3}/{v['n']:<3} {v['rate'] * 100:5.1f}%")
    for k, c in enumerate(chosen):
        print(f"  fold {k}: {c}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
