"""Shared fixtures: a private state folder per test, the real bundled model once per session."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def shared_path(*parts: str) -> Path:
    """A path under ../shared, or skip the test with the reason."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is missing (the shared evaluation folder is not beside the repo)")
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """PRECEDENTS_HOME in tmp_path, and an empty Claude Code folder (never the real ~/.claude).
    A daemon left running in it (one `remember` or a hook started) is stopped afterwards."""
    state = tmp_path / "state"
    monkeypatch.setenv("PRECEDENTS_HOME", str(state))
    claude = tmp_path / "claude"
    claude.mkdir()
    monkeypatch.setenv("PRECEDENTS_CLAUDE_DIR", str(claude))
    for var in ("PRECEDENTS_MODEL", "PRECEDENTS_DEVICE", "PRECEDENTS_MAX_FILE_BYTES"):
        monkeypatch.delenv(var, raising=False)
    yield state
    stop_left_daemon(state)


def stop_left_daemon(state: Path) -> None:
    """SIGTERM the daemon whose pid ``state``'s pid file holds, if it runs, and wait for it:
    no test leaves one behind (its idle timeout is hours)."""
    import signal
    import time

    try:
        pid = int((state / "run" / "daemon.pid").read_text().strip())
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        return
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.05)


@pytest.fixture(scope="session")
def embedder() -> object:
    """The real bundled all-MiniLM-L6-v2, loaded once for the whole session."""
    from precedents.models.embedding import load_embedder

    return load_embedder()


class FakeEmbedder:
    """Bag-of-words hashing vectors: fast and deterministic, for logic tests only.

    Real retrieval is always also tested with the real model.
    """

    model_id = "test/fake-hash-64"
    dimension = 64
    device = "cpu"
    load_seconds = 0.0

    def __init__(self) -> None:
        self.calls = 0
        self.texts = 0

    def _vec(self, text: str) -> NDArray[np.float32]:
        v = np.zeros(self.dimension, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little")
            v[h % self.dimension] += 1.0
        n = float(np.linalg.norm(v))
        return v / n if n else v

    def encode_queries(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.calls += 1
        self.texts += len(texts)
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, 64), np.float32)

    encode_passages = encode_queries


@pytest.fixture
def fake_embedder() -> Iterator[FakeEmbedder]:
    """A fresh :class:`FakeEmbedder` that counts its calls."""
    yield FakeEmbedder()
