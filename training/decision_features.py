"""Cross-validate a learned inject decision over cheap features (issue #9 item 3).

    python training/decision_features.py

For every training message (``training/data/{rules,adrs,notes}``: situational
and paraphrase messages, and unrelated ones incl. padded copies), rank the
part's records by best-chunk cosine (the product's scoring) and compute:
top score, gap (top − mean of ranks 2..11), margin (top − second), the
second and third scores, and the lexical overlap of the message's content
words with the top three records' words (best, and the top one's). Never
the message's length (a proxy the padded unrelated copies exist to catch).

A message counts as injected when its record is in the top 3 and its score
clears the threshold that keeps 85% of the part's held-out unrelated messages
quiet. Logistic regressions (classes balanced) are compared with the cosine
top score, 5-fold by record and with each part held out whole.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))

import train_relevance as tr

STOP = frozenset(
    " ".join(
        (
            "the a an and or of to in on for with is are was be it this that you your we not",
            "from by as at if can will how what when which use i my me our do does did should",
            "would could have has had there here then than into about just also only need want",
            "make get like so all any some more most other",
        )
    ).split()
)
QUIET = 0.85


def words(text: str) -> set[str]:
    """Content words (3+ characters, no stop words), lower case."""
    return {w for w in re.findall(r"[a-z][a-z0-9_]{2,}", text.lower()) if w not in STOP}


def feature_rows(name: str) -> list[tuple[str, list[float], int, bool, int]]:
    """(part, features, label, unrelated?, record group) for every message of a part."""
    part = tr.embed_part(name)
    folder = tr.DATA / name
    records = sorted(p for p in (folder / "records").rglob("*") if p.suffix in (".md", ".mdc"))
    rec_words = [words(p.read_text(encoding="utf-8", errors="replace")) for p in records]
    messages = [
        json.loads(line)
        for f in ("pairs.jsonl", "unrelated.jsonl")
        for line in (folder / f).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    scores = tr.doc_scores(part["Q"], part).numpy()
    targets = dict(part["positives"])
    unrelated = set(part["unrelated"])
    rows = []
    for j, row in enumerate(scores):
        order = np.argsort(-row)
        s = row[order]
        mw = words(messages[j]["text"])
        lex = [len(mw & rec_words[r]) / max(1, len(mw)) for r in order[:3]]
        feats = [s[0], s[0] - s[1:11].mean(), s[0] - s[1], max(lex), lex[0], s[1], s[2]]
        if j in targets:
            label = int(bool(set(targets[j]) & set(order[:3].tolist())))
            rows.append((name, feats, label, False, int(targets[j][0])))
        elif j in unrelated:
            rows.append((name, feats, 0, True, -1))
    return rows


def injected(score: NDArray[np.float64], data: dict[str, Any]) -> str:
    """Per part: share of its situational messages injected at 85% unrelated quiet."""
    out = []
    for name in tr.PARTS:
        m = data["part"] == name
        pos = m & ~data["unrelated"]
        threshold = np.quantile(score[m & data["unrelated"]], QUIET)
        out.append(f"{name} {(score[pos & (data['y'] == 1)] > threshold).sum() / pos.sum():.3f}")
    return "  ".join(out)


def main() -> int:
    """Print the comparison table."""
    rows = [r for name in tr.PARTS for r in feature_rows(name)]
    data = {
        "X": np.array([r[1] for r in rows]),
        "y": np.array([r[2] for r in rows]),
        "unrelated": np.array([r[3] for r in rows]),
        "part": np.array([r[0] for r in rows]),
    }
    groups = np.array([r[4] for r in rows])
    rng = np.random.default_rng(0)
    fold = np.where(data["unrelated"], rng.integers(0, 5, len(rows)), groups % 5)
    print(f"{'decision':34} injected at {QUIET:.0%} of unrelated quiet (held out)")
    print(f"{'cosine top score':34} {injected(data['X'][:, 0], data)}")
    for cols, label in (
        ([0, 1, 2], "logistic: top, gap, margin"),
        ([0, 1, 2, 3, 4], "logistic: + lexical overlap"),
        ([0, 1, 2, 3, 4, 5, 6], "logistic: + 2nd and 3rd scores"),
    ):
        for split, name in ((fold, "5-fold by record"), (data["part"], "part held out")):
            score = np.zeros(len(rows))
            for held in np.unique(split):
                train = split != held
                fit = LogisticRegression(class_weight="balanced", max_iter=1000)
                fit.fit(data["X"][train][:, cols], data["y"][train])
                score[~train] = fit.predict_proba(data["X"][~train][:, cols])[:, 1]
            print(f"{label + ', ' + name:34} {injected(score, data)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
