"""`precedents org build` at scale (issue #30): full build, incremental build, RSS.

N git repositories are made from the real fixtures: each takes the ADR folder of
one project of tests/fixtures/adr-wild and the rule files of one of
tests/fixtures/rules-wild (round robin, so repositories repeat texts across the
org as real ones do), up to ``--records`` documents each. Then, as real
subprocesses (``python -m precedents.cli org build``):

- **full**: the first build into an empty index (a path, or ``--to s3://…`` with
  ``AWS_ENDPOINT_URL`` set for an S3-compatible server);
- **incremental**: one ADR of one repository changed, the build again;
- **unchanged**: nothing changed, the build again;

each with its wall time, chunks embedded and the peak RSS of the build process and
its workers (``VmHWM`` read from /proc while it runs). ``--workers`` is the local
pool's size (default: the CLI's, one per two CPUs).

    .venv/bin/python bench/org_build.py [--repos 20] [--records 60] [--workers N] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
ADRS = REPO / "tests" / "fixtures" / "adr-wild"
RULES = REPO / "tests" / "fixtures" / "rules-wild"
GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}
RULE_NAMES = ("AGENTS.md", "CLAUDE.md", ".cursorrules", "copilot-instructions.md")


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=b@example.com", "-c", "user.name=bench", *args],
        cwd=root,
        check=True,
        capture_output=True,
        env={**os.environ, **GIT_ENV},
    )


def make_repos(base: Path, count: int, records: int) -> list[Path]:
    """``count`` repositories of at most ``records`` documents from the fixtures."""
    adr_projects = sorted(p for p in ADRS.iterdir() if p.is_dir())
    rule_projects = sorted(p for p in RULES.iterdir() if (p / "tree").is_dir())
    out = []
    for i in range(count):
        root = base / f"repo-{i:04}"
        adr = adr_projects[i % len(adr_projects)]
        adrs = sorted(adr.glob("*.md"))[: records // 2]
        (root / "docs" / "adr").mkdir(parents=True)
        for f in adrs:
            shutil.copy(f, root / "docs" / "adr" / f.name)
        tree = rule_projects[i % len(rule_projects)] / "tree"
        rules = [
            f
            for f in sorted(tree.rglob("*"))
            if f.is_file() and (f.name in RULE_NAMES or f.suffix == ".mdc")
        ]
        for f in rules[: records - len(adrs)]:
            target = root / f.relative_to(tree)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(f, target)
        _git(root, "init", "-q")
        _git(root, "add", "-A")
        _git(root, "commit", "-qm", "fixtures")
        out.append(root)
    return out


def peak_rss(pid: int, stop: threading.Event, found: list[int]) -> None:
    """The largest sum of VmRSS of ``pid`` and its children, sampled every 0.2 s."""
    while not stop.is_set():
        total = 0
        for p in [pid, *_children(pid)]:
            try:
                for line in Path(f"/proc/{p}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
            except OSError:
                continue
        found[0] = max(found[0], total)
        stop.wait(0.2)


def _children(pid: int) -> list[int]:
    out = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            kids = (task / "children").read_text().split()
            for k in kids:
                out += [int(k), *_children(int(k))]
    except OSError:
        pass
    return out


def run_build(listing: Path, to: str, workers: int | None, home: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "precedents.cli", "org", "build", "--repos-from", str(listing)]
    cmd += ["--to", to, "--json"]
    if workers:
        cmd += ["--workers", str(workers)]
    env = {**os.environ, "PRECEDENTS_HOME": str(home), "PYTHONPATH": str(REPO / "src")}
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    stop, peak = threading.Event(), [0]
    sampler = threading.Thread(target=peak_rss, args=(proc.pid, stop, peak), daemon=True)
    sampler.start()
    out, err = proc.communicate()
    stop.set()
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"build failed ({proc.returncode}): {err.strip()[-500:]}")
    report = json.loads(out)
    return {
        "seconds": round(seconds, 2),
        "chunks_embedded": report["chunks_embedded"],
        "records": sum(r["records"] for r in report["repos"]),
        "version": report["version"],
        "peak_rss_mib": round(peak[0] / 2**20, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=int, default=20)
    parser.add_argument("--records", type=int, default=60)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--to", default="", help="the index URI (default: a temp folder)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="org-bench-") as tmp:
        base = Path(tmp)
        repos = make_repos(base / "repos", args.repos, args.records)
        listing = base / "repos.txt"
        listing.write_text("".join(f"{r}\n" for r in repos))
        to = args.to or str(base / "index")
        home = base / "state"
        results = {"full": run_build(listing, to, args.workers, home)}
        changed = sorted((repos[len(repos) // 2] / "docs" / "adr").glob("*.md"))[0]
        changed.write_text(changed.read_text() + "\n\nAmended by the bench.\n")
        results["incremental"] = run_build(listing, to, args.workers, home)
        results["unchanged"] = run_build(listing, to, args.workers, home)
    load = os.getloadavg()
    summary = {
        "repos": args.repos,
        "records_per_repo": args.records,
        "workers": args.workers,
        "cpus": os.cpu_count(),
        "load_after": [round(x, 2) for x in load],
        **results,
        "incremental_share": round(
            results["incremental"]["seconds"] / max(results["full"]["seconds"], 1e-9), 3
        ),
    }
    for name in ("full", "incremental", "unchanged"):
        r = results[name]
        print(
            f"{name:12} {r['seconds']:8.2f} s  {r['records']:6} records  "
            f"{r['chunks_embedded']:6} chunks embedded  peak RSS {r['peak_rss_mib']:.0f} MiB"
        )
    share = summary["incremental_share"]
    print(f"incremental / full: {share:.1%}  (load average after: {summary['load_after']})")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
