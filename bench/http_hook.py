"""The command hook against the daemon's HTTP hook, warm, in one run, on one index.

(a) the command hook: one ``python -I -S .../launch.py prompt`` process per
    sample, as Claude Code starts it (bench/hook.py's own functions);
(b) an HTTP POST /hook with the token, from a client that keeps one
    connection open, and from one that opens a new connection per request;
(c) 10 at once: 10 hook processes started together, 10 HTTP clients each on
    a new connection released together (6 rounds).

All against the same daemon (started with ``http_port`` in its config.toml),
the same 10k-chunk index and the same questions. The HTTP figures are the
client's round trip in this process: what Claude Code's own HTTP client adds
is not in them (nor is the process start in the command hook's, which it pays).

    .venv/bin/python bench/http_hook.py [--chunks 10000] [--runs 60] [--home DIR] [--json out]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hook as hook_bench

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

TOKEN_HEADER = "X-Precedents-Token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def post(conn: http.client.HTTPConnection, body: bytes, token: str) -> bytes:
    headers = {"Content-Type": "application/json", TOKEN_HEADER: token}
    conn.request("POST", "/hook", body=body, headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    assert resp.status == 200, (resp.status, data)
    return data


def http_persistent(
    port: int, bodies: list[bytes], token: str, runs: int
) -> tuple[list[float], int]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    out, injected = [], 0
    for i in range(runs):
        t = time.perf_counter()
        data = post(conn, bodies[i % len(bodies)], token)
        out.append(time.perf_counter() - t)
        injected += data != b"{}"
    conn.close()
    return out, injected


def http_fresh(port: int, bodies: list[bytes], token: str, runs: int) -> list[float]:
    out = []
    for i in range(runs):
        t = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        post(conn, bodies[i % len(bodies)], token)
        conn.close()
        out.append(time.perf_counter() - t)
    return out


def http_concurrent(port: int, bodies: list[bytes], token: str) -> list[float]:
    """10 clients, each on a new connection, released at once; each one's round trip."""
    barrier = threading.Barrier(len(bodies))
    out: list[float] = []
    lock = threading.Lock()

    def one(body: bytes) -> None:
        barrier.wait()
        t = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        post(conn, body, token)
        conn.close()
        with lock:
            out.append(time.perf_counter() - t)

    threads = [threading.Thread(target=one, args=(b,)) for b in bodies]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return out


def machine() -> str:
    try:
        info = Path("/proc/cpuinfo").read_text()
        model = next(ln.split(":", 1)[1].strip() for ln in info.splitlines() if "model name" in ln)
    except (OSError, StopIteration):
        model = "?"
    return f"{os.cpu_count()} CPUs, {model}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--home", type=Path, help="reuse this state folder's index")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if not (hook_bench.EVAL / "dev" / "notes").is_dir():
        print(f"skipped: {hook_bench.EVAL / 'dev' / 'notes'} is missing")
        return 0
    home = args.home or Path(tempfile.mkdtemp(prefix="precedents-bench-http-"))
    rows = -1
    if not (home / "index").exists():
        print(f"building a {args.chunks}-chunk index in {home} ...", flush=True)
        rows = hook_bench.build_index(home, args.chunks)
    port = free_port()
    (home / "config.toml").write_text(f"http_port = {port}\n")
    from precedents.query_daemon.http import ensure_secret

    token = ensure_secret(home)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
    env["PRECEDENTS_HOME"] = str(home)
    daemon = hook_bench.start_daemon(home)
    try:
        hook_bench.wait_ready(home)
        bodies = [
            json.dumps(
                {
                    "prompt": t,
                    "cwd": hook_bench.PROJECT,
                    "hook_event_name": "UserPromptSubmit",
                    "session_id": "bench",
                }
            ).encode()
            for t in hook_bench.questions()
        ]
        for b in bodies[:5]:  # warm the page cache and the daemon's row subset
            hook_bench.hook_once(b, env)
        http_persistent(port, bodies, token, 5)
        seq, injected = [], 0
        for i in range(args.runs):
            elapsed, out = hook_bench.hook_once(bodies[i % len(bodies)], env)
            seq.append(elapsed)
            injected += bool(out)
        keep, http_injected = http_persistent(port, bodies, token, args.runs)
        fresh = http_fresh(port, bodies, token, args.runs)
        conc_hook: list[float] = []
        conc_http: list[float] = []
        for r in range(6):
            batch = [bodies[(r * 10 + j) % len(bodies)] for j in range(10)]
            conc_hook += hook_bench.concurrent(batch, env)
            time.sleep(0.3)
            conc_http += http_concurrent(port, batch, token)
            time.sleep(0.3)
        result: dict[str, Any] = {
            "chunks": rows,
            "machine": machine(),
            "load_avg_1m": round(os.getloadavg()[0], 2),
            "command hook": hook_bench.stats(seq),
            "http, one kept-alive connection": hook_bench.stats(keep),
            "http, a new connection each": hook_bench.stats(fresh),
            "command hook, 10 at once": hook_bench.stats(conc_hook),
            "http, 10 at once (new connections)": hook_bench.stats(conc_http),
            "injected (command / http)": f"{injected}/{args.runs} / {http_injected}/{args.runs}",
        }
    finally:
        daemon.terminate()
        daemon.wait(30)
    print(f"{'':38} {'p50':>7} {'p95':>7} {'max':>7}  n   (ms)")
    for label, value in result.items():
        if isinstance(value, dict):
            print(f"{label:38} {value['p50']:7} {value['p95']:7} {value['max']:7}  {value['n']}")
    print(json.dumps({k: v for k, v in result.items() if not isinstance(v, dict)}))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
