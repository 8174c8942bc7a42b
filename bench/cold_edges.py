"""Cold edges (issue #29, item 11): `remember` and the first `query` after a daemon start.

Every figure is a whole CLI process (``python -m precedents.cli``, the console
script's entry) timed from its start to its exit, on a fresh state folder in
tmp with the examples/ corpus indexed for a throwaway project:

- ``remember (no daemon)``: the daemon stopped before each run (and its spawn
  stamp dated back, as after a minute); then how long until the note is found
  by a query to the daemon the CLI started (``searchable``, from the CLI's start).
- ``remember (daemon up)``: the daemon ready; and ``searchable`` likewise.
- ``first query after ready``: the daemon started and pinged until ready (what
  a `daemon start` that waits for ready returns after), then one `query`.
- ``first query during load``: `query` started the moment the daemon process was.
- ``query --auto (no daemon)`` / ``(daemon up)``: and whether it printed anything.

    .venv/bin/python bench/cold_edges.py [--runs 3] [--json out.json]
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
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
from precedents import protocol  # noqa: E402 - after the path

QUESTION = "add a nightly order-export job, I will put it on a new Celery queue"


def env_for(home: Path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
    out.update(PRECEDENTS_HOME=str(home), PRECEDENTS_CLAUDE_DIR=str(home.parent / "claude"))
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "src"), out.get("PYTHONPATH")) if p)
    return out


def cli(home: Path, project: Path, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    """One CLI process in ``project``: its wall time in seconds, and what it did."""
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "precedents.cli", *args],
        cwd=project,
        env=env_for(home),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if out.returncode:
        raise SystemExit(f"{args[0]} failed ({out.returncode}): {out.stderr.strip()[-2000:]}")
    return elapsed, out


def build(root: Path) -> tuple[Path, Path]:
    home, project = root / "state", root / "project"
    (project / ".git").mkdir(parents=True)
    (root / "claude").mkdir()
    cli(
        home,
        project,
        "reindex",
        *("--notes", str(REPO / "examples" / "notes")),
        *("--rules", str(REPO / "examples" / "rules")),
        *("--adrs", str(REPO / "examples" / "adr")),
        *("--project", str(project)),
    )
    return home, project


def daemon_pid(home: Path) -> int | None:
    try:
        return int((home / "run" / protocol.PID_NAME).read_text().strip())
    except (OSError, ValueError):
        return None


def stop_daemon(home: Path) -> None:
    """Stop the daemon of ``home`` if one runs; the next start may come at once."""
    with contextlib.suppress(protocol.Unavailable):
        protocol.ask({"op": "stop"}, 5.0, home / "run")
    deadline = time.monotonic() + 30
    while daemon_pid(home) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    stamp = home / "run" / protocol.SPAWN_STAMP
    if stamp.exists():
        os.utime(stamp, (0, 0))


def start_daemon(home: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "precedents.query_daemon"],
        env=env_for(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def wait_ready(home: Path, limit: float = 120) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < limit:
        with contextlib.suppress(protocol.Unavailable):
            if protocol.ask({"op": "ping"}, 2.0, home / "run").get("ready"):
                return time.perf_counter() - started
        time.sleep(0.02)
    raise SystemExit("the daemon did not become ready")


def searchable_after(
    home: Path, project: Path, path: str, started: float, limit: float = 60
) -> float:
    """Seconds from ``started`` until the daemon's query finds ``path``."""
    name = Path(path).name
    while time.perf_counter() - started < limit:
        with contextlib.suppress(protocol.Unavailable, protocol.Refused):
            answer = protocol.DaemonClient(home / "run").query(name, str(project), 50, 5.0)
            if any(Path(r["path"]).name == name for r in answer["results"]):
                return time.perf_counter() - started
        time.sleep(0.05)
    return float("nan")


def remembered_path(out: subprocess.CompletedProcess[str]) -> str:
    return str(json.loads(out.stdout)["path"])


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50": round(statistics.median(values), 2),
        "max": round(max(values), 2),
    }


def measure(runs: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="cold-edges-") as tmp:
        home, project = build(Path(tmp))
        try:
            # The first CLI run of all pays for a cold disk cache: not counted.
            cli(home, project, "query", QUESTION)
            wall, searchable, by = [], [], []
            for i in range(runs):
                stop_daemon(home)
                started = time.perf_counter()
                took, out = cli(
                    home, project, "remember", f"cold note {i}: deploys freeze on Fridays", "--json"
                )
                wall.append(took)
                by.append(json.loads(out.stdout)["indexed_by"])
                if daemon_pid(home) is None:  # indexed in-process: ask a daemon started now
                    start_daemon(home)
                    wait_ready(home)
                searchable.append(searchable_after(home, project, remembered_path(out), started))
            results["remember (no daemon)"] = {**summary(wall), "indexed_by": sorted(set(by))}
            results["  searchable after (no daemon)"] = summary(searchable)

            stop_daemon(home)
            start_daemon(home)
            wait_ready(home)
            wall, searchable = [], []
            for i in range(runs):
                started = time.perf_counter()
                took, out = cli(
                    home, project, "remember", f"warm note {i}: the cache is Redis", "--json"
                )
                wall.append(took)
                searchable.append(searchable_after(home, project, remembered_path(out), started))
            results["remember (daemon up)"] = summary(wall)
            results["  searchable after (daemon up)"] = summary(searchable)

            ready, first, during = [], [], []
            for _ in range(runs):
                stop_daemon(home)
                start_daemon(home)
                ready.append(wait_ready(home))
                first.append(cli(home, project, "query", QUESTION)[0])
            for _ in range(runs):
                stop_daemon(home)
                start_daemon(home)
                during.append(cli(home, project, "query", QUESTION)[0])
            results["daemon start -> ready"] = summary(ready)
            results["first query after ready"] = summary(first)
            results["first query during load"] = summary(during)

            for label, up in (("no daemon", False), ("daemon up", True)):
                wall, printed = [], []
                for _ in range(runs):
                    stop_daemon(home)
                    if up:
                        start_daemon(home)
                        wait_ready(home)
                    took, out = cli(home, project, "query", "--auto", QUESTION)
                    wall.append(took)
                    printed.append(bool(out.stdout.strip()) or bool(out.stderr.strip()))
                results[f"query --auto ({label})"] = {
                    **summary(wall),
                    "said something": all(printed),
                }
        finally:
            stop_daemon(home)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = measure(args.runs)
    for label, row in results.items():
        extra = {k: v for k, v in row.items() if k not in ("n", "p50", "max")}
        head = f"{label:<34} p50 {row['p50']:6.2f} s  max {row['max']:6.2f} s  n={row['n']}"
        print(head, extra or "")
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
