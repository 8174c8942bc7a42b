"""Resident memory of the query daemon with the bundled model, idle and after questions.

Starts ``python -m precedents.query_daemon`` on a state folder (default: a new
one holding the dev notes plus synthetic rows up to ``--chunks``, built as in
bench/hook.py), waits until it is ready, asks 1,000 questions (``--questions``), and reads
VmRSS / VmHWM from /proc (Linux).

    .venv/bin/python bench/daemon_rss.py [--home DIR] [--chunks 10000]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _bench_hook() -> object:
    spec = importlib.util.spec_from_file_location("bench_hook", HERE / "hook.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def proc_memory(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM (peak) of ``pid`` in MiB."""
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = round(int(value.split()[0]) / 1024, 1)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path)
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--questions", type=int, default=1_000)
    args = parser.parse_args()
    if not Path("/proc/self/status").exists():
        print("skipped: needs /proc (Linux)")
        return 0
    bench = _bench_hook()
    home = args.home or Path(tempfile.mkdtemp(prefix="precedents-bench-rss-"))
    if not (home / "index").exists():
        print(f"building a {args.chunks}-chunk index in {home} ...", flush=True)
        bench.build_index(home, args.chunks)  # type: ignore[attr-defined]
    daemon = bench.start_daemon(home)  # type: ignore[attr-defined]
    try:
        from precedents import protocol

        started = time.monotonic()
        while True:
            try:
                if protocol.ask({"op": "ping"}, 2, home / "run").get("ready"):
                    break
            except protocol.Unavailable:
                pass
            if time.monotonic() - started > 300:
                raise SystemExit("the daemon did not become ready")
            time.sleep(0.1)
        ready_s = time.monotonic() - started
        time.sleep(1)
        idle = proc_memory(daemon.pid)
        texts = bench.questions()  # type: ignore[attr-defined]
        checkpoints: dict[int, dict[str, float]] = {}
        for i in range(args.questions):
            if i in (100, 500):
                checkpoints[i] = proc_memory(daemon.pid)
            protocol.ask(
                {"op": "context", "prompt": texts[i % len(texts)], "cwd": bench.PROJECT},  # type: ignore[attr-defined]
                10,
                home / "run",
            )
        after = proc_memory(daemon.pid)
    finally:
        daemon.terminate()
        daemon.wait(30)
    result = {
        "ready_after_s": round(ready_s, 1),
        "idle_mib": idle,
        **{f"after_{n}_questions_mib": m for n, m in checkpoints.items()},
        f"after_{args.questions}_questions_mib": after,
        "chunks": args.chunks if args.home is None else "as in --home",
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
