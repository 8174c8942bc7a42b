"""5,000 team notes in one `git pull` (issue #28): searchable time, memory, hook latency.

Real parts throughout: a bare origin and two clones (real git), Bob's watcher as
users run it (``python -m precedents.cli watch``, a subprocess, Bob's clone known
from his Claude Code folder), the real query daemon, the real prompt hook
(``python -I -S .../hook/launch.py prompt``, as Claude Code starts it), the
bundled model.

Bob's clone starts with a few team notes, indexed before the clock starts. Alice
commits ``--notes`` new team notes at once and pushes; Bob pulls. From the pull's
start the bench prints:

- **searchable**: seconds until the daemon's snapshot holds every pulled note (its
  ``status`` count) and a query for the last note (by file name) finds it;
- **watcher RSS**: before the pull and its peak (``VmHWM``) — the watcher's own
  process; **indexing child RSS**: the peak of the watcher's child processes
  (watcher/child.py: the model, LanceDB and the writes live there, sampled), how
  many were started; **daemon RSS**: before and peak (its export child is a process of its
  own, sampled too);
- **prompt hook** latency p50/p95/max while the pull is being indexed, and a stub
  hook (``python -I -S -c pass``: process start alone) interleaved in the same
  run as the floor.

The notes are real text: paragraphs of the real ADRs in tests/fixtures/adr-wild
(425 records of 14 public projects), 100-400 words each, with front matter as
`remember --team` writes it (name, description, author, created).

    .venv/bin/python bench/big_pull.py [--notes 5000] [--seed 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
ADRS = REPO / "tests" / "fixtures" / "adr-wild"
LAUNCHER = REPO / "src" / "precedents" / "hook" / "launch.py"
GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}
AUTHORS = ["Alice Example", "Bob Builder", "Chen Wei", "Dana Ortiz", "Emeka Obi", "Freya Lund"]


# -- the notes -----------------------------------------------------------------


def paragraphs() -> list[str]:
    """Prose paragraphs of the real ADRs (no front matter, headings, code, tables)."""
    out: list[str] = []
    for path in sorted(ADRS.rglob("*.md")):
        text = path.read_text(encoding="utf-8", errors="replace")
        text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        for block in re.split(r"\n\s*\n", text):
            block = " ".join(block.split())
            if len(block.split()) >= 15 and not block.startswith(("#", "|", "<", "[")):
                out.append(block)
    return out


def codename(i: int) -> str:
    """A made-up word unique to note ``i`` (what a query finds it by)."""
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    word = ""
    for _ in range(3):
        i, r = divmod(i, len(syllables))
        word += syllables[r]
    return "q" + word


def make_notes(n: int, seed: int) -> list[tuple[str, str, str]]:
    """(file name, text, a query that finds it) of ``n`` team notes of 100-400 words."""
    rng = random.Random(seed)
    pool = paragraphs()
    notes = []
    for i in range(n):
        want = rng.randint(100, 400)
        words: list[str] = []
        while len(words) < want:
            words += rng.choice(pool).split()
        words = words[:want]
        body = " ".join(words)
        # A few paragraph breaks, as written notes have.
        body = re.sub(r"\. ", lambda m: ".\n\n" if rng.random() < 0.15 else ". ", body)
        title = " ".join(words[: rng.randint(4, 8)]).strip(".,:;") + f" ({codename(i)})"
        first = re.split(r"(?<=[.!?])\s", body, maxsplit=1)[0][:200]
        day = f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}"
        # As `remember --team` writes it (yaml.safe_dump): an emoji stays one character.
        meta = {"name": title, "description": first, "author": rng.choice(AUTHORS)}
        meta["created"] = day
        dumped = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False, width=1000)
        front = f"---\n{dumped}---\n"
        # The query that finds it: its first chunk's text (a near-exact vector match).
        query = f"{title}\n{first}\n{body}"[:700]
        notes.append((f"note-{i:05d}.md", front + body + "\n", query))
    return notes


# -- processes -----------------------------------------------------------------


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, check=True, capture_output=True
    )


def memory(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM of ``pid`` in MiB ({} once it is gone)."""
    out: dict[str, float] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = round(int(value.split()[0]) / 1024, 1)
    except OSError:
        pass
    return out


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (the daemon's export child)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def cpu_seconds(pid: int) -> tuple[float, float]:
    """CPU seconds of ``pid`` itself and of its children it has reaped ((0, 0) once gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, 0.0
    tick = os.sysconf("SC_CLK_TCK")
    # After the ")": state is field 3, so utime/stime/cutime/cstime (14-17) are 11-14.
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
    return (utime + stime) / tick, (cutime + cstime) / tick


def cpu_by_role(watcher: int, daemon: int) -> dict[str, float]:
    """CPU seconds so far of each process of the run (where a pull's cores go)."""
    roles: dict[str, float] = {}
    for label, pid, child in (
        ("watcher", watcher, "indexing children"),
        ("daemon", daemon, "export children"),
    ):
        own, reaped = cpu_seconds(pid)
        roles[label] = own
        roles[child] = reaped + sum(cpu_seconds(c)[0] for c in children(pid))
    mine = os.times()
    roles["bench's own hooks, git and polls"] = (
        mine.children_user + mine.children_system + mine.user + mine.system
    )
    return roles


class Sampler(threading.Thread):
    """Samples the watcher's, the daemon's and both one's children's RSS every 0.2 s."""

    def __init__(self, watcher: int, daemon: int) -> None:
        super().__init__(daemon=True)
        self.pids = {"watcher": watcher, "daemon": daemon}
        self.peak: dict[str, float] = {
            "watcher": 0.0,
            "daemon": 0.0,
            "export child": 0.0,
            "indexing child": 0.0,
            "watcher + child": 0.0,
        }
        self.indexing: set[int] = set()  # the watcher's children seen
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.2):
            for label, pid in self.pids.items():
                rss = memory(pid).get("VmRSS", 0.0)
                self.peak[label] = max(self.peak[label], rss)
            for child in children(self.pids["daemon"]):
                rss = memory(child).get("VmRSS", 0.0)
                self.peak["export child"] = max(self.peak["export child"], rss)
            together = memory(self.pids["watcher"]).get("VmRSS", 0.0)
            for child in children(self.pids["watcher"]):
                self.indexing.add(child)
                rss = memory(child).get("VmRSS", 0.0)
                self.peak["indexing child"] = max(self.peak["indexing child"], rss)
                together += rss
            self.peak["watcher + child"] = max(self.peak["watcher + child"], together)


def ask(home: Path, request: dict[str, Any], timeout: float = 10) -> dict[str, Any]:
    from precedents import protocol

    return protocol.ask(request, timeout, home / "run")


def wait_for(what: str, check: Any, limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"{what}: not within {limit_s:.0f} s")
        time.sleep(0.2)


def note_count(home: Path) -> int:
    """Notes in the daemon's snapshot (what it searches), -1 when it cannot say."""
    try:
        summary = ask(home, {"op": "status"}).get("summary") or {}
    except Exception:
        return -1
    return int(summary.get("kinds", {}).get("note", {}).get("documents", 0))


def full_done(log_path: Path, notes: int, offset: int) -> bool:
    """Whether the watcher's log shows the pull indexed in full: from ``offset`` (the
    log's size when the pull started), groups whose indexed files add up to the pull
    (a pull's first few files are indexed in full at once, the rest headed first:
    ingest/heads.py)."""
    text = log_path.read_bytes()[offset:].decode("utf-8", "replace")
    done = sum(int(n) for n in re.findall(r"indexed (\d+) file\(s\)", text))
    return done >= notes


def finds(home: Path, bob: Path, path: Path, query: str) -> bool:
    try:
        answer = ask(home, {"op": "query", "text": query, "project": str(bob), "k": 5})
    except Exception:
        return False
    return str(path) in [r.get("path") for r in answer.get("results", [])]


def timed(args: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, bytes]:
    started = time.perf_counter()
    done = subprocess.run(args, input=stdin, capture_output=True, env=env, check=False)
    return time.perf_counter() - started, done.stdout


def stats(samples: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in samples)
    if not ms:
        return {"n": 0}
    return {
        "p50": round(statistics.median(ms), 1),
        "p95": round(ms[round(0.95 * (len(ms) - 1))], 1),
        "max": round(ms[-1], 1),
        "n": len(ms),
    }


class Hooks(threading.Thread):
    """The prompt hook and a stub, alternately, until stopped."""

    def __init__(self, bob: Path, env: dict[str, str], prompts: list[str]) -> None:
        super().__init__(daemon=True)
        self.bob, self.env, self.prompts = bob, env, prompts
        self.samples: dict[str, list[float]] = {"prompt": [], "stub": []}
        self.injected = 0
        self.stop = threading.Event()

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            stdin = json.dumps(
                {
                    "prompt": self.prompts[i % len(self.prompts)],
                    "cwd": str(self.bob),
                    "hook_event_name": "UserPromptSubmit",
                    "session_id": f"big-pull-{i}",  # a session each: nothing withheld
                }
            ).encode()
            took, out = timed(
                [sys.executable, "-I", "-S", str(LAUNCHER), "prompt"], stdin, self.env
            )
            self.samples["prompt"].append(took)
            self.injected += bool(out)
            took, _ = timed([sys.executable, "-I", "-S", "-c", "pass"], b"", self.env)
            self.samples["stub"].append(took)
            i += 1
            time.sleep(0.3)


# -- the run -------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--notes", type=int, default=5000)
    parser.add_argument("--existing", type=int, default=5, help="team notes before the pull")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--limit", type=float, default=900, help="give up after (s)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder (its logs)")
    parser.add_argument(
        "--searchable-only", action="store_true", help="stop once searchable (no full pass)"
    )
    args = parser.parse_args()
    # Ended by a signal: still stop the watcher and the daemon (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    root = Path(tempfile.mkdtemp(prefix="precedents-bench-pull-"))
    origin, alice, bob = root / "origin.git", root / "alice", root / "bob"
    home, claude = root / "bob-state", root / "bob-claude"
    git(root, "init", "-q", "--bare", "-b", "main", str(origin))
    for clone, user in ((alice, "Alice Example"), (bob, "Bob Builder")):
        git(root, "clone", "-q", str(origin), str(clone))
        git(clone, "config", "user.name", user)
        git(clone, "config", "user.email", "dev@example.invalid")
    notes = make_notes(args.existing + args.notes, args.seed)
    folder = alice / ".precedents" / "notes"
    folder.mkdir(parents=True)
    for file, text, _ in notes[: args.existing]:
        (folder / file).write_text(text, encoding="utf-8")
    (alice / "README.md").write_text("# Shop\n", encoding="utf-8")
    git(alice, "add", "-A")
    git(alice, "commit", "-q", "-m", "start")
    git(alice, "push", "-q", "origin", "main")
    git(bob, "pull", "-q", "origin", "main")

    # Bob has used Claude Code in his clone: that is how the watcher knows the project.
    from precedents.ingest.sources import encode_project_path

    project_dir = claude / "projects" / encode_project_path(str(bob))
    project_dir.mkdir(parents=True)
    (project_dir / "s0.jsonl").write_text(json.dumps({"type": "summary", "cwd": str(bob)}) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
    env.update(PRECEDENTS_HOME=str(home), PRECEDENTS_CLAUDE_DIR=str(claude), **GIT_ENV)
    env["PYTHONPATH"] = str(REPO / "src")

    log_path = root / "watcher.log"
    with log_path.open("w") as log:
        watcher = subprocess.Popen(
            [sys.executable, "-m", "precedents.cli", "watch"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    daemon: subprocess.Popen[bytes] | None = None
    try:

        def ready() -> bool:
            text = log_path.read_text()
            assert watcher.poll() is None, text[-3000:]
            return "reconciled" in text and " loaded " in text

        wait_for("the watcher's start", ready, 300)
        daemon = subprocess.Popen(
            [sys.executable, "-m", "precedents.query_daemon"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for("the daemon", lambda: note_count(home) >= args.existing, 300)
        # Questions the existing notes answer (so the hook has something to inject).
        prompts = [f"what did we say about {' '.join(t.split()[:9])}?" for *_, t in notes[:50]]
        hooks = Hooks(bob, env, prompts)
        for _ in range(3):  # warm: page cache, the daemon's row subset
            timed([sys.executable, "-I", "-S", "-c", "pass"], b"", env)
        idle = Hooks(bob, env, prompts)
        idle.start()
        time.sleep(8)
        idle.stop.set()
        idle.join()
        before = {"watcher": memory(watcher.pid), "daemon": memory(daemon.pid)}

        # Alice's 5,000 notes: committed and pushed before the clock starts.
        for file, text, _ in notes[args.existing :]:
            (folder / file).write_text(text, encoding="utf-8")
        git(alice, "add", "-A")
        git(alice, "commit", "-q", "-m", f"{args.notes} team notes")
        git(alice, "push", "-q", "origin", "main")
        last_file, _, last_query = notes[-1]
        last = bob / ".precedents" / "notes" / last_file
        total = args.existing + args.notes

        sampler = Sampler(watcher.pid, daemon.pid)
        sampler.start()
        hooks.start()
        load_start = os.getloadavg()[0]
        offset = log_path.stat().st_size
        cpu_before = cpu_by_role(watcher.pid, daemon.pid)
        started = time.monotonic()
        git(bob, "pull", "-q", "--ff-only", "origin", "main")
        pulled = time.monotonic() - started
        seen: list[tuple[float, int]] = []

        def all_there() -> bool:
            assert watcher.poll() is None, log_path.read_text()[-3000:]
            count = note_count(home)
            seen.append((time.monotonic() - started, count))
            return count >= total and finds(home, bob, last, last_query)

        wait_for("every pulled note searchable", all_there, args.limit)
        searchable = time.monotonic() - started
        cpu_after = cpu_by_role(watcher.pid, daemon.pid)
        cpu_used = {k: round(cpu_after[k] - cpu_before[k], 1) for k in cpu_after}
        during = {k: list(v) for k, v in hooks.samples.items()}
        # Then the full pass (ingest/heads.py): searchable by heads first, every
        # note's every chunk later; the hook is measured through both.
        full: float | None = None
        if not args.searchable_only:
            wait_for(
                "every pulled note indexed in full",
                lambda: full_done(log_path, args.notes, offset),
                args.limit,
            )
            full = time.monotonic() - started
        hooks.stop.set()
        hooks.join(60)
        sampler.stop.set()
        sampler.join()
        first = next((t for t, c in seen if c > args.existing), None)
        result = {
            "notes pulled": args.notes,
            "cpus": os.cpu_count(),
            "load avg 1m at the pull": round(load_start, 2),
            "load avg 1m at the end": round(os.getloadavg()[0], 2),
            "git pull s": round(pulled, 2),
            "first pulled note searchable s": round(first, 1) if first else None,
            "every pulled note searchable s": round(searchable, 1),
            "every pulled note indexed in full s": round(full, 1) if full else None,
            # Where the cores went until searchable (cpus x seconds were there).
            "CPU s until searchable, by process": cpu_used,
            "CPU s available until searchable": round(searchable * (os.cpu_count() or 1), 1),
            "watcher RSS before MiB": before["watcher"].get("VmRSS"),
            "watcher RSS peak MiB": memory(watcher.pid).get("VmHWM"),
            "indexing child RSS peak (sampled) MiB": sampler.peak["indexing child"],
            "watcher + indexing child RSS peak (sampled) MiB": sampler.peak["watcher + child"],
            "indexing children started": len(sampler.indexing),
            "daemon RSS before MiB": before["daemon"].get("VmRSS"),
            "daemon RSS peak (sampled) MiB": sampler.peak["daemon"],
            "daemon RSS peak MiB": memory(daemon.pid).get("VmHWM"),
            # Another process may have stopped it (the hook then starts a new one).
            "daemon restarted during the run": ask(home, {"op": "ping"}).get("pid") != daemon.pid,
            "export child RSS peak (sampled) MiB": sampler.peak["export child"],
            "prompt hook idle ms": stats(idle.samples["prompt"]),
            "stub hook idle ms": stats(idle.samples["stub"]),
            "prompt hook until searchable ms": stats(during["prompt"]),
            "stub hook until searchable ms": stats(during["stub"]),
            "prompt hook until indexed in full ms": stats(hooks.samples["prompt"]),
            "stub hook until indexed in full ms": stats(hooks.samples["stub"]),
            "prompt hook injected": f"{hooks.injected}/{len(hooks.samples['prompt'])}",
            "progress (s, notes searchable)": [
                (round(t, 1), c) for t, c in seen[:: max(1, len(seen) // 20)]
            ],
        }
        lines = [x for x in log_path.read_text().splitlines() if "indexed " in x]
        result["watcher index batches"] = len(lines)
    finally:
        if daemon is not None:
            daemon.terminate()
            daemon.wait(30)
        watcher.terminate()
        try:
            watcher.wait(60)
        except subprocess.TimeoutExpired:
            watcher.kill()
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
