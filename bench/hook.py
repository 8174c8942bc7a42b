"""Hook end to end with a warm daemon on a 10k-chunk index (SPEC §7 bars).

Each sample is one hook process exactly as Claude Code starts it (the
registered exec form: ``python -I -S .../precedents/hook/launch.py prompt``),
timed from process start to exit, i.e. until its JSON is printed and it is
gone. Also: 10 hooks started at once, and the daemon's own search against
``Store.search`` on the same rows.

The index: the dev notes embedded with the bundled model (real vectors, so the
hook really injects) plus synthetic chunks with random unit vectors up to
``--chunks`` rows (search time depends on rows and dimension, not content).

    .venv/bin/python bench/hook.py [--chunks 10000] [--runs 60] [--json out.json]
                                   [--conversations DIR]

``--conversations DIR``: also index DIR's Claude Code transcripts as the
project's conversation logs (real text, so the word index that ranks them is
real: e.g. the LoCoMo sessions that ``research/precedents_research/locomo_eval.py
--work W`` wrote under ``W/conversations/*``, copied into one folder, or the
decisions set's chats, ``research/precedents_research/decisions_set.py --decoys N``).

``--repo DIR``: the project is that git repository, and its decision commits are
indexed too (issue #27: e.g. the 100,000-commit repository bench/commits.py builds).
"""

from __future__ import annotations

import argparse
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
EVAL = REPO.parent / "shared" / "eval"
LAUNCHER = REPO / "src" / "precedents" / "hook" / "launch.py"
PROJECT = "/bench/project"


def stats(samples_s: list[float]) -> dict[str, float]:
    """p50, p95 and max in milliseconds."""
    ms = sorted(s * 1000 for s in samples_s)
    return {
        "p50": round(statistics.median(ms), 1),
        "p95": round(ms[round(0.95 * (len(ms) - 1))], 1),
        "max": round(ms[-1], 1),
        "n": len(ms),
    }


def questions(crosslingual: bool = False) -> list[str]:
    path = EVAL / "dev" / ("crosslingual.jsonl" if crosslingual else "questions.jsonl")
    return [json.loads(line)["text"] for line in path.read_text().splitlines() if line.strip()]


def notes_folder(home: Path, crosslingual: bool) -> Path:
    """The dev notes; with ``crosslingual``, ten of them in their Japanese version (as the
    crosslingual eval set has them), so questions also go through the multilingual model."""
    if not crosslingual:
        return EVAL / "dev" / "notes"
    import shutil

    folder = home / "bench-notes"
    shutil.copytree(EVAL / "dev" / "notes", folder, dirs_exist_ok=True)
    for ja in (EVAL / "dev" / "notes_ja").glob("*.md"):
        shutil.copy(ja, folder / ja.name)
    return folder


def build_index(
    home: Path,
    chunks: int,
    crosslingual: bool = False,
    conversations: Path | None = None,
    repo: Path | None = None,
) -> int:
    """Dev notes (real vectors) + synthetic filler up to ``chunks`` rows; returns the row count."""
    import numpy as np

    from precedents.config import load_settings
    from precedents.ingest.indexer import Indexer
    from precedents.ingest.sources import Sources, configured_sources, walk
    from precedents.models.embedding import load_embedder
    from precedents.store import DocumentRecord, FileRecord, Store

    os.environ["PRECEDENTS_HOME"] = str(home)
    settings = load_settings(discover_claude=False)
    embedder = load_embedder(settings.model_spec())
    store = Store(settings.index_dir, embedder.model_id, embedder.dimension)
    notes = notes_folder(home, crosslingual)
    logs = [conversations] if conversations else []
    sources = configured_sources(
        settings, Sources(notes=[notes], conversations=logs, project=PROJECT)
    )
    indexer = Indexer(settings, store, embedder)
    indexer.sync(walk(sources))
    if repo is not None:
        started = time.perf_counter()
        report = indexer.sync_commits([str(repo)])
        print(
            f"commits of {repo}: {report.commits_indexed} record(s) in "
            f"{time.perf_counter() - started:.1f} s",
            flush=True,
        )
    have = store.count()
    rng = np.random.default_rng(7)
    items = []
    n_docs = max(0, (chunks - have) // 6)
    for i in range(n_docs):
        path = f"/bench/synthetic/note-{i:05d}.md"
        vecs = rng.standard_normal((6, embedder.dimension)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        doc = DocumentRecord("note", PROJECT, path, f"synthetic {i}", "filler row")
        file = FileRecord(path, "note", PROJECT, f"{i:064x}", 100, 6, time.time())
        items.append((file, doc, [f"synthetic text {i} part {j}" for j in range(6)], vecs))
    store.replace_documents(items)
    store.maybe_compact(force=True)
    return store.count()


def hook_once(stdin: bytes, env: dict[str, str], mode: str = "prompt") -> tuple[float, bytes]:
    """One hook process as Claude Code starts it: seconds to its exit, and its stdout."""
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-I", "-S", str(LAUNCHER), mode],
        input=stdin,
        capture_output=True,
        env=env,
        check=False,
    )
    return time.perf_counter() - started, proc.stdout


def concurrent(stdins: list[bytes], env: dict[str, str]) -> list[float]:
    """Start all hooks at once; each one's time from its start to its exit."""
    procs = []
    for stdin in stdins:
        started = time.perf_counter()
        p = subprocess.Popen(
            [sys.executable, "-I", "-S", str(LAUNCHER), "prompt"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        procs.append((started, p, stdin))
    for _, p, stdin in procs:
        assert p.stdin is not None
        p.stdin.write(stdin)
        p.stdin.close()
    out = []
    for started, p, _ in procs:
        p.wait()
        out.append(time.perf_counter() - started)
    return out


def startup_baseline(env: dict[str, str]) -> dict[str, float]:
    """What the interpreter alone costs here, for reading the figures honestly."""
    res = {}
    for label, args in (("python -c pass", []), ("python -I -S -c pass", ["-I", "-S"])):
        samples = []
        for _ in range(10):
            t = time.perf_counter()
            subprocess.run([sys.executable, *args, "-c", "pass"], env=env, check=True)
            samples.append(time.perf_counter() - t)
        res[label] = round(statistics.median(samples) * 1000, 1)
    return res


def search_comparison(home: Path) -> dict[str, Any]:
    """The daemon's numpy search against Store.search, same rows, same query vectors."""
    from precedents.config import load_settings
    from precedents.ingest.sources import project_keys
    from precedents.recall.core import Recall

    os.environ["PRECEDENTS_HOME"] = str(home)
    # batch=True: the daemon's own set-up (one torch thread, a warmed model).
    recall = Recall(load_settings(discover_claude=False), batch=True)
    keys = project_keys(PROJECT)
    texts = questions()
    vectors = [recall.embed(t) for t in texts]
    recall.snapshot.rank(vectors[0], keys)  # builds the project's row subset once
    out: dict[str, Any] = {}
    for label, fn in (("numpy (daemon)", lambda v: recall.snapshot.rank(v, keys)),):
        samples = []
        for i in range(100):
            t = time.perf_counter()
            fn(vectors[i % len(vectors)])
            samples.append(time.perf_counter() - t)
        out[label] = stats(samples)
    embeds = []
    for i in range(60):
        t = time.perf_counter()
        recall.embed(texts[i % len(texts)])
        embeds.append(time.perf_counter() - t)
    out["embed (1 thread)"] = stats(embeds)
    return out


def wait_ready(home: Path, limit_s: float = 300) -> None:
    """Until the daemon on ``home`` says it is ready (model loaded, index read)."""
    from precedents import protocol

    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            if protocol.ask({"op": "ping"}, 2, home / "run").get("ready"):
                return
        except protocol.Unavailable:
            pass
        time.sleep(0.2)


def start_daemon(home: Path) -> subprocess.Popen[bytes]:
    """The daemon as the hook starts it, on ``home``, with no other precedents settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
    env.update(PRECEDENTS_HOME=str(home), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    return subprocess.Popen(
        [sys.executable, "-m", "precedents.query_daemon"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def use_model(home: Path, model: str) -> None:
    """Make ``model`` the state folder's model (its config.toml) and set it up there
    (`precedents setup --model`: a parted model is fetched and assembled)."""
    from precedents.models.embedding import setup_model

    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f"model = {json.dumps(model)}\n", encoding="utf-8")
    os.environ["PRECEDENTS_HOME"] = str(home)
    setup_model(model)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--home", type=Path, help="reuse this state folder's index")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--crosslingual", action="store_true", help="ten notes in Japanese, English questions"
    )
    parser.add_argument("--conversations", type=Path, help="index these transcripts too")
    parser.add_argument("--repo", type=Path, help="the project: this git repository's commits")
    parser.add_argument("--model", help="another embedding model (set up in the state folder)")
    args = parser.parse_args()
    if not (EVAL / "dev" / "notes").is_dir():
        print(f"skipped: {EVAL / 'dev' / 'notes'} is missing")
        return 0
    global PROJECT
    if args.repo:
        PROJECT = str(args.repo.absolute())
    home = args.home or Path(tempfile.mkdtemp(prefix="precedents-bench-hook-"))
    if args.model:
        use_model(home, args.model)
    if not (home / "index").exists():
        print(f"building a {args.chunks}-chunk index in {home} ...", flush=True)
        rows = build_index(home, args.chunks, args.crosslingual, args.conversations, args.repo)
    else:
        rows = -1
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
    env["PRECEDENTS_HOME"] = str(home)  # the hooks' environment, as Claude Code gives it
    daemon = start_daemon(home)
    try:
        wait_ready(home)
        texts = questions(args.crosslingual)
        # A session of its own for every sample: a record is given once per session,
        # and a repeated question in one session would measure a withheld answer.
        stdins = [
            json.dumps(
                {
                    "prompt": texts[i % len(texts)],
                    "cwd": PROJECT,
                    "hook_event_name": "UserPromptSubmit",
                    "session_id": f"bench-{i}",
                }
            ).encode()
            for i in range(max(args.runs, 60) + 5)
        ]
        for s in stdins[:5]:  # warm the page cache and the daemon's row subset
            hook_once(s.replace(b'"bench-', b'"warm-'), env)
        seq, injected = [], 0
        for i in range(args.runs):
            elapsed, out = hook_once(stdins[i % len(stdins)], env)
            seq.append(elapsed)
            injected += bool(out)
        conc: list[float] = []
        for r in range(6):
            conc += concurrent([stdins[(r * 10 + j) % len(stdins)] for j in range(10)], env)
            time.sleep(0.3)
        result = {
            "chunks": rows,
            "cpus": os.cpu_count(),
            "load_avg_1m": round(os.getloadavg()[0], 2),
            "startup_ms": startup_baseline(env),
            "hook_sequential_ms": stats(seq),
            "hook_injected": f"{injected}/{args.runs}",
            "hook_10_at_once_ms": stats(conc),
        }
    finally:
        daemon.terminate()
        daemon.wait(30)
    result["in_daemon_ms"] = search_comparison(home)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
