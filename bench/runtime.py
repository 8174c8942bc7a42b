"""The bundled MiniLM on torch (fp32) and on ONNX Runtime (int8), side by side, in one run.

For each runtime, in fresh processes (docs/runtime.md):

- the int8 model file's build, once, into an empty folder;
- a process from start to its first query vector, its RSS after loading and
  after 1,000 single queries (one at a time, as the daemon embeds them), and
  the query latency;
- embedding throughput over ~1,000 real chunks (700 characters, as indexed);
- the daemon from start to its first answer over a small store, and its RSS.

    .venv/bin/python bench/runtime.py [--chunks 1000] [--queries 1000] [--json]
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
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
RUNTIMES = ("torch", "onnx")
QUESTION = "can I store prices as floats?"


def real_chunks(limit: int) -> list[str]:
    """~``limit`` 700-character chunks of real records: the shared eval notes, rules and
    ADRs when ../shared is there, else the demo corpus (fewer)."""
    roots = [SHARED / "eval", SHARED / "adr-corpora"]
    files = sorted(
        p for r in roots if r.is_dir() for p in r.rglob("*") if p.suffix in (".md", ".mdc")
    )
    files = files or sorted((REPO / "examples").rglob("*.md"))
    out: list[str] = []
    for path in files:
        text = path.read_text(errors="replace")
        out += [text[i : i + 700] for i in range(0, len(text), 600)][:6]
        if len(out) >= limit:
            break
    return out[:limit]


def questions() -> list[str]:
    path = SHARED / "eval" / "dev" / "questions.jsonl"
    if path.is_file():
        return [json.loads(line)["text"] for line in path.read_text().splitlines() if line]
    return [QUESTION, "how do I run database migrations?", "should we add a new queue?"]


def memory(pid: int | str = "self") -> dict[str, float]:
    """VmRSS and VmHWM (peak) in MiB (Linux)."""
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = round(int(value.split()[0]) / 1024, 1)
    return out


def _torch_threads(n: int | None = None) -> int | None:
    """torch's thread count (set it to ``n``), or None when torch is not loaded."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    if n is not None:
        torch.set_num_threads(n)
    return int(torch.get_num_threads())


def worker(runtime: str, started: float, chunks: int, queries: int) -> dict[str, Any]:
    """One fresh process: load, first vector, RSS, 1,000 queries, throughput."""
    from precedents.config import ModelSpec
    from precedents.models.embedding import load_embedder
    from precedents.recall.batcher import daemon_threads

    spec = ModelSpec(runtime=runtime)
    model = load_embedder(spec)
    model.encode_queries([QUESTION])
    first = time.time() - started
    loaded = memory()
    # Queries one at a time with the daemon's thread settings (torch: one thread;
    # without it, two spinning threads on a busy 2-core box took ~0.9 s a query).
    threads = _torch_threads()
    daemon_threads(model, spec.torch_threads)
    asks = questions()
    lat = []
    for i in range(queries):
        t = time.perf_counter()
        model.encode_queries([asks[i % len(asks)]])
        lat.append((time.perf_counter() - t) * 1000)
    after = memory()
    _torch_threads(threads)  # indexing runs with torch's default threads
    texts = real_chunks(chunks)
    wall, cpu = time.perf_counter(), time.process_time()
    model.encode_passages(texts)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    lat.sort()
    return {
        "model": model.model_id,
        "torch imported": "torch" in sys.modules,
        "start to first vector s": round(first, 2),
        "model load s": round(model.load_seconds, 2),
        "RSS after load MiB": loaded["VmRSS"],
        f"RSS after {queries} queries MiB": after["VmRSS"],
        "peak RSS MiB": memory()["VmHWM"],
        "query p50 / p95 ms": f"{lat[len(lat) // 2]:.1f} / {lat[int(len(lat) * 0.95)]:.1f}",
        "chunks": len(texts),
        "chunks/s": round(len(texts) / wall, 1),
        "chunks per CPU-second": round(len(texts) / cpu, 1),
    }


def env_for(home: Path, runtime: str, claude: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
    env.update(
        PRECEDENTS_HOME=str(home),
        PRECEDENTS_RUNTIME=runtime,
        PRECEDENTS_CLAUDE_DIR=str(claude),
        HF_HUB_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
    )
    return env


def build_once(cache: Path) -> float:
    """Seconds to build the int8 model file into an empty folder (its own process)."""
    code = (
        "import sys, time\nfrom pathlib import Path\n"
        "from precedents.models.embedding import bundled_model_path\n"
        "from precedents.models.onnx_embedder import ensure_model_file\n"
        "t = time.perf_counter()\n"
        "ensure_model_file(bundled_model_path('all-MiniLM-L6-v2'), Path(sys.argv[1]))\n"
        "print(time.perf_counter() - t)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, str(cache)], capture_output=True, text=True, check=True
    )
    return float(run.stdout.strip().splitlines()[-1])


def daemon_first_answer(home: Path, runtime: str, claude: Path) -> dict[str, Any]:
    """Index the demo corpus, then start the daemon and time its first answer."""
    from precedents import protocol

    env = env_for(home, runtime, claude)
    demo = REPO / "examples"
    cmd = [sys.executable, "-m", "precedents.cli", "reindex", "--project", str(REPO)]
    cmd += ["--notes", str(demo / "notes"), "--rules", str(demo / "rules")]
    cmd += ["--adrs", str(demo / "adr")]
    subprocess.run(
        cmd,
        env=env,
        capture_output=True,
        check=True,
    )
    started = time.monotonic()
    daemon = subprocess.Popen(
        [sys.executable, "-m", "precedents.query_daemon"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    request = {"op": "context", "prompt": QUESTION, "cwd": str(REPO)}
    try:
        while True:
            try:
                if protocol.ask({"op": "ping"}, 2, home / "run").get("ready"):
                    answer = protocol.ask(request, 10, home / "run")
                    break
            except protocol.Unavailable:
                pass
            if time.monotonic() - started > 300:
                raise SystemExit("the daemon did not become ready")
            time.sleep(0.05)
        first = time.monotonic() - started
        idle = memory(daemon.pid)
        asks = questions()
        for i in range(100):
            protocol.ask({**request, "prompt": asks[i % len(asks)]}, 10, home / "run")
        after = memory(daemon.pid)
    finally:
        daemon.terminate()
        daemon.wait(30)
    return {
        "daemon start to first answer s": round(first, 2),
        "daemon answered": bool(answer.get("context")),
        "daemon RSS ready MiB": idle["VmRSS"],
        "daemon RSS after 100 questions MiB": after["VmRSS"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--worker", choices=RUNTIMES, help=argparse.SUPPRESS)
    parser.add_argument("--started", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.started, args.chunks, args.queries)))
        return 0
    if not Path("/proc/self/status").exists():
        print("skipped: needs /proc (Linux)")
        return 0
    root = Path(tempfile.mkdtemp(prefix="precedents-bench-runtime-"))
    claude = root / "claude"
    claude.mkdir()
    results: dict[str, dict[str, Any]] = {r: {} for r in RUNTIMES}
    results["onnx"]["int8 model build s (once)"] = round(build_once(root / "build"), 2)
    for runtime in RUNTIMES:
        home = root / runtime
        env = env_for(home, runtime, claude)
        # The model file exists before the timed runs (built once per install).
        subprocess.run(
            [
                sys.executable,
                "-c",
                "from precedents.config import load_settings as s\n"
                "from precedents.models.embedding import load_embedder as l\n"
                "l(s().model_spec())",
            ],
            env=env,
            check=True,
            capture_output=True,
        )
        cmd = [sys.executable, __file__, "--worker", runtime, "--started", str(time.time())]
        cmd += ["--chunks", str(args.chunks), "--queries", str(args.queries)]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        results[runtime].update(json.loads(out.stdout.strip().splitlines()[-1]))
        results[runtime].update(daemon_first_answer(home, runtime, claude))
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {os.cpu_count()} CPUs")
    keys = list(dict.fromkeys(k for r in RUNTIMES for k in results[r]))
    width = max(len(k) for k in keys)
    print(f"{'':{width}}  {'torch fp32':>22}  {'onnx int8':>22}")
    for key in keys:
        cells = [str(results[r].get(key, "")) for r in RUNTIMES]
        print(f"{key:{width}}  {cells[0]:>22}  {cells[1]:>22}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
