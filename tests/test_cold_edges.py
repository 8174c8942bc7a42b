"""Cold edges (issue #29, item 11): `remember` hands its note to the daemon (starting one
when none runs) instead of loading the model; `query` waits for a daemon that is loading
rather than loading a second model beside it; `query --auto` asks the daemon, and says in
one line when the hook would inject nothing.

Real parts: `python -m precedents.cli` subprocesses, the real daemon (the one the CLI
starts, stopped by its pid at the end), the bundled model, LanceDB in tmp. Timings are
loose bounds only (the machine is a busy 2-core VM); bench/cold_edges.py measures.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from precedents import protocol

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import alive, hook_env, running_daemon, wait_ready  # noqa: E402

# A CLI run that prints, last on stderr, the top-level modules it imported.
PROBE = """
import json, sys
code = 0
try:
    from precedents.cli import main
    sys.argv = ["precedents", *sys.argv[1:]]
    main()
except SystemExit as exc:
    code = exc.code or 0
print("MODULES " + json.dumps(sorted({m.split(".")[0] for m in sys.modules})), file=sys.stderr)
sys.exit(code)
"""
HEAVY = {"lancedb", "lance", "pyarrow", "numpy", "onnxruntime", "torch", "tokenizers"}
NOTE = "Deploys are frozen on Fridays: the release train leaves on Thursday at noon."
QUESTION = "can I ship the release on Friday afternoon"


def cli(home: Path, cwd: Path, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    """One CLI process (the console script's entry) in ``cwd``: its wall time and result."""
    env = hook_env(home, PRECEDENTS_CLAUDE_DIR=str(home.parent / "claude"))
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "precedents.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
        check=False,
    )
    return time.monotonic() - started, out


def remember(home: Path, project: Path, text: str) -> tuple[float, dict[str, Any]]:
    took, out = cli(home, project, "remember", text, "--json")
    assert out.returncode == 0, out.stderr
    return took, json.loads(out.stdout)


def found(home: Path, project: Path, path: str, question: str = QUESTION) -> dict[str, Any]:
    """`query --json`'s answer, asserting it names ``path``."""
    _, out = cli(home, project, "query", question, "--json", "-k", "10")
    assert out.returncode == 0, out.stderr
    answer: dict[str, Any] = json.loads(out.stdout)
    return {**answer, "found": path in [r["path"] for r in answer["results"]]}


def daemon_pid(home: Path) -> int | None:
    try:
        return int((home / "run" / protocol.PID_NAME).read_text().strip())
    except (OSError, ValueError):
        return None


@contextlib.contextmanager
def stopped_at_the_end(home: Path) -> Any:
    """Whatever daemon the block leaves in ``home`` is stopped by its pid afterwards."""
    try:
        yield
    finally:
        pid = daemon_pid(home)
        if pid is not None and alive(pid):
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 30
            while alive(pid) and time.monotonic() < deadline:
                time.sleep(0.1)


@pytest.fixture
def project(home: Path, tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    return root


@pytest.mark.slow
def test_remember_with_a_daemon_up_is_indexed_by_it_and_found_at_once(
    home: Path, project: Path
) -> None:
    # A store to serve: the first note, saved with no daemon allowed to start (in-process).
    from precedents import api
    from precedents.config import load_settings

    api.remember(load_settings(), "The cache is Redis, one per region.", project=str(project))
    with running_daemon(home):
        took, result = remember(home, project, NOTE)
        assert result["indexed_by"] == "daemon" and result["loaded"] is True
        answer = found(home, project, result["path"])  # the query waits for the note
        assert answer["via"] == "daemon" and answer["found"]
        # Loose: the CLI's own start, no model (1.7-4 s before, with a model warm-started).
        assert took < 5.0, took
        # What made it seconds before: LanceDB (through precedents.watcher), the model.
        env = hook_env(home, PRECEDENTS_CLAUDE_DIR=str(home.parent / "claude"))
        probe = subprocess.run(
            [sys.executable, "-c", PROBE, "remember", "Staging is reset every Monday."],
            capture_output=True, text=True, cwd=project, env=env, timeout=300, check=False,
        )  # fmt: skip
        assert probe.returncode == 0 and "(indexed by the daemon)" in probe.stdout, probe.stderr
        modules = set(json.loads(probe.stderr.splitlines()[-1].removeprefix("MODULES ")))
        assert not modules & HEAVY, modules & HEAVY

        # `query --auto` is the daemon's answer: the hook's lines, naming the note...
        _, auto = cli(home, project, "query", "--auto", QUESTION)
        assert auto.returncode == 0 and result["path"] in auto.stdout, auto.stderr
        # ...and a message nothing answers is one line why, on stderr, nothing on stdout.
        _, nothing = cli(home, project, "query", "--auto", "zebra migration patterns in Kenya")
        assert nothing.returncode == 0 and nothing.stdout == ""
        assert nothing.stderr.count("\n") == 1 and "nothing stands out" in nothing.stderr
    log = (home / "logs" / "daemon.log").read_text()
    assert '"op": "remember", "indexed": 1' in log


@pytest.mark.slow
def test_remember_with_no_daemon_starts_one_and_returns_before_its_model_loads(
    home: Path, project: Path
) -> None:
    from precedents import api
    from precedents.config import load_settings

    api.remember(load_settings(), "The cache is Redis, one per region.", project=str(project))
    assert daemon_pid(home) is None
    with stopped_at_the_end(home):
        took, result = remember(home, project, NOTE)
        pid = daemon_pid(home)
        assert result["indexed_by"] == "daemon" and pid is not None and alive(pid)
        assert Path(result["path"]).is_file()
        assert took < 10.0, took  # loose: 3-15 s before, a model loaded in the CLI

        # The first query while the daemon loads waits for it (no second model here).
        answer = found(home, project, result["path"])  # waits for the model and the note
        assert answer["via"] == "daemon" and answer["found"]
        wait_ready(home)
        assert daemon_pid(home) == pid  # one daemon, the one the CLI started
        # It took the note while its model loaded or, on a stalled CLI, indexed it after.
        log = (home / "logs" / "daemon.log").read_text()
        assert f'"op": "remember", "taken": true, "loaded": {json.dumps(result["loaded"])}' in log
    assert not alive(pid)
    assert daemon_pid(home) is None


def test_remember_and_query_auto_take_the_fast_path(tmp_path: Path) -> None:
    from precedents.cli.fast import parse

    repo = str(tmp_path)  # a --project that is no folder is left to typer (one line, exit 2)

    assert parse(["remember", "a note", "--title", "T", "--json"]) == (
        "remember",
        {"text": "a note", "title": "T", "as_json": True},
    )
    assert parse(["remember", "x", "--team", "--repo", repo]) == (
        "remember",
        {"text": "x", "team": True, "project": repo},
    )
    assert parse(["remember", "x", "--team", "--repo", str(tmp_path / "missing")]) is None
    assert parse(["query", "x", "--auto"]) == ("query", {"text": "x", "auto": True})
    for argv in (
        ["remember"],
        ["remember", "x", "--help"],
        ["remember", "x", "-k", "2"],
        ["remember", "x", "--title"],
        ["remember", "x", "--title", "-t"],
        ["remember", "x", "y"],
        ["remember", "x", "--team", "--team"],
    ):
        assert parse(argv) is None, argv


def test_the_watcher_role_api_names_is_the_watchers() -> None:
    from precedents import api
    from precedents.watcher import ROLE

    assert api.WATCHER_ROLE == ROLE
