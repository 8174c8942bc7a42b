"""The learned relevance signal: does a ranked record apply to this message? (issue #9)

The bundled model's cosine ranks records well but cannot tell "applies" from
"unrelated" (top scores overlap; docs/eval.md). A small adapter, trained on
public records with hand-written messages disjoint from every evaluation set
(``research/``), maps the *query* vector, ``q' = normalize(q + q·A)``, so that
a record that applies scores high and an unrelated message scores low against
every record. Ranking keeps the plain cosine (the adapted vector ranked worse,
measured); the decision uses the adapted score of the top-ranked records.

The artifact ships inside the package (``recall/data/``, ~300 KiB, built by
``research/precedents_research/train_relevance.py``); the model's profile names it
(:attr:`precedents.config.ModelProfile.relevance`): the bundled MiniLM only, and
other models decide with the plain thresholds.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

import numpy as np
from numpy.typing import NDArray

from precedents.config import parse_model_id

log = logging.getLogger("precedents.recall")
# The decision looks at the best of the top few ranked records: the one that
# applies is often second or third by cosine.
DECISION_RANKS = 3


@dataclass(frozen=True)
class Relevance:
    """A query adapter for one model: ``adapt`` a query vector, ``score`` records."""

    matrix: NDArray[np.float32]  # A, dimension x dimension
    version: str

    @classmethod
    def for_model(cls, model_id: str) -> Relevance | None:
        """The shipped adapter of ``model_id``, or None (no adapter, or unreadable)."""
        profile, _ = parse_model_id(model_id)  # a runtime variant: its base's adapter applies
        name = profile.relevance
        if name is None:
            return None
        try:
            with (resources.files(__name__.rpartition(".")[0]) / "data" / name).open("rb") as fh:
                data = np.load(fh)
                if str(data["model"]) != profile.model_id:
                    return None
                return cls(np.asarray(data["A"], dtype=np.float32), str(data["version"]))
        except (OSError, KeyError, ValueError) as exc:
            log.warning("relevance adapter %s unusable (%s): deciding by cosine", name, exc)
            return None

    def adapt(self, vectors: NDArray[np.float32]) -> NDArray[np.float32]:
        """The adapted query vectors (rows), normalized."""
        q = np.asarray(vectors, dtype=np.float32)
        out = q + q @ self.matrix
        norms = np.linalg.norm(out, axis=-1, keepdims=True)
        return np.asarray(out / np.maximum(norms, 1e-12), dtype=np.float32)

    def score(self, adapted: NDArray[np.float32], chunks: Sequence[NDArray[np.float32]]) -> float:
        """The best adapted score over the given records' chunk vectors (-1 when none)."""
        best = -1.0
        for matrix in chunks:
            if len(matrix):
                best = max(best, float(np.max(matrix @ adapted)))
        return best
