"""Measure ranking by MiniLM fused with the multilingual USE for every record (issue #9).

    python training/eval_set.py                      # once: lays out .state/train-set
    python training/fuse_use.py --set .state/train-set [--set .state/eval-sets/dev ...]

An experiment, not shipped (docs/eval.md, "MiniLM fused with USE"). Today only
records in another language carry a USE vector. Here every chunk gets one, and
an English chunk scores ``w·minilm + (1−w)·mono(use)`` — USE's monolingual
cosine put on MiniLM's scale by the logistic fits of ``train_crosslingual.py``
(English messages → English training notes) — while a chunk in another
language keeps the shipped ``max(minilm, a·use + b)``. ``w = 1`` is today's
ranking. The weight is read off the training set; eval sets are only measured.

For each set it prints, per group and kind, the expected record first and in
the top 3, and "injected": in the top 3 with the top score at or above the
score that keeps 85% of the set's unrelated messages quiet (the top score
alone decides, so the figure compares rankings, not the shipped selection).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_crosslingual as xl

WEIGHTS = (1.0, 0.8, 0.7, 0.6, 0.5, 0.0)


def set_vectors(folder: Path) -> dict[str, Any]:
    """A set's chunks (ids, kinds, MiniLM and USE vectors) and its messages, both encoded."""
    import lancedb

    from precedents.config import load_settings
    from precedents.evaluation.core import _index_set, load_messages
    from precedents.models.embedding import load_embedder
    from precedents.models.language import is_english
    from precedents.models.multilingual import load_second_model

    minilm, use = load_embedder(), load_second_model()
    folder = folder.absolute()
    home = _index_set(load_settings(), folder, minilm, None)  # incremental: cheap when built
    rows = lancedb.connect(str(home.index_dir)).open_table("chunks").to_arrow().to_pydict()
    messages = load_messages(folder)
    texts = [m.text for m in messages]
    return {
        "ids": [str(Path(p).relative_to(folder)) for p in rows["path"]],
        "kinds": rows["kind"],
        "m": np.asarray(rows["vector"], dtype=np.float32),
        "u": use.encode_passages(rows["text"]),
        "english": np.array([is_english(t) for t in rows["text"]]),
        "messages": messages,
        "qm": minilm.encode_queries(texts),
        "qu": use.encode_queries(texts),
    }


def fused(s: dict[str, Any], w: float, cal: dict[str, float]) -> NDArray[np.float32]:
    """Chunks x messages: the fused score of every chunk (see module doc)."""
    sm = s["m"] @ s["qm"].T
    su = s["u"] @ s["qu"].T
    eng = s["english"]
    out = sm.copy()
    out[eng] = w * sm[eng] + (1 - w) * (cal["mono_a"] * su[eng] + cal["mono_b"])
    out[~eng] = np.maximum(sm[~eng], cal["xl_a"] * su[~eng] + cal["xl_b"])
    return out


def measure(
    s: dict[str, Any], scores: NDArray[np.float32], offsets: dict[str, float] | None = None
) -> dict[str, list[int]]:
    """The figures of one weight: key -> [hits, messages].

    ``offsets`` (record kind -> added to its documents' scores) ranks and decides
    with a per-kind shift: the ``--kind-offsets`` experiment.
    """
    docs = sorted({i for i, k in zip(s["ids"], s["kinds"], strict=True) if k != "conversation"})
    at = {d: n for n, d in enumerate(docs)}
    best = np.full((len(docs), scores.shape[1]), -9.0, dtype=np.float32)
    shift = np.zeros(len(docs), dtype=np.float32)
    for r, (doc, kind) in enumerate(zip(s["ids"], s["kinds"], strict=True)):
        if kind != "conversation":
            np.maximum(best[at[doc]], scores[r], out=best[at[doc]])
            shift[at[doc]] = (offsets or {}).get(kind, 0.0)
    best += shift[:, None]
    order = np.argsort(-best, axis=0)[:3]
    quiet: list[float] = []
    ranked: list[tuple[str, float, bool, bool]] = []
    for j, m in enumerate(s["messages"]):
        top = float(best[order[0, j], j])
        if m.kind == "unrelated":
            quiet.append(top)
        elif m.kind in ("situational", "paraphrase"):
            names = [docs[i] for i in order[:, j]]
            key = f"{m.group} {m.kind} {m.expected[0].split('/')[0]}"
            ranked.append((key, top, names[0] in m.expected, bool(set(m.expected) & set(names))))
    cut = float(np.quantile(quiet, 0.85)) if quiet else None  # no unrelated: not measured
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for key, top, first, top3 in ranked:
        figures = [("first", first), ("top 3", top3)]
        if cut is not None:
            figures.append(("injected", top3 and top >= cut))
        for name, ok in figures:
            out[f"{key}: {name}"][0] += int(ok)
            out[f"{key}: {name}"][1] += 1
    return out


def calibration() -> dict[str, float]:
    """USE's monolingual and cross-lingual cosines onto MiniLM's scale (training data only)."""
    from precedents.models.multilingual import load_second_model

    s = xl.scores()

    use = load_second_model()
    en_records = sorted((xl.DATA / "notes" / "records").glob("*.md"))
    en_pairs = xl.load_pairs("notes")
    en_u = xl.best_chunk(use, en_records, use.encode_queries([r["text"] for r in en_pairs]))
    a_m, b_m = xl.logistic(s["en_m"], s["en_target"])
    a_mono, b_mono = xl.logistic(en_u, s["en_target"])
    a_xl, b_xl = xl.logistic(s["xl_u"], s["xl_target"])
    return {
        "mono_a": a_mono / a_m,
        "mono_b": (b_mono - b_m) / a_m,
        "xl_a": a_xl / a_m,
        "xl_b": (b_xl - b_m) / a_m,
    }


def injected(figures: dict[str, list[int]]) -> int:
    """Situational messages injected, every group together."""
    return sum(v[0] for k, v in figures.items() if " situational " in k and "injected" in k)


def kind_offsets(sets: list[Path]) -> int:
    """Fit a rule and an ADR offset (notes 0) on ``sets[0]``, print every set's figures."""
    grid = [round(float(x), 2) for x in np.arange(-0.10, 0.101, 0.02)]
    vectors = [set_vectors(folder) for folder in sets]
    plain = [s["m"] @ s["qm"].T for s in vectors]
    fit = max(
        ({"rule": r, "adr": a} for r in grid for a in grid),
        key=lambda off: injected(measure(vectors[0], plain[0], off)),
    )
    print(f"offsets fitted on {sets[0]}: {fit}")
    for folder, s, scores in zip(sets, vectors, plain, strict=True):
        before, after = measure(s, scores), measure(s, scores, fit)
        print(f"\n{folder}  (no offsets / fitted offsets)")
        for key in sorted(before):
            print(f"  {key:45s} {before[key][0]} / {after[key][0]}  of {before[key][1]}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Print every set's figures at each weight."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", type=Path, action="append", required=True, dest="sets")
    parser.add_argument(
        "--kind-offsets",
        action="store_true",
        help="instead: per-kind score offsets fitted on the first set, measured on all",
    )
    args = parser.parse_args(argv)
    if args.kind_offsets:
        return kind_offsets(args.sets)
    cal = calibration()
    print(json.dumps({k: round(v, 4) for k, v in cal.items()}))
    for folder in args.sets:
        s = set_vectors(folder)
        table = {w: measure(s, fused(s, w, cal)) for w in WEIGHTS}
        print(f"\n{folder}  (w = " + " / ".join(str(w) for w in WEIGHTS) + ")")
        for key in sorted(table[1.0]):
            cells = " / ".join(str(table[w][key][0]) for w in WEIGHTS)
            print(f"  {key:45s} {cells}  of {table[1.0][key][1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
