"""One ranking path: `precedents query` and the hook order the same question the same way.

Real parts: the dev notes indexed with the bundled model, `precedents query`
as a subprocess, the daemon as a subprocess and the hook as Claude Code runs
it. The selection is opened wide (config thresholds that always take the top
three) so that the hook's lines show the ranking itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import (  # noqa: E402 - after the rewrite registration
    DevState,
    copy_state,
    hook_env,
    prompt_json,
    run_hook,
    running_daemon,
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


def run_query(home: Path, cwd: Path, question: str) -> dict[str, object]:
    query = subprocess.run(
        [sys.executable, "-m", "precedents.cli", "query", question, "--json", "-k", "3"],
        capture_output=True,
        cwd=cwd,
        env=hook_env(home),
        timeout=300,
        check=False,
    )
    assert query.returncode == 0, query.stderr.decode()
    answer: dict[str, object] = json.loads(query.stdout)
    return answer


def paths(answer: dict[str, object]) -> list[str]:
    return [str(r["path"]) for r in answer["results"]]  # type: ignore[attr-defined]


@pytest.mark.slow
def test_query_and_hook_give_the_same_order(dev_state: DevState, tmp_path: Path) -> None:
    home = copy_state(dev_state, tmp_path)
    (home / "config.toml").write_text(WIDE_OPEN)
    shown: dict[str, list[str]] = {}
    with running_daemon(home):
        for question in QUESTIONS:
            hook = run_hook(home, prompt_json(question, dev_state.project), cwd=dev_state.project)
            assert hook.returncode == 0
            shown[question] = injected_paths(hook.stdout)
            assert len(shown[question]) == 3
            # With a daemon running, `query` asks it: the warm model, the same ranking.
            answer = run_query(home, dev_state.project, question)
            assert answer["via"] == "daemon" and paths(answer) == shown[question], question
    for question in QUESTIONS:  # no daemon: ranked in-process, still the same order
        answer = run_query(home, dev_state.project, question)
        assert answer["via"] == "in-process" and paths(answer) == shown[question], question


@pytest.mark.parametrize(
    "request_",
    [
        {"op": "query"},
        {"op": "query", "text": "x", "k": 0},
        {"op": "query", "text": "x", "k": "5"},
        {"op": "query", "text": "x", "project": 3},
    ],
)
def test_a_malformed_query_gets_an_error_not_a_crash(
    home: Path, fake_daemon: Any, request_: dict[str, object]
) -> None:
    from precedents import protocol

    answer = protocol.ask(request_, 5.0, home / "run")
    assert answer["ok"] is False and answer["error"]
    assert protocol.ask({"op": "ping"}, 5.0, home / "run")["ok"]  # still serving


def run_status(home: Path, cwd: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "precedents.cli", "status", "--json"],
        capture_output=True,
        cwd=cwd,
        env=hook_env(home),
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr.decode()
    answer: dict[str, Any] = json.loads(out.stdout)
    return answer


def test_status_asks_the_daemon_and_says_the_same(dev_state: DevState, tmp_path: Path) -> None:
    """With a daemon running, `status` takes the counts its export saved (no LanceDB in
    the CLI, issue #21) and they are the ones a status reads from the store itself."""
    home = copy_state(dev_state, tmp_path)
    with running_daemon(home):
        via_daemon = run_status(home, dev_state.project)
    (home / "cache" / "status.json").unlink()  # read the store this time
    alone = run_status(home, dev_state.project)
    assert (via_daemon.pop("via"), alone.pop("via")) == ("cache", "store")
    assert via_daemon["documents"] > 0 and via_daemon["kinds"]
    for key in ("kinds", "projects", "documents", "chunks", "last_indexed", "indexed_model"):
        assert via_daemon[key] == alone[key], key
