"""Issue #28's attacks all at once, through every real process a user runs.

One repository (tests/hostile_repo.py) with folders symlinked out of it, a file
symlink to a private file, ``/dev/zero``, a FIFO and a sparse 2 GB file as ADRs,
YAML alias bombs, a 16 KB glob, a file name that is not UTF-8, a secret in the
team config and attack payloads in the root AGENTS.md. The real CLI (``reindex``,
``status``, ``adr list``, ``adr show``, ``check --all``), the real daemon and the
real hook: nothing outside the repository reaches any output or the store, no
step hangs (each runs under a timeout and an address-space cap, so a regression
fails instead of taking the machine), the raw secret is never printed, the
payloads never reach the agent verbatim. The parts each have their own tests
(tests/test_hostile_repo.py, test_front_matter_bombs.py, test_glob_budget.py,
test_suspect.py, test_forged.py, test_team_notes.py); this is the whole, as
bench/hostile.py measures it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import lancedb

from tests.conftest_daemon import wait_ready
from tests.hostile_repo import CLI_STEPS, MARKER, PAYLOADS, SECRET, hook_calls, hostile

LAUNCHER = Path(__file__).resolve().parents[1] / "src" / "precedents" / "hook" / "launch.py"
# Each process in at most 6 GiB of address space (prlimit: no fork of this process,
# which has LanceDB loaded): a regression fails with MemoryError, not the machine.
CAPPED = ["prlimit", f"--as={6 << 30}", "--"]
STEP_TIMEOUT_S = 180.0


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
    env.update(
        PRECEDENTS_HOME=str(home),
        PRECEDENTS_CLAUDE_DIR=str(home / "claude"),
        PRECEDENTS_HOOK_BUDGET_MS="10000",
        HF_HUB_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
    )
    return env


def _run(cmd: list[str], env: dict[str, str], cwd: Path, stdin: bytes = b"") -> tuple[int, str]:
    proc = subprocess.run(
        [*CAPPED, *cmd],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        env=env,
        timeout=STEP_TIMEOUT_S,
        check=False,
    )
    return proc.returncode, (proc.stdout + proc.stderr).decode("utf-8", "replace")


def _stored(home: Path) -> str:
    db = lancedb.connect(str(home / "index"))
    out: list[str] = []
    for name in db.list_tables().tables:
        table = db.open_table(name).to_arrow()
        for col in table.column_names:
            if str(table.schema.field(col).type) in ("string", "large_string"):
                out.extend(str(v) for v in table.column(col).to_pylist())
    return "\n".join(out)


def test_a_hostile_repository_leaks_nothing_stalls_nothing_and_orders_nothing(
    tmp_path: Path,
) -> None:
    repo = hostile(tmp_path)
    home = tmp_path / "home"
    env = _env(home)
    cli = [sys.executable, "-m", "precedents.cli"]
    outputs: dict[str, str] = {}
    for name, args in CLI_STEPS.items():
        rc, outputs[name] = _run([*cli, *(a.format(repo=repo) for a in args)], env, repo)
        if name == "reindex":
            assert rc == 0, outputs[name]
    daemon = subprocess.Popen(
        [*CAPPED, sys.executable, "-m", "precedents.query_daemon"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # Ready before the first hook: one still loading would have the hook start a
        # second daemon, and this one would leave the socket to it.
        wait_ready(home, daemon)
        hook = [sys.executable, "-I", "-S", str(LAUNCHER)]
        session = f"hostile-{uuid.uuid4()}"
        for name, (mode, stdin) in hook_calls(repo, session).items():
            rc, outputs[name] = _run([*hook, mode], env, repo, stdin)
            assert rc == 0, outputs[name]
        assert daemon.poll() is None  # it answered them all and is still there
    finally:
        daemon.terminate()
        try:
            daemon.wait(30)
        except subprocess.TimeoutExpired:
            daemon.kill()
    outputs["store"] = _stored(home)
    leaked = {name for name, text in outputs.items() if MARKER in text}
    assert leaked == set()
    raw = {name for name, text in outputs.items() if SECRET in text}
    assert raw == set()
    agent = "\n".join(v for k, v in outputs.items() if k.startswith("hook"))
    for payload in PAYLOADS:
        assert payload not in agent
        assert payload.split(":")[-1].strip() not in agent
    assert "Use pnpm" in outputs["hook SessionStart"]  # the repository's own rule still comes
