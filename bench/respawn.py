"""A daemon killed after it was ready: how long until a prompt gets its context again
(issue #29, item 9; docs/daemon.md, "No crash loop").

The examples (notes, rules, ADRs) indexed for a throwaway project; the daemon started
by a first hook, as Claude Code's first prompt starts it. Then, ``--runs N`` times:
``kill -9`` the daemon, and send the README's Celery prompt through the hook as Claude
Code runs it (``python -I -S launch.py``, the real 300 ms and 8 s budgets), one after
another, until one prints the context: the time from the kill to that hook's exit,
how many hooks it took, and the answering hook's own time. ``--load K`` keeps K
processes spinning meanwhile.

    .venv/bin/python bench/respawn.py [--runs 5] [--load 0] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from first_prompt import build, env_for, spinning  # noqa: E402 - the path above

LAUNCHER = REPO / "src" / "precedents" / "hook" / "launch.py"
PROMPT = "add a nightly order-export job, I will put it on a new Celery queue"
EXPECTED = "feedback_no_new_queues_without_ops.md"
GIVE_UP_S = 120.0


def hook(home: Path, project: Path, claude: Path, **extra: str) -> tuple[bool, dict[str, Any]]:
    """One prompt through the hook: (whether it printed the context, its hook.log line)."""
    stdin = json.dumps(
        {
            "session_id": f"bench-{time.monotonic_ns()}",
            "cwd": str(project),
            "hook_event_name": "UserPromptSubmit",
            "prompt": PROMPT,
        }
    ).encode()
    out = subprocess.run(
        [sys.executable, "-I", "-S", str(LAUNCHER), "prompt"],
        input=stdin,
        capture_output=True,
        cwd=project,
        env=env_for(home, PRECEDENTS_CLAUDE_DIR=str(claude), **extra),
        timeout=60,
        check=False,
    )
    lines = (home / "logs" / "hook.log").read_text(encoding="utf-8").splitlines()
    return EXPECTED in out.stdout.decode(), json.loads(lines[-1].split(": ", 1)[1])


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def ready_seconds(home: Path) -> float | None:
    """The newest daemon's own start-to-ready time (its ``ready: model ... in N s`` line):
    what of the wait the cold start takes."""
    lines = (home / "logs" / "daemon.log").read_text(encoding="utf-8").splitlines()
    for line in reversed(lines):
        if " ready: model " in line:
            return float(line.rsplit(" in ", 1)[1].rstrip("s"))
    return None


def one_run(home: Path, project: Path, claude: Path) -> dict[str, Any]:
    """Kill the daemon; prompts until one has its context."""
    pid = int((home / "run" / "daemon.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    while running(pid):
        time.sleep(0.005)
    hooks = []
    while time.monotonic() - killed < GIVE_UP_S:
        got, entry = hook(home, project, claude)
        hooks.append(entry)
        if got:
            break
    else:
        raise SystemExit(f"no context {GIVE_UP_S:.0f} s after the kill: {hooks}")
    deadline = time.monotonic() + 30  # the new daemon's pid file, for the next kill
    while not (home / "run" / "daemon.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return {
        "kill_to_context_s": round(time.monotonic() - killed, 2),
        "daemon_ready_s": ready_seconds(home),
        "hooks": len(hooks),
        "outcomes": [h["outcome"] for h in hooks],
        "answering_hook_ms": hooks[-1]["ms"],
        "started_daemon": [h.get("started_daemon") for h in hooks],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--load", type=int, default=0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="precedents-respawn-") as tmp:
        root = Path(tmp)
        claude = root / "claude"
        claude.mkdir()
        home, project = build(root)
        got, first = hook(home, project, claude, PRECEDENTS_FIRST_PROMPT_BUDGET_MS="120000")
        if not got:
            raise SystemExit(f"the first hook got no context: {first}")
        runs = []
        try:
            with spinning(args.load):
                for _ in range(args.runs):
                    runs.append(one_run(home, project, claude))
                    print(json.dumps(runs[-1]), flush=True)
        finally:
            pid_file = home / "run" / "daemon.pid"
            if pid_file.exists():
                os.kill(int(pid_file.read_text()), signal.SIGTERM)
                time.sleep(2)
        result: dict[str, Any] = {"runs": runs, "load": args.load}
        for key in ("kill_to_context_s", "daemon_ready_s"):
            seconds = [r[key] for r in runs if r[key] is not None]
            result[key] = {
                "median": round(statistics.median(seconds), 2),
                "min": min(seconds),
                "max": max(seconds),
            }
        result["loadavg_1m"] = round(os.getloadavg()[0], 1)
        print(json.dumps({k: v for k, v in result.items() if k != "runs"}))
        if args.json:
            args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
