"""A hostile repository end to end (issue #28): what leaks, what stalls, what it costs.

Builds one git repository holding the attacks of issue #28 at once — folders
symlinked out of it (team notes, Cursor rules, an ADR folder, a nested
``.claude``), a file symlink in an ADR folder to a private file, ``/dev/zero``
and a FIFO and a sparse 2 GB file as ADRs, YAML alias bombs in a team note and
a Windsurf rule, a 16 KB glob, a file name that is not UTF-8, a secret in the
team config, and attack payloads in the root ``AGENTS.md`` — then runs the real
CLI (``reindex``, ``status --json``, ``adr list``, ``adr show``, ``check
--all``), the real daemon and the real hook (SessionStart, a prompt, file
touches), each process timed and its peak RSS sampled (VmHWM). Every
private file outside the repository carries a marker word; any output or
stored row holding one is a leak.

    .venv/bin/python bench/hostile.py [--timeout 120] [--json out.json]

Prints one line per step (seconds, peak RSS, exit code, markers leaked) and a
summary: leaks (goal 0), the worst stall (goal: none over 1 s beyond the same
step on a clean repository — reported beside it), the raw secret's
appearances (goal 0).
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
import uuid
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.hostile_repo import CLI_STEPS, MARKER, SECRET, hook_calls, hostile  # noqa: E402 - after the path

LAUNCHER = REPO / "src" / "precedents" / "hook" / "launch.py"
# Each step in at most 6 GiB of address space: a reader that loads /dev/zero fails
# there (MemoryError) instead of taking the machine with it. prlimit, not a
# preexec_fn: a forked child's peak RSS would count this process's pages.
CAPPED = ["prlimit", f"--as={6 << 30}", "--"]


def timed(
    cmd: list[str], env: dict[str, str], cwd: Path, timeout: float, stdin: bytes = b""
) -> dict[str, Any]:
    """Run ``cmd``: seconds, its peak RSS (MiB, sampled), exit code, output."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            [*CAPPED, *cmd],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        assert proc.stdin is not None
        proc.stdin.write(stdin)
        proc.stdin.close()
        deadline = started + timeout
        peak = 0.0
        while True:
            # VmHWM of the running process (ru_maxrss would count the forking parent's).
            peak = max(peak, _rss_mib(proc.pid) or 0.0)
            pid, status, _ = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                rc: object = os.waitstatus_to_exitcode(status)
                break
            if time.perf_counter() > deadline:
                proc.kill()
                os.wait4(proc.pid, 0)
                rc = "timeout"
                break
            time.sleep(0.005)
        proc.returncode = 0  # reaped by wait4 above: Popen must not wait for it again
        seconds = time.perf_counter() - started
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return {"s": seconds, "rss": peak, "rc": rc, "out": text}


def scenario(repo: Path, home: Path, timeout: float) -> list[dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
    env.update(PRECEDENTS_HOME=str(home), PRECEDENTS_CLAUDE_DIR=str(home / "claude"))
    cli = [sys.executable, "-m", "precedents.cli"]
    rows = []
    for name, args in CLI_STEPS.items():
        cmd = [*cli, *(a.format(repo=repo) for a in args)]
        rows.append({"step": name, **timed(cmd, env, repo, timeout)})
    daemon = subprocess.Popen(
        [*CAPPED, sys.executable, "-m", "precedents.query_daemon"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        hook = [sys.executable, "-I", "-S", str(LAUNCHER)]
        session = f"bench-{uuid.uuid4()}"
        env_hook = {**env, "PRECEDENTS_HOOK_BUDGET_MS": "10000"}
        for name, (mode, stdin) in hook_calls(repo, session).items():
            rows.append({"step": name, **timed([*hook, mode], env_hook, repo, timeout, stdin)})
        time.sleep(2.0)
        rss = _rss_mib(daemon.pid)
        rows.append(
            {
                "step": "daemon (RSS after the hooks)",
                "s": 0.0,
                "rss": rss,
                "rc": daemon.poll(),
                "out": "",
            }
        )
    finally:
        daemon.terminate()
        try:
            daemon.wait(20)
        except subprocess.TimeoutExpired:
            daemon.kill()
    stored = _stored_text(home)
    rows.append({"step": "the store (every row)", "s": 0.0, "rss": None, "rc": 0, "out": stored})
    return rows


def _rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _stored_text(home: Path) -> str:
    """Every text column of every table of the index, as one string."""
    import lancedb

    out = []
    index = home / "index"
    if not index.exists():
        return ""
    db = lancedb.connect(str(index))
    for name in db.list_tables().tables:
        table = db.open_table(name).to_arrow()
        for col in table.column_names:
            if str(table.schema.field(col).type) in ("string", "large_string"):
                out.extend(str(v) for v in table.column(col).to_pylist())
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="precedents-hostile-"))
    try:
        results = {}
        for label, clean in (("clean", True), ("hostile", False)):
            repo = hostile(root, clean=clean)
            rows = scenario(repo, root / f"home-{label}", args.timeout)
            results[label] = rows
            print(f"== {label} repository")
            for r in rows:
                leaks = r["out"].count(MARKER)
                raw = r["out"].count(SECRET)
                rss = f"{r['rss']:.0f} MiB" if r["rss"] is not None else "-"
                head = f"  {r['step']:<36} {r['s']:7.2f} s  {rss:>9}  rc={r['rc']!s:<7}"
                print(f"{head} leaks={leaks} raw-secret={raw}")
        base = {r["step"]: r["s"] for r in results["clean"]}
        hostile_rows = results["hostile"]
        leaks = sum(r["out"].count(MARKER) for r in hostile_rows)
        raw = sum(r["out"].count(SECRET) for r in hostile_rows)
        worst = max(hostile_rows, key=lambda r: r["s"] - base.get(r["step"], 0.0))
        extra = worst["s"] - base.get(worst["step"], 0.0)
        print(f"leaks: {leaks}  raw secret: {raw}  worst stall: {worst['step']} +{extra:.2f} s")
        if args.json:
            slim = {
                k: [{kk: vv for kk, vv in r.items() if kk != "out"} for r in v]
                for k, v in results.items()
            }
            args.json.write_text(json.dumps(slim, indent=1))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
