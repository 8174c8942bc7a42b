"""A saved note searchable: seconds from the write to a daemon-style reader finding it.

A running :class:`Watcher` (default timing, real bundled model) watches a copy
of the dev notes. Each run writes a note (new files and rewrites of existing
ones, alternating) whose front-matter name is unique, then polls a separate
``Store(reader=True)`` (as the query daemon opens it) until a search returns
that path under that name. Query vectors are computed before the clock starts:
what is measured is watchdog + debounce + embedding + commit + reader refresh.

With ``--daemon`` the reader is the real query daemon (a subprocess, as the
hook starts it), asked with `query` until it answers with the note: the
daemon reads the store through an export child (recall/exported.py), so this
is the figure a user meets.

With ``--child`` the watcher indexes as ``precedents watch`` does: in its child
process (watcher/child.py), kept alive between saves; with ``--cold`` too, the
child ends after 1 s idle and each save waits for a fresh one (a save after a
quiet minute: the child's start, its store and its model are in the figure).

    .venv/bin/python bench/watch.py [--runs 30] [--quiet 0.3] [--daemon] [--child [--cold]]

SPEC §7 bar: p95 <= 2 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
DEV_NOTES = REPO.parent / "shared" / "eval" / "dev" / "notes"
TOPICS = [
    "rotating the staging database credentials every quarter",
    "pinning the docker base image by digest instead of tag",
    "why the payment webhook retries use exponential backoff",
    "keeping feature flags out of the shared settings module",
    "running the nightly backup restore drill on a spare host",
]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, round(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def start_daemon(settings: object) -> subprocess.Popen[bytes]:
    """The query daemon as a subprocess over the same state, once it answers."""
    from precedents import protocol

    proc = subprocess.Popen(
        [sys.executable, "-m", "precedents.query_daemon"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    run_dir = settings.run_dir  # type: ignore[attr-defined]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if protocol.ask({"op": "ping"}, 2, run_dir).get("ready"):
                return proc
        except protocol.Unavailable:
            pass
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("the daemon did not become ready")


def ask_daemon(settings: object, text: str, project: str) -> list[tuple[str, str]]:
    """(path, name) of the daemon's top 5 for ``text`` in ``project``."""
    from precedents import protocol

    answer = protocol.ask(
        {"op": "query", "text": text, "project": project, "k": 5},
        5,
        settings.run_dir,  # type: ignore[attr-defined]
    )
    return [(r["path"], r.get("name", "")) for r in answer.get("results", [])]


def main() -> int:
    """Run the benchmark and print p50/p95/max."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--quiet", type=float, default=0.3, help="note debounce, seconds")
    parser.add_argument("--timeout", type=float, default=30.0, help="give up on one run")
    parser.add_argument("--daemon", action="store_true", help="poll the real query daemon")
    parser.add_argument("--child", action="store_true", help="index in the watcher's child")
    parser.add_argument("--cold", action="store_true", help="with --child: a fresh child a save")
    args = parser.parse_args()
    if not DEV_NOTES.is_dir():
        print(f"dev notes not found at {DEV_NOTES}", file=sys.stderr)
        return 2

    tmp = Path(tempfile.mkdtemp(prefix="precedents-bench-watch-"))
    os.environ["PRECEDENTS_HOME"] = str(tmp / "state")
    os.environ["PRECEDENTS_CLAUDE_DIR"] = str(tmp / "claude")
    notes = tmp / "notes"
    shutil.copytree(DEV_NOTES, notes)
    project = str(tmp)

    from precedents.config import load_settings
    from precedents.ingest.sources import Sources
    from precedents.models.embedding import load_embedder
    from precedents.recall import search
    from precedents.store import Store, open_store
    from precedents.watcher import Watcher, WatchTiming

    settings = load_settings()
    started = time.perf_counter()
    model = load_embedder(settings.model_spec())
    print(
        f"model {model.model_id} on {model.device}, loaded in {time.perf_counter() - started:.1f}s"
    )
    folders = Sources(notes=(notes,), project=project)
    if args.child:
        idle = 1.0 if args.cold else 60.0
        timing = WatchTiming(quiet_s=args.quiet, child_idle_s=idle)
        watcher = Watcher(settings, folders=folders, timing=timing, inline=False)
    else:
        store = open_store(settings.index_dir, model)
        timing = WatchTiming(quiet_s=args.quiet)
        watcher = Watcher(settings, folders=folders, store=store, embedder=model, timing=timing)
    started = time.perf_counter()
    watcher.start()
    watcher.wait_ready()
    print(
        f"start-up reconcile: {watcher.stats.files_indexed} notes, "
        f"{watcher.stats.chunks_embedded} chunks in {time.perf_counter() - started:.1f}s"
    )
    reader = Store(settings.index_dir, model.model_id, model.dimension, reader=True)
    daemon = start_daemon(settings) if args.daemon else None
    existing = sorted(notes.glob("*.md"))

    plans = []
    for i in range(args.runs):
        token = uuid.uuid4().hex[:8]
        name = f"Benchmark note {i} {token}"
        topic = TOPICS[i % len(TOPICS)]
        body = f"We decided on {topic}. Reference {token}.\n"
        path = notes / f"bench-{i}.md" if i % 2 == 0 else existing[i % len(existing)]
        text = f"---\nname: {name}\ndescription: {topic}\n---\n{body}"
        vector = model.encode_queries([f"{name}\n{topic}"])[0]
        plans.append((path, name, text, vector))

    latencies: list[float] = []
    polls: list[float] = []
    try:
        for i, (path, name, text, vector) in enumerate(plans):
            if args.cold:
                side = watcher.side
                deadline = time.monotonic() + 60
                while getattr(side, "pid", None) is not None and time.monotonic() < deadline:
                    time.sleep(0.05)
            t0 = time.perf_counter()
            path.write_text(text, encoding="utf-8")
            while True:
                q0 = time.perf_counter()
                if daemon is None:
                    hits = search(reader, vector, [project], k=5, kinds=["note"])
                    found = [(h.record.path, h.record.name) for h in hits]
                else:
                    found = ask_daemon(settings, f"{name}\n{text.splitlines()[2]}", project)
                polls.append(time.perf_counter() - q0)
                if (str(path), name) in found:
                    latencies.append(time.perf_counter() - t0)
                    break
                if time.perf_counter() - t0 > args.timeout:
                    print(f"run {i}: not found after {args.timeout}s", file=sys.stderr)
                    break
                time.sleep(0.01)
            time.sleep(0.2)  # let the next write start a fresh debounce window
    finally:
        if daemon is not None:
            daemon.terminate()
            daemon.wait(30)
        watcher.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    if not latencies:
        return 1
    new = latencies[0::2]
    changed = latencies[1::2]
    print(
        f"a saved note searchable, {len(latencies)}/{args.runs} runs "
        f"(debounce {args.quiet}s): p50 {percentile(latencies, 50):.3f}s, "
        f"p95 {percentile(latencies, 95):.3f}s, max {max(latencies):.3f}s "
        f"(new files p50 {statistics.median(new):.3f}s, "
        f"rewrites p50 {statistics.median(changed):.3f}s)"
    )
    print(f"reader search per poll: p50 {percentile(polls, 50) * 1000:.1f} ms")
    print(f"bar p95 <= 2 s: {'PASS' if percentile(latencies, 95) <= 2.0 else 'FAIL'}")
    return 0 if len(latencies) == args.runs else 1


if __name__ == "__main__":
    raise SystemExit(main())
