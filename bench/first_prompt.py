"""Nothing dropped without a word (issue #21): the first prompt after a cold start, with
the real Claude Code, and warm hooks with the CPUs loaded.

Part 1, ``--cold N``: N runs of ``claude -p PROMPT`` (the real Claude Code from
tests' cache, ``tests/claude_api_stub.py`` as the Messages API), each with the
daemon stopped and its spawn stamp dated back, as on a fresh machine: does the
model's first request carry the hook's context? Also how long the SessionStart
and prompt hooks took (hook.log) and when the daemon was ready (daemon.log).

Part 2, ``--warm N``: with the daemon up and ``--load K`` processes spinning
(default: one per CPU; ``stress-ng`` is not needed), N hooks one after
another, each a whole ``python -I -S launch.py prompt`` process as Claude Code
starts it, timed from its start to its exit: p50/p95/p99/max against the
300 ms budget, and how many timed out.

Part 3, ``--ready N``: N cold daemon starts, spinning or not (``--load``),
timed to the first ``ready`` ping: what the first-prompt budget must cover.

The index: the demo corpus in examples/ (notes, rules, ADRs) for a throwaway
project; the prompt is the README's Celery one (a note and two ADRs answer it).

    .venv/bin/python bench/first_prompt.py [--cold 10] [--warm 100] [--ready 3]
                                           [--load 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.claude_api_stub
LAUNCHER = REPO / "src" / "precedents" / "hook" / "launch.py"
PROMPT = "add a nightly order-export job, I will put it on a new Celery queue"
EXPECTED = "feedback_no_new_queues_without_ops.md"
CONTEXT_MARK = "UserPromptSubmit hook additional context:"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))], 1)


def summary(ms: list[float]) -> dict[str, float]:
    return {
        "n": len(ms),
        "p50": round(statistics.median(ms), 1),
        "p95": pct(ms, 0.95),
        "p99": pct(ms, 0.99),
        "max": round(max(ms), 1),
    }


@contextlib.contextmanager
def spinning(count: int) -> Iterator[None]:
    """``count`` processes that burn a CPU each, for the block."""
    procs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
        for _ in range(count)
    ]
    try:
        time.sleep(0.5)
        yield
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()


def env_for(home: Path, **extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
    out.update(PRECEDENTS_HOME=str(home), **extra)
    return out


def build(root: Path) -> tuple[Path, Path]:
    """The state folder and the project, the examples indexed for it."""
    home, project = root / "state", root / "project"
    (project / ".git").mkdir(parents=True)
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "precedents.cli", "reindex"),
            *("--notes", str(REPO / "examples" / "notes")),
            *("--rules", str(REPO / "examples" / "rules")),
            *("--adrs", str(REPO / "examples" / "adr")),
            *("--project", str(project)),
        ],
        env=env_for(home),
        check=False,
        capture_output=True,
        text=True,
    )
    if proc.returncode:
        raise SystemExit(f"reindex failed: {proc.stderr.strip()[-2000:]}")
    return home, project


def stop_daemon(home: Path) -> None:
    """Stop the daemon of ``home`` if one runs, and let the next hook start one at once."""
    from precedents import protocol

    with contextlib.suppress(protocol.Unavailable):
        protocol.ask({"op": "stop"}, 5.0, home / "run")
    deadline = time.monotonic() + 30
    while (home / "run" / protocol.PID_NAME).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    stamp = home / "run" / "daemon.spawned"
    if stamp.exists():
        os.utime(stamp, (0, 0))


def log_lines(path: Path, mark: str) -> list[tuple[str, dict[str, Any]]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if mark in line:
            with contextlib.suppress(ValueError):
                out.append((line, json.loads(line.split(mark, 1)[1].strip())))
    return out


def cold_runs(home: Path, project: Path, runs: int, load: int) -> dict[str, Any]:
    """``claude -p`` with a stopped daemon, ``runs`` times."""
    from tests.claude_api_stub import CLAUDE_CODE_EXE, StubApi, claude_env

    from precedents.hook.install import install

    if not CLAUDE_CODE_EXE.exists():
        return {"skipped": f"{CLAUDE_CODE_EXE} is missing (the e2e tests install it)"}
    install(project / ".claude" / "settings.json", claude=str(CLAUDE_CODE_EXE))
    results = []
    with spinning(load):
        for i in range(runs):
            stop_daemon(home)
            before = len(log_lines(home / "logs" / "hook.log", "precedents.hook:"))
            with StubApi() as api, tempfile.TemporaryDirectory() as tmp:
                started = time.monotonic()
                proc = subprocess.run(
                    [str(CLAUDE_CODE_EXE), "-p", PROMPT, "--max-turns", "1"],
                    cwd=project,
                    env=claude_env(Path(tmp), api.url, base=env_for(home)),
                    capture_output=True,
                    text=True,
                    timeout=300,
                    check=False,
                )
                took = time.monotonic() - started
                bodies = [r.body for r in api.main_requests()]
            hooks = [e for _, e in log_lines(home / "logs" / "hook.log", "precedents.hook:")]
            hooks = hooks[before:]
            got = bool(bodies) and CONTEXT_MARK in bodies[0] and EXPECTED in bodies[0]
            results.append(
                {
                    "run": i + 1,
                    "context_in_first_request": got,
                    "exit": proc.returncode,
                    "claude_s": round(took, 1),
                    "hooks": [
                        {k: h.get(k) for k in ("event", "outcome", "waited", "ms")} for h in hooks
                    ],
                }
            )
            print(json.dumps(results[-1]), flush=True)
    stop_daemon(home)
    got = sum(r["context_in_first_request"] for r in results)
    return {"runs": runs, "with_context": got, "load": load, "results": results}


def hook_once(home: Path, project: Path, session: str) -> tuple[float, str]:
    """One hook process, as Claude Code starts it: (ms from start to exit, outcome)."""
    stdin = json.dumps(
        {
            "session_id": session,
            "cwd": str(project),
            "hook_event_name": "UserPromptSubmit",
            "prompt": PROMPT,
        }
    ).encode()
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-I", "-S", str(LAUNCHER), "prompt"],
        input=stdin,
        capture_output=True,
        env=env_for(home),
        check=False,
    )
    ms = (time.perf_counter() - started) * 1000
    return ms, log_lines(home / "logs" / "hook.log", "precedents.hook:")[-1][1]["outcome"]


def warm_runs(home: Path, project: Path, runs: int, load: int) -> dict[str, Any]:
    """``runs`` hooks against a warm daemon with ``load`` CPUs spinning."""
    stop_daemon(home)
    hook_once(home, project, "warm-up")  # starts the daemon and waits for it
    ms, outcomes = [], []
    with spinning(load):
        for i in range(runs):
            took, outcome = hook_once(home, project, f"warm-{i}")
            ms.append(took)
            outcomes.append(outcome)
    stop_daemon(home)
    counts = {o: outcomes.count(o) for o in sorted(set(outcomes))}
    # Where the time went: the hook's own count (from its import on: what the budget
    # counts) and the daemon's, joined by the request id.
    hooks = [e for _, e in log_lines(home / "logs" / "hook.log", "precedents.hook:")][-runs:]
    answers = {
        e.get("rid"): e
        for _, e in log_lines(home / "logs" / "daemon.log", " answer ")
        if e.get("rid")
    }
    daemon = [answers[h["rid"]]["ms"]["total"] for h in hooks if h.get("rid") in answers]
    return {
        "load": load,
        "loadavg_after": os.getloadavg(),
        "process_ms": summary(ms),
        "hook_ms": summary([h["ms"] for h in hooks]),
        "daemon_ms": summary(daemon) if daemon else None,
        "outcomes": counts,
    }


def ready_runs(home: Path, runs: int, load: int) -> dict[str, Any]:
    """Cold daemon starts timed to the first ``ready`` ping."""
    from precedents import protocol

    took = []
    with spinning(load):
        for _ in range(runs):
            stop_daemon(home)
            started = time.monotonic()
            proc = subprocess.Popen(
                [sys.executable, "-m", "precedents.query_daemon"],
                env=env_for(home),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            while time.monotonic() - started < 120:
                with contextlib.suppress(protocol.Unavailable):
                    if protocol.ask({"op": "ping"}, 2.0, home / "run").get("ready"):
                        break
                time.sleep(0.02)
            took.append((time.monotonic() - started) * 1000)
            proc.terminate()
            proc.wait()
    return {"load": load, "ready_ms": summary(took)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cold", type=int, default=10, help="claude -p runs from a cold start")
    parser.add_argument("--warm", type=int, default=100, help="warm hook runs, CPUs loaded")
    parser.add_argument("--ready", type=int, default=3, help="cold daemon starts to time")
    parser.add_argument("--load", type=int, default=os.cpu_count() or 2, help="spinning CPUs")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="precedents-first-") as tmp:
        home, project = build(Path(tmp))
        out: dict[str, Any] = {"cpus": os.cpu_count(), "loadavg_before": os.getloadavg()}
        try:
            if args.ready:
                out["ready_idle"] = ready_runs(home, args.ready, 0)
                out["ready_loaded"] = ready_runs(home, args.ready, args.load)
                print(json.dumps({k: out[k] for k in ("ready_idle", "ready_loaded")}), flush=True)
            if args.warm:
                out["warm"] = warm_runs(home, project, args.warm, args.load)
                print(json.dumps(out["warm"]), flush=True)
            if args.cold:
                out["cold"] = cold_runs(home, project, args.cold, args.load)
        finally:
            stop_daemon(home)
    cold = out.get("cold", {})
    print(json.dumps({k: v for k, v in out.items() if k != "cold"}, indent=1))
    if cold and "results" in cold:
        print(f"cold claude -p: {cold['with_context']}/{cold['runs']} first requests with context")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
