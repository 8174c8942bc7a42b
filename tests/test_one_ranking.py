"""One ranking path: `precedents query` and the hook order the same question the same way.

Real parts: the dev notes indexed with the bundled model, `precedents query`
as a subprocess, the daemon as a subprocess and the hook as Claude Code runs
it. The selection is opened wide (config thresholds that always take the top
three) so that the hook's lines show the ranking itself.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import (  # noqa: E402 - after the rewrite registration
    DevState,
    hook_env,
    prompt_json,
    run_hook,
    start_daemon,
    stop_daemon,
    wait_ready,
)

pytest_plugins = ["tests.conftest_daemon"]

QUESTIONS = [
    "I committed config/master.key by accident, make git forget it but keep the file",
    "add an index to a huge postgres table without locking writes",
    "should user login sessions be stored in a MySQL table?",
    "undo one rails migration from two weeks ago, not the latest",
    "how do I find which commit introduced a bug, automatically",
]
WIDE_OPEN = """
[thresholds."sentence-transformers/all-MiniLM-L6-v2"]
min_top = -1.0
min_gap = -1.0
wide_gap = 9.0
near_top = 0.05
"""


def injected_paths(stdout: bytes) -> list[str]:
    """The record paths of the hook's lines, in the order shown."""
    context = json.loads(stdout)["hookSpecificOutput"]["additionalContext"]
    return [line.rsplit("(", 1)[1].rstrip(")") for line in context.splitlines()[1:]]


@pytest.mark.slow
def test_query_and_hook_give_the_same_order(dev_state: DevState, tmp_path: Path) -> None:
    home = tmp_path / "state"
    shutil.copytree(dev_state.home / "index", home / "index")
    (home / "config.toml").write_text(WIDE_OPEN)
    daemon = start_daemon(home)
    try:
        wait_ready(home, daemon)
        for question in QUESTIONS:
            hook = run_hook(home, prompt_json(question, dev_state.project), cwd=dev_state.project)
            assert hook.returncode == 0
            shown = injected_paths(hook.stdout)
            query = subprocess.run(
                [sys.executable, "-m", "precedents.cli", "query", question, "--json", "-k", "3"],
                capture_output=True,
                cwd=dev_state.project,
                env=hook_env(home),
                timeout=300,
                check=False,
            )
            assert query.returncode == 0, query.stderr.decode()
            ranked = [r["path"] for r in json.loads(query.stdout)["results"]]
            assert len(shown) == 3 and shown == ranked, question
    finally:
        stop_daemon(daemon)
