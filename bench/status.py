"""`precedents status` and `precedents query` as a user runs them, with and without a daemon.

Each sample is one CLI process (``python -m precedents.cli ...``), timed from
start to exit, over the same index: first with a warm daemon running (the
commands ask it), then with none (they open the store, and `query` loads the
model, in-process). Also the interpreter floor (``python -c pass``).

    .venv/bin/python bench/status.py [--chunks 2000] [--runs 10] [--home DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hook import EVAL, PROJECT, build_index, start_daemon, stats, wait_ready


def timed(cmd: list[str], env: dict[str, str], runs: int) -> dict[str, float]:
    """p50/p95/max of ``runs`` runs of ``cmd`` (each must exit 0)."""
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        out = subprocess.run(cmd, env=env, capture_output=True, check=False, cwd="/")
        samples.append(time.perf_counter() - started)
        if out.returncode != 0:
            raise SystemExit(f"{cmd} failed: {out.stderr.decode()[-500:]}")
    return stats(samples)


def main() -> int:
    """Print the table (and the JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--home", type=Path, help="reuse this state folder's index")
    args = parser.parse_args()
    if not (EVAL / "dev" / "notes").is_dir():
        print(f"skipped: {EVAL / 'dev' / 'notes'} is missing")
        return 0
    home = args.home or Path(tempfile.mkdtemp(prefix="precedents-bench-status-"))
    if not (home / "index").exists():
        build_index(home, args.chunks)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
    env["PRECEDENTS_HOME"] = str(home)
    cli = [sys.executable, "-m", "precedents.cli"]
    status = [*cli, "status", "--json"]
    query = [*cli, "query", "undo one rails migration", "--project", PROJECT, "--json"]
    rows = {"interpreter (python -c pass)": timed([sys.executable, "-c", "pass"], env, args.runs)}
    daemon = start_daemon(home)
    try:
        wait_ready(home)
        rows["status, daemon running"] = timed(status, env, args.runs)
        rows["query, daemon running"] = timed(query, env, args.runs)
    finally:
        daemon.terminate()
        daemon.wait(30)
    # No daemon (the CLI does not start one): both read the store, `query` loads the model.
    rows["status, no daemon"] = timed(status, env, args.runs)
    rows["query, no daemon"] = timed(query, env, max(3, args.runs // 3))
    print(f"{'command':32} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for name, s in rows.items():
        print(f"{name:32} {s['p50']:8.0f} {s['p95']:8.0f} {s['max']:8.0f}")
    print(json.dumps({"cpus": os.cpu_count(), "load_avg_1m": os.getloadavg()[0], **rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
