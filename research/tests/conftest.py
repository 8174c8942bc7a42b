"""The research's test fixtures: the real bundled model, loaded once per session."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def embedder() -> object:
    """The real bundled all-MiniLM-L6-v2."""
    from precedents.models.embedding import load_embedder

    return load_embedder()
