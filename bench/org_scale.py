"""The org index's build at scale: one process vs a Ray cluster of 2 workers (issue #30).

Makes ``--repos`` synthetic repositories of ~60 records each from the real ADR and
rule fixtures (bench/org_corpus.py), then times, each as its own
``precedents org build`` process into a folder:

1. a full build by one process (``--workers 1``: read, check, embed in the driver);
2. a full build on a Ray cluster (``--ray ADDRESS --workers 2``, lance-ray fragments,
   one commit);
3. after one ADR of one repository changed: the incremental build, both ways.

For each it prints wall seconds, records and chunks per second, the driver's peak RSS
(the build process, from ``wait4``) and the Ray workers' peak RSS (``VmHWM`` of every
``ray::_Worker`` process, sampled from /proc), and at the end the pull size: the bytes
of the served version's data files (what a daemon's first pull copies) and of the
whole ``chunks.lance`` folder. A cluster is started for the run (``ray start --head
--num-cpus 2``) unless ``--ray ADDRESS`` names one.

    .venv/bin/python bench/org_scale.py --repos 30 --workers 2 [--work DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from org_corpus import change_one, make_corpus  # noqa: E402

BIN = Path(sys.executable).parent


def _hwm(pid: int) -> int:
    """Peak resident bytes of ``pid`` (VmHWM), 0 when gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _ray_workers() -> list[int]:
    """The pids of the build's Ray actors (their process title is ``ray::_Worker``)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if cmd.startswith(b"ray::_Worker"):
                pids.append(int(entry.name))
    return pids


class WorkerSampler(threading.Thread):
    """Peak RSS of each Ray actor while a build runs (sampled every 0.5 s); every minute,
    a progress line: the Lance data files written so far (on Ray, one or more per
    repository with new rows, written as each finishes), so a long run that is stopped
    still says how far it got."""

    def __init__(self, data: Path) -> None:
        super().__init__(daemon=True)
        self.peaks: dict[int, int] = {}
        self.done = threading.Event()
        self.data = data

    def run(self) -> None:
        started = last = time.perf_counter()
        while not self.done.wait(0.5):
            for pid in _ray_workers():
                self.peaks[pid] = max(self.peaks.get(pid, 0), _hwm(pid))
            if time.perf_counter() - last >= 60:
                last = time.perf_counter()
                files = sum(1 for _ in self.data.glob("*.lance")) if self.data.is_dir() else 0
                load = os.getloadavg()[0]
                print(f"  {last - started:.0f} s: {files} data files, load {load:.1f}", flush=True)


def build(listing: Path, to: Path, extra: list[str], env: dict[str, str]) -> dict[str, Any]:
    """One `precedents org build` process: its report, wall time and RSS."""
    sampler = WorkerSampler(to / "chunks.lance" / "data")
    sampler.start()
    started = time.perf_counter()
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "precedents.cli", "org", "build"),
            *("--repos-from", str(listing), "--to", str(to), "--json", *extra),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    out = b""
    assert process.stdout is not None and process.stderr is not None
    err_reader = threading.Thread(target=lambda: setattr(process, "_err", process.stderr.read()))
    err_reader.start()
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    err_reader.join()
    wall = time.perf_counter() - started
    sampler.done.set()
    sampler.join()
    if status != 0:
        raise SystemExit(f"build failed ({status}): {getattr(process, '_err', b'')[-2000:]!r}")
    report = json.loads(out)
    records = sum(r["records"] for r in report["repos"])
    return {
        "wall_s": round(wall, 1),
        "build_s": report["seconds"],
        "version": report["version"],
        "repos": len(report["repos"]),
        "records": records,
        "chunks_embedded": report["chunks_embedded"],
        "records_per_s": round(records / wall, 1) if report["chunks_embedded"] else None,
        "chunks_per_s": round(report["chunks_embedded"] / wall, 1),
        "driver_peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
        "worker_peak_rss_mib": sorted(round(v / 2**20, 1) for v in sampler.peaks.values()),
    }


def pull_size(to: Path) -> dict[str, int]:
    """Bytes of the served version's data files, and of the whole ``chunks.lance`` folder."""
    import lance

    served = json.loads((to / "_precedents" / "served.json").read_text())
    ds = lance.dataset(str(to / "chunks.lance"), version=served["version"])
    data = 0
    for fragment in ds.get_fragments():
        for f in fragment.data_files():
            data += (to / "chunks.lance" / "data" / f.path).stat().st_size
    folder = sum(p.stat().st_size for p in (to / "chunks.lance").rglob("*") if p.is_file())
    return {"served_data_bytes": data, "folder_bytes": folder, "rows": ds.count_rows()}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_cluster(env: dict[str, str], cpus: int) -> tuple[str, str]:
    """``ray start --head`` of ``cpus`` CPUs: its address, and its temp folder."""
    port = _free_port()
    temp = f"/tmp/ray-bench-{os.getpid()}"
    subprocess.run(
        [
            *(str(BIN / "ray"), "start", "--head", "--num-cpus", str(cpus), "--port", str(port)),
            *("--include-dashboard", "false", "--disable-usage-stats", "--temp-dir", temp),
        ],
        env=env,
        check=True,
        capture_output=True,
    )
    return f"127.0.0.1:{port}", temp


def stop_cluster(temp: str) -> None:
    """Stop the processes of the cluster this bench started, and only those: every process
    whose command line names its temp folder (``ray stop`` would stop every cluster on
    the machine, other people's too)."""
    import signal

    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if temp.encode() in (entry / "cmdline").read_bytes():
                os.kill(int(entry.name), signal.SIGTERM)
        except OSError:
            continue


def main() -> None:
    """Run the bench; print each figure and the whole as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=int, default=30)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ray", help="a running cluster's address (default: start one)")
    parser.add_argument("--work", type=Path, help="folder for the corpus and the indexes")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--only", choices=("single", "ray"), help="one side only")
    args = parser.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="org-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    src = HERE.parent / "src"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]).rstrip(":"),
        "RAY_AUTH_MODE": "disabled",
        "RAY_USAGE_STATS_ENABLED": "0",
        "HF_HUB_OFFLINE": "1",
        "PRECEDENTS_HOME": str(work / "state"),
    }
    listing = make_corpus(work / "corpus", args.repos)
    figures: dict[str, Any] = {
        "repos": args.repos,
        "workers": args.workers,
        "cpus": os.cpu_count(),
        "load_before": os.getloadavg(),
    }

    def report(name: str, value: Any) -> None:
        figures[name] = value
        print(f"{name}: {json.dumps(value)}", flush=True)

    sides = [args.only] if args.only else ["single", "ray"]
    address, temp = args.ray, None
    try:
        if "ray" in sides and address is None:
            address, temp = start_cluster(env, args.workers)
        extra = {
            "single": ["--workers", "1"],
            "ray": ["--ray", str(address), "--workers", str(args.workers)],
        }
        for side in sides:
            shutil.rmtree(work / side, ignore_errors=True)
            report(f"full_{side}", build(listing, work / side, extra[side], env))
        change_one(work / "corpus", 0)
        for side in sides:
            report(f"incremental_{side}", build(listing, work / side, extra[side], env))
        for side in sides:
            report(f"pull_{side}", pull_size(work / side))
    finally:
        if temp is not None:
            stop_cluster(temp)
    figures["load_after"] = os.getloadavg()
    if "full_single" in figures and "full_ray" in figures:
        report(
            "ray_speedup",
            round(figures["full_single"]["wall_s"] / figures["full_ray"]["wall_s"], 2),
        )
    for side in sides:
        full, inc = figures[f"full_{side}"]["wall_s"], figures[f"incremental_{side}"]["wall_s"]
        report(f"incremental_share_{side}", round(inc / full, 3))
    print(json.dumps(figures, indent=1))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
