"""Rule glob compilation and the file hook's matching with 10,000 and 100,000 rules (issue #28).

What the daemon does per snapshot, in process, on synthetic rule rows (Cursor
rules `src/mN/**/*.ts`, one `src/api/**` rule that must keep matching):

* build: the snapshot's :class:`FileScopes` made, and (after issue #28) its
  globs compiled, as the refresh thread does; then a rebuild after one rule
  changed (an index change), reusing the previous snapshot's compiled globs;
* first call: the file hook's first match after each build. Before issue #28
  globs compiled lazily, on that call: the silence the issue measured;
* p50/p95: the file hook's match (``attached`` + ``naming``) once warm.

With ``--daemon``: the same rules in a real index (random vectors: the file
hook reads none), the real daemon started on it, and the file hook run as
Claude Code runs it (``launch.py file``) every 0.2 s for ``--seconds`` from
the moment the daemon is ready, then again after a rule is added (an index
change): each call's time, and how long until the rules are given.

Runs against whichever ``precedents`` is first on the path, so the same script
measures the code before the fix (``PYTHONPATH=/path/to/old/src``) and after.

    .venv/bin/python bench/globs.py [--rules 10000 100000] [--calls 200]
                                    [--shape folders|anywhere] [--daemon --seconds 30]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import sys
import time
from typing import Any

from precedents.recall.files import FileScopes
from precedents.rules.scope import rule_scope

PROJECT = "/bench/repo"


SHAPES = {
    "folders": "src/m{i}/**/*.{ext}",  # each rule in a folder of its own
    "anywhere": "**/*.{ext}{i}",  # each rule may match any file: no prefix to file it under
}
SHAPE = SHAPES["folders"]


def rows(n: int, changed: int = -1) -> list[dict[str, Any]]:
    """``n`` rule rows as a snapshot holds them; rule ``changed`` gets another glob."""
    out = []
    for i in range(n):
        glob = SHAPE.format(i=i, ext="tsx" if i == changed else "ts")
        if i == 0:
            glob = "src/api/**"
        scope = rule_scope("cursor", "", {"globs": glob})  # no description: files only
        out.append(
            {
                "path": f"{PROJECT}/.cursor/rules/r{i:06d}.mdc",
                "kind": "rule",
                "project": PROJECT,
                "name": f"r{i}",
                "description": f"rule {i}",
                "date": "",
                "adr_id": "",
                "scope": scope.to_json(),
                "source_hash": f"{i:x}",
            }
        )
    return out


def build(meta: list[dict[str, Any]], previous: FileScopes | None) -> tuple[FileScopes, float]:
    started = time.perf_counter()
    scopes = FileScopes(meta)
    compile_ = getattr(scopes, "compile", None)
    if compile_ is not None:  # after issue #28: the refresh thread compiles
        compile_(previous)
    return scopes, time.perf_counter() - started


def hook(scopes: FileScopes, rel: str) -> list[str]:
    keys = (PROJECT,)
    found = [*scopes.attached(keys, rel), *scopes.naming(keys, rel)]
    return [s.record.path for s in found]


def timed(scopes: FileScopes, rel: str) -> tuple[float, list[str]]:
    started = time.perf_counter()
    got = hook(scopes, rel)
    return time.perf_counter() - started, got


def pct(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": round(statistics.median(ordered) * 1000, 2),
        "p95": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 2),
    }


def unranked(scopes: FileScopes, touched: list[str]) -> float:
    """The prompt hook's part: which rules a message must not rank, 256 files touched."""
    started = time.perf_counter()
    scopes.unranked((PROJECT,), touched, "why does src/api/users.ts fail in b.ts?", PROJECT)
    return time.perf_counter() - started


def measure(n: int, calls: int) -> dict[str, Any]:
    rng = random.Random(7)
    first_rows = rows(n)
    scopes, built = build(first_rows, None)
    first, got = timed(scopes, "src/api/users.ts")
    assert got == [f"{PROJECT}/.cursor/rules/r000000.mdc"], got
    paths = ["src/api/users.ts", *(f"src/m{rng.randrange(n)}/a/b.ts" for _ in range(calls))]
    warm = [timed(scopes, p)[0] for p in paths]
    changed, rebuilt = build(rows(n, changed=n // 2), scopes)
    again, got = timed(changed, "src/api/users.ts")
    assert got == [f"{PROJECT}/.cursor/rules/r000000.mdc"], got
    after = [timed(changed, p)[0] for p in paths]
    touched = [f"src/m{rng.randrange(n)}/x/{i}.py" for i in range(256)]
    prompt = [unranked(changed, touched) for _ in range(max(5, calls // 20))]
    return {
        "rules": n,
        "build_s": round(built, 2),
        "first_call_ms": round(first * 1000, 1),
        "hook_ms": pct(warm),
        "rebuild_one_changed_s": round(rebuilt, 2),
        "first_call_after_change_ms": round(again * 1000, 1),
        "hook_after_change_ms": pct(after),
        "prompt_unranked_256_touched_ms": pct(prompt),
        "compiled": sum(bool(getattr(s.scope, "compiled", True)) for s in changed.of((PROJECT,))),
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def daemon_run(n: int, seconds: float) -> dict[str, Any]:
    """The real daemon and hook over ``n`` rules: each file hook's time, and when it
    first gave the `src/api/**` rule, after the start and after an index change."""
    import shutil
    import tempfile
    from pathlib import Path

    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from hook import hook_once, start_daemon, wait_ready
    from precedents.config import load_settings
    from precedents.models.embedding import load_embedder
    from precedents.store import DocumentRecord, FileRecord, Store

    root = Path(tempfile.mkdtemp(prefix="precedents-bench-globs-"))
    home, repo = root / "state", root / "repo"
    (repo / ".git").mkdir(parents=True)
    os.environ["PRECEDENTS_HOME"] = str(home)
    embedder = load_embedder(load_settings(discover_claude=False).model_spec())
    store = Store(
        load_settings(discover_claude=False).index_dir, embedder.model_id, embedder.dimension
    )
    rng = np.random.default_rng(7)

    def items(meta: list[dict[str, Any]]) -> list[Any]:
        out = []
        vecs = rng.standard_normal((len(meta), 1, embedder.dimension)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=2, keepdims=True)
        for row, vec in zip(meta, vecs, strict=True):
            path = row["path"].replace(PROJECT, str(repo))
            doc = DocumentRecord(
                "rule", str(repo), path, row["name"], row["description"], scope=row["scope"]
            )
            file = FileRecord(
                path, "rule", str(repo), f"{abs(hash(path)):064x}", 10, 1, time.time()
            )
            out.append((file, doc, [row["description"]], vec))
        return out

    store.replace_documents(items(rows(n)))
    store.maybe_compact(force=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
    env.update(PRECEDENTS_HOME=str(home), PRECEDENTS_HOOK_BUDGET_MS="30000")

    def calls(rel: str, want: str) -> dict[str, Any]:
        started, took, given = time.monotonic(), [], None
        while time.monotonic() - started < seconds:
            stdin = json.dumps(
                {
                    "session_id": f"b{len(took)}-{time.monotonic()}",
                    "cwd": str(repo),
                    "hook_event_name": "PreToolUse",
                    "tool_name": "Read",
                    "tool_input": {"file_path": str(repo / rel)},
                }
            ).encode()
            elapsed, out = hook_once(stdin, env, "file")
            took.append(elapsed)
            if given is None and want.encode() in out:
                given = time.monotonic() - started
            time.sleep(0.2)
        return {
            "calls": len(took),
            "hook_ms": pct(took),
            "max_ms": round(max(took) * 1000),
            "rule_given_after_s": None if given is None else round(given, 1),
        }

    daemon = start_daemon(home)
    try:
        wait_ready(home)
        after_start = calls("src/api/users.ts", "r000000.mdc")
        extra = rows(n + 1)[n:]
        extra[0]["scope"] = rule_scope("cursor", "", {"globs": "lib/**"}).to_json()
        store.replace_documents(items(extra))
        after_change = calls("lib/a.ts", f"r{n:06d}.mdc")
    finally:
        daemon.terminate()
        daemon.wait(30)
        shutil.rmtree(root, ignore_errors=True)
    return {"rules": n, "after_start": after_start, "after_index_change": after_change}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rules", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="folders")
    parser.add_argument("--daemon", action="store_true", help="the real daemon and hook")
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    global SHAPE
    SHAPE = SHAPES[args.shape]
    if args.daemon:
        for n in args.rules:
            result = daemon_run(n, args.seconds)
            result["load_avg_1m"] = round(os.getloadavg()[0], 2)
            print(json.dumps(result), flush=True)
        return 0
    import precedents

    print(f"precedents from {os.path.dirname(precedents.__file__)}", file=sys.stderr)
    for n in args.rules:
        result = measure(n, args.calls)
        result["shape"] = args.shape
        result["load_avg_1m"] = round(os.getloadavg()[0], 2)
        print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
