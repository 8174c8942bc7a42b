"""The file hook (PreToolUse of Read/Edit/Write) end to end, beside a stub and the prompt hook.

Issue #18's bar: the file hook's added latency, warm p50, measured in the
same run as a stub hook (``python -I -S -c pass``: process start, the floor
on this machine). Every sample is one hook process exactly as Claude Code
starts it (``python -I -S .../hook/launch.py file``), with a PreToolUse stdin
as Claude Code 2.1.332 sends it; each sample is a session of its own, so the
daemon matches and formats every time (nothing is withheld as given).

The index: one real project's rule files (a rules-wild fixture tree, copied
into a git folder and indexed with the real model) plus notes that name files
(real, so the name index is exercised) and synthetic filler up to
``--chunks`` rows.

    .venv/bin/python bench/file_hook.py [--chunks 10000] [--runs 60] [--project NAME]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hook import hook_once, start_daemon, startup_baseline, stats, wait_ready

REPO = Path(__file__).resolve().parents[1]
WILD = REPO / "tests" / "fixtures" / "rules-wild"
DEFAULT_PROJECT = "getsentry__sentry-javascript"


def traces(project: str) -> list[dict[str, Any]]:
    path = WILD / project / "TRACES.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def build(home: Path, repo: Path, project: str, chunks: int) -> int:
    """The project's rules (real vectors) + notes naming its files + filler rows."""
    import numpy as np

    from precedents.config import load_settings
    from precedents.ingest.indexer import Indexer
    from precedents.ingest.sources import Sources, configured_sources, walk
    from precedents.models.embedding import load_embedder
    from precedents.rules.scope import named_scope
    from precedents.store import DocumentRecord, FileRecord, Store

    shutil.copytree(WILD / project / "tree", repo)
    (repo / ".git").mkdir()
    os.environ["PRECEDENTS_HOME"] = str(home)
    settings = load_settings(discover_claude=False)
    embedder = load_embedder(settings.model_spec())
    store = Store(settings.index_dir, embedder.model_id, embedder.dimension)
    Indexer(settings, store, embedder).sync(
        walk(configured_sources(settings, Sources(project=str(repo))))
    )
    files = [t["file"] for t in traces(project)]
    rng = np.random.default_rng(7)
    items = []
    for i in range(max(0, (chunks - store.count()) // 6)):
        path = f"{repo}/.bench/note-{i:05d}.md"
        named = " ".join(f"see src/module{(i + k) % 997}/file{k}.ts" for k in range(5))
        if i % 50 == 0:  # a few notes name the traced files themselves
            named += f" and {files[i % len(files)]}"
        vecs = rng.standard_normal((6, embedder.dimension)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        scope = named_scope(named).to_json()
        doc = DocumentRecord("note", str(repo), path, f"synthetic {i}", "filler", scope=scope)
        file = FileRecord(path, "note", str(repo), f"{i:064x}", 100, 6, time.time())
        items.append((file, doc, [f"synthetic text {i} part {j}" for j in range(6)], vecs))
    store.replace_documents(items)
    store.maybe_compact(force=True)
    return store.count()


def stub(env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], env=env, check=True)
    return time.perf_counter() - started


def file_stdin(repo: Path, trace: dict[str, Any], session: str) -> bytes:
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": f"/tmp/{session}.jsonl",
            "cwd": str(repo),
            "hook_event_name": "PreToolUse",
            "tool_name": trace["tool"],
            "tool_input": {"file_path": str(repo / trace["file"])},
            "tool_use_id": f"toolu_{session}",
        }
    ).encode()


def prompt_stdin(repo: Path, text: str, session: str) -> bytes:
    return json.dumps(
        {
            "prompt": text,
            "cwd": str(repo),
            "hook_event_name": "UserPromptSubmit",
            "session_id": session,
        }
    ).encode()


def in_daemon(home: Path, repo: Path, project: str) -> dict[str, Any]:
    """Recall.file_context alone (no process, no socket): what matching costs."""
    from precedents.config import load_settings
    from precedents.recall.core import Recall

    os.environ["PRECEDENTS_HOME"] = str(home)
    recall = Recall(load_settings(discover_claude=False))
    samples = []
    for i, t in enumerate(traces(project) * 5):
        started = time.perf_counter()
        recall.file_context(str(repo), str(repo / t["file"]), session=f"in-{i}")
        samples.append(time.perf_counter() - started)
    recall.close()
    return {"file_context_ms": stats(samples)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--project", default=DEFAULT_PROJECT, help="a rules-wild fixture")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="precedents-bench-file-"))
    home, repo = root / "state", root / "repo"
    print(f"building a {args.chunks}-chunk index in {home} ...", flush=True)
    rows = build(home, repo, args.project, args.chunks)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
    env["PRECEDENTS_HOME"] = str(home)
    touched = traces(args.project)
    prompts = [f"change how {t['file']} handles errors" for t in touched]
    daemon = start_daemon(home)
    try:
        wait_ready(home)
        for i in range(5):  # warm the page cache and the daemon
            hook_once(file_stdin(repo, touched[i % len(touched)], f"warm-{i}"), env, "file")
        samples: dict[str, list[float]] = {"stub": [], "file": [], "prompt": []}
        given = 0
        for i in range(args.runs):  # interleaved: each kind sees the same machine
            samples["stub"].append(stub(env))
            touch = file_stdin(repo, touched[i % len(touched)], f"s{i}")
            elapsed, out = hook_once(touch, env, "file")
            samples["file"].append(elapsed)
            given += bool(out)
            message = prompt_stdin(repo, prompts[i % len(prompts)], f"p{i}")
            elapsed, _ = hook_once(message, env, "prompt")
            samples["prompt"].append(elapsed)
        figures = {k: stats(v) for k, v in samples.items()}
        result = {
            "project": args.project,
            "chunks": rows,
            "cpus": os.cpu_count(),
            "load_avg_1m": round(os.getloadavg()[0], 2),
            "startup_ms": startup_baseline(env),
            "stub_hook_ms": figures["stub"],
            "file_hook_ms": figures["file"],
            "prompt_hook_ms": figures["prompt"],
            "file_hook_added_p50_ms": round(figures["file"]["p50"] - figures["stub"]["p50"], 1),
            "file_hook_gave_something": f"{given}/{args.runs}",
        }
    finally:
        daemon.terminate()
        daemon.wait(30)
    result["in_daemon"] = in_daemon(home, repo, args.project)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
