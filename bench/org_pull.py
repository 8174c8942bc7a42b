"""The daemon's pull of the organisation's index (issue #30 item 2): time, bytes, and the hook.

An S3-compatible server (moto's standalone server, a real HTTP endpoint in its
own process) holds an org table of ``--repos`` repositories × ``--records``
records (random unit vectors of the bundled model's dimension, ~400 characters
of text each: a pull's cost is bytes and rows, not content), written with Lance
in ``--commits`` appends and served through ``_precedents/served.json``. Then,
each pull being the daemon's own child (``python -m precedents.org.pull URI``),
timed from its start to its exit:

* first pull into an empty state folder (copy + snapshot export);
* the same version again (the pointer read only);
* after one repository changed (a delete and an append, served): only its files.

And the prompt hook (one process as Claude Code starts it) against a real daemon
on the dev notes, beside a stub (``python -I -S -c pass``): with no org index
configured, while its pull hangs (an endpoint that accepts and never answers),
and while it pulls the table above for real (copy and export at nice 10).

    .venv/bin/python bench/org_pull.py [--repos 500] [--records 60] [--runs 40]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hook import PROJECT, build_index, hook_once, questions, start_daemon, stats, wait_ready

REPO = Path(__file__).resolve().parents[1]
DIM = 384
TEXT = (
    "services talk to the queue through the outbox never directly payments are idempotent "
    "every charge carries a key migrations stay backwards compatible for one release"
)
WORDS = TEXT.split(" ")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def s3_server() -> Iterator[dict[str, str]]:
    """moto's server in its own process: the standard chain's environment for it."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    env = {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
    }
    try:
        for _ in range(600):
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2).close()
                break
            time.sleep(0.1)
        os.environ.update(env)
        yield env
    finally:
        proc.kill()
        proc.wait(10)


@contextlib.contextmanager
def hanging_endpoint() -> Iterator[str]:
    """Accepts connections, never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.2)
    held: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set():
            with contextlib.suppress(OSError):
                held.append(server.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        done.set()
        for conn in held:
            conn.close()
        server.close()


def repo_table(repo: str, n: int, seed: int) -> Any:
    import numpy as np
    import pyarrow as pa

    from precedents.org.table import org_schema

    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    rows = []
    for i in range(n):
        path = f"docs/adr/{i:04d}-decision.md"
        text = " ".join(WORDS[(i + j) % len(WORDS)] for j in range(60))
        rows.append(
            {
                "chunk_id": f"{repo}:{path}:0",
                "doc_id": f"{repo}:{path}",
                "kind": "adr" if i % 3 else "rule",
                "project": repo,
                "path": path,
                "name": f"{repo} decision {i} {seed}",
                "description": "",
                "date": "2025-01-01",
                "adr_id": f"ADR-{i:04d}",
                "chunk_index": 0,
                "text": text,
                "vector": vecs[i].tolist(),
                "source_hash": f"{seed}-{i}",
                "scope": "",
                "origin": "org",
                "author": "",
                "decided": "",
                "mark": "",
                "successors": "[]",
                "url": f"https://git.example.com/{repo}.git",
            }
        )
    return pa.Table.from_pylist(rows, schema=org_schema(DIM))


def serve(uri: str, repos: dict[str, int], model: str) -> int:
    import lance
    import obstore

    from precedents.org.location import OrgLocation
    from precedents.org.table import SERVED, RepoEntry, Served

    version = int(lance.dataset(f"{uri}/chunks.lance").version)
    pointer = Served(
        version=version,
        model=model,
        dimension=DIM,
        built_at=time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
        repos={r: RepoEntry(source=r, records=n) for r, n in repos.items()},
    )
    obstore.put(OrgLocation.parse(uri).store(), SERVED, pointer.to_json())
    return version


def build_table(uri: str, repos: int, records: int, commits: int, model: str) -> dict[str, int]:
    import lance
    import pyarrow as pa

    names = [f"repo-{i:04d}" for i in range(repos)]
    per = max(1, -(-repos // commits))
    for start in range(0, repos, per):
        part = pa.concat_tables([repo_table(r, records, 0) for r in names[start : start + per]])
        mode = "create" if start == 0 else "append"
        lance.write_dataset(part, f"{uri}/chunks.lance", mode=mode)
    held = dict.fromkeys(names, records)
    serve(uri, held, model)
    return held


def change_one(uri: str, repo: str, records: int) -> None:
    import lance

    dataset = lance.dataset(f"{uri}/chunks.lance")
    dataset.delete(f"project = '{repo}'")
    lance.write_dataset(repo_table(repo, records, 1), f"{uri}/chunks.lance", mode="append")


def timed_pull(home: Path, uri: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
    env["PRECEDENTS_HOME"] = str(home)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "precedents.org.pull", uri],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    # The largest resident set of any child waited for so far (the pull, its export).
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if done.returncode != 0:
        raise SystemExit(f"pull failed: {done.stderr.strip()}")
    status = json.loads((home / "org" / "status.json").read_text())
    snapshot = home / "org" / "snapshot.npz"
    return {
        "s": round(seconds, 2),
        "pull_s": status["seconds"],
        "bytes_copied": status["bytes_copied"],
        "files_copied": status["files_copied"],
        "mirror_bytes": status["mirror_bytes"],
        "snapshot_bytes": snapshot.stat().st_size,
        "records": status["records"],
        "version": status["version"],
        "children_peak_rss_mib_so_far": round(peak, 1),
    }


def hooks(home: Path, runs: int, until: Any = None) -> dict[str, Any]:
    """``runs`` prompt hooks (or as many as fit, up to ten times that, until ``until()``)."""
    texts = questions()

    def prompt_stdin(i: int) -> bytes:  # a session of its own each: nothing withheld
        return json.dumps(
            {
                "prompt": texts[i % len(texts)],
                "cwd": PROJECT,
                "hook_event_name": "UserPromptSubmit",
                "session_id": f"org-bench-{i}-{time.monotonic_ns()}",
            }
        ).encode()

    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
    env.update(PRECEDENTS_HOME=str(home), PRECEDENTS_HOOK_BUDGET_MS="2000")
    if until is None:
        for i in range(3):  # warm the page cache and the daemon's row subset
            hook_once(prompt_stdin(i), env)
    samples, injected = [], 0
    i = 0
    while (until is None and i < runs) or (until is not None and not until() and i < 10 * runs):
        took, out = hook_once(prompt_stdin(i), env)
        samples.append(took)
        injected += bool(out.strip())
        i += 1
    return {**(stats(samples) if samples else {"n": 0}), "injected": injected}


def stub(runs: int) -> dict[str, Any]:
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True)
        samples.append(time.perf_counter() - t)
    return stats(samples)


def daemon_phase(
    work: Path, label: str, uri: str | None, runs: int, during_pull: bool = False
) -> dict[str, Any]:
    """A real daemon on the dev notes (copied index), ``org_uri`` = ``uri``; hook samples.
    ``during_pull``: pulls every second; once ready and pulled, its org folder is emptied,
    so that its next pull copies and exports everything: hooks are sampled meanwhile."""
    import shutil

    home = work / label
    shutil.copytree(work / "base" / "index", home / "index")
    if uri:
        every = 1 if during_pull else 900
        (home / "config.toml").write_text(f'org_uri = "{uri}"\norg_pull_s = {every}\n')
    proc = start_daemon(home)
    try:
        wait_ready(home)
        out: dict[str, Any] = {}
        if during_pull:
            status = home / "org" / "status.json"
            while not status.exists():
                time.sleep(0.1)
            shutil.rmtree(home / "org")
            started = time.perf_counter()
            out["hook_during_pull"] = hooks(home, runs, until=lambda: status.exists())
            out["pull_s"] = round(time.perf_counter() - started, 1)
        else:
            time.sleep(2)  # the pull child started and hangs (or none is configured)
            out["hook"] = hooks(home, runs)
        return out
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repos", type=int, default=500)
    parser.add_argument("--records", type=int, default=60)
    parser.add_argument("--commits", type=int, default=10)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--no-hook", action="store_true", help="pulls only")
    args = parser.parse_args()
    from precedents.config import DEFAULT_MODEL

    report: dict[str, Any] = {"repos": args.repos, "records_each": args.records}
    with tempfile.TemporaryDirectory() as tmp, s3_server() as env:
        work = Path(tmp)
        import boto3

        boto3.client(
            "s3",
            endpoint_url=env["AWS_ENDPOINT_URL"],
            region_name="us-east-1",
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
        ).create_bucket(Bucket="org-bench")
        uri = "s3://org-bench/index"
        started = time.perf_counter()
        held = build_table(uri, args.repos, args.records, args.commits, DEFAULT_MODEL)
        report["table_written_s"] = round(time.perf_counter() - started, 1)
        home = work / "pulls"
        report["first_pull"] = timed_pull(home, uri)
        print(json.dumps(report["first_pull"]), flush=True)
        report["same_version"] = timed_pull(home, uri)
        print(json.dumps(report["same_version"]), flush=True)
        change_one(uri, "repo-0007", args.records)
        serve(uri, held, DEFAULT_MODEL)
        report["one_repo_changed"] = timed_pull(home, uri)
        print(json.dumps(report["one_repo_changed"]), flush=True)
        if not args.no_hook:
            build_index(work / "base", 500)
            report["stub"] = stub(args.runs)
            report["no_org"] = daemon_phase(work, "no-org", None, args.runs)
            with hanging_endpoint() as url:
                saved = os.environ["AWS_ENDPOINT_URL"]
                os.environ["AWS_ENDPOINT_URL"] = url
                report["pull_hangs"] = daemon_phase(work, "hangs", "s3://hangs/index", args.runs)
                os.environ["AWS_ENDPOINT_URL"] = saved
            report["pull_runs"] = daemon_phase(work, "pulls", uri, args.runs, during_pull=True)
    report["load"] = os.getloadavg()
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
