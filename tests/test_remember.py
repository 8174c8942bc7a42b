"""`precedents remember` (issue #11, item 3): a note in the project's Claude Code memory
folder, with valid front matter, secrets masked in the file, searchable at once."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from precedents.ingest.chunking import parse_note
from precedents.ingest.remember import memory_folder, write_note
from precedents.ingest.sources import encode_project_path

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import (  # noqa: E402 - after the rewrite registration
    DevState,
    copy_state,
    hook_env,
    running_daemon,
)

pytest_plugins = ["tests.conftest_daemon"]

# Built at run time so no real-looking token sits in the source.
GH_TOKEN = "ghp_" + "".join("Xk9mQ2vL7pRt4wZ8yB3nC6dF1gH5jK0sA"[i % 33] for i in range(36))
TEXT = (
    "Deploys go out with `make ship`, never by hand. The CI deploy token "
    f"{GH_TOKEN} lives in the vault.\n\nRollback: `make ship REV=previous`."
)


def test_a_note_with_front_matter_and_no_secret(tmp_path: Path) -> None:
    folder = memory_folder(tmp_path / "claude", "/x/shop")
    assert folder == tmp_path / "claude" / "projects" / encode_project_path("/x/shop") / "memory"
    path = write_note(folder, TEXT, title="How we deploy")
    text = path.read_text(encoding="utf-8")
    assert GH_TOKEN not in text and "[MASKED:" in text
    meta = parse_note(text, path.stem)
    assert meta.warnings == ()
    assert meta.name == "How we deploy"
    assert meta.description == "Deploys go out with `make ship`, never by hand."
    assert len(meta.date) == 10 and "make ship REV=previous" in meta.body
    again = write_note(folder, "another one", title="How we deploy")
    assert again != path and again.exists()  # never overwrites a note


def test_an_existing_claude_folder_is_reused(tmp_path: Path) -> None:
    existing = tmp_path / "projects" / encode_project_path("/x/shop")
    existing.mkdir(parents=True)
    assert memory_folder(tmp_path, "/x/shop") == existing / "memory"


@pytest.mark.slow
def test_remember_then_the_daemon_finds_it(dev_state: DevState, tmp_path: Path) -> None:
    home = copy_state(dev_state, tmp_path)
    claude = tmp_path / "claude"
    claude.mkdir()
    env = hook_env(home, PRECEDENTS_CLAUDE_DIR=str(claude))
    project = dev_state.project
    with running_daemon(home):
        out = subprocess.run(
            [sys.executable, "-m", "precedents.cli", "remember", TEXT, "--title", "How we deploy",
             "--project", str(project), "--json"],
            capture_output=True, text=True, env=env, timeout=300, check=False,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        saved = time.monotonic()
        result = json.loads(out.stdout)
        path = Path(result["path"])
        assert path.parent.parent.parent == claude / "projects" and path.exists()
        assert GH_TOKEN not in path.read_text() and result["indexed_by"] == "daemon"
        found = False
        while not found and time.monotonic() - saved < 2.0:
            q = subprocess.run(
                [sys.executable, "-m", "precedents.cli", "query", "how do we roll back a deploy",
                 "--project", str(project), "--json", "-k", "3"],
                capture_output=True, text=True, env=env, timeout=60, check=False,
            )  # fmt: skip
            found = str(path) in [r["path"] for r in json.loads(q.stdout)["results"]]
        assert found, "not searchable within 2 s of the save"


@pytest.mark.slow
def test_remember_without_a_daemon_indexes_on_the_spot(home: Path, tmp_path: Path) -> None:
    from precedents import api
    from precedents.config import load_settings

    settings = load_settings()
    result = api.remember(settings, TEXT, title="How we deploy", project=str(tmp_path))
    assert result["indexed_by"] == "remember"
    answer = api.query(settings, "how do we roll back a deploy", project=str(tmp_path), k=1)
    assert answer["via"] == "in-process"
    assert [r["path"] for r in answer["results"]] == [result["path"]]
