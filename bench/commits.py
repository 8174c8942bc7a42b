"""Git history as a source (issue #27 item 4): read cost on a 100,000-commit repository.

Builds a synthetic repository with ``git fast-import`` in a temp dir (about
2,000 files in nested folders, one to three files changed per commit, a
rename every 200 commits, a rationale body on one commit in four, trailers,
merges of nothing: a linear history like a squash-merged project), then
measures, in this process:

- the first read: ``read_commits`` of the newest ``--limit`` commits (messages
  masked by the real ``mask_secrets``), and the
  path history built from it (``build_history``), wall time and peak RSS
  (this process and its git children, ``resource.getrusage``);
- a new commit -> read incrementally: ``read_commits(known_head=...)`` plus
  ``update_history`` after each of ``--new`` commits made with the git CLI,
  p50/p95.

    .venv/bin/python bench/commits.py [--commits 100000] [--files 2000] [--limit 20000] [--new 20]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from precedents.ingest.commit_history import build_history, update_history  # noqa: E402
from precedents.ingest.commits import read_commits  # noqa: E402
from precedents.secrets.mask import mask_secrets  # noqa: E402

ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}
WORDS = tuple(
    [
        "retry",
        "cache",
        "parser",
        "token",
        "queue",
        "buffer",
        "limit",
        "timeout",
        "index",
        "schema",
        "worker",
        "session",
        "client",
        "server",
        "config",
        "stream",
        "batch",
        "lock",
        "pool",
        "socket",
        "handler",
        "codec",
    ]
)
REASONS = (
    "because the upstream API rate-limits us to 10 requests/s",
    "so that a slow disk never blocks the request path",
    "otherwise the cache grows without bound (measured 2.1 GB after a day)",
    "to avoid a deadlock between the writer and the watcher",
    "instead of polling, which cost 30 ms per call",
)


def _line(rng: random.Random) -> str:
    a, b, c = rng.sample(WORDS, 3)
    return f"    {a}_{b} = compute_{c}({rng.randint(0, 999)})\n"


def _inline(path: str, lines: list[str]) -> bytes:
    data = "".join(lines).encode()
    return b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data)


def _stream(commits: int, files: int, seed: int) -> Iterator[bytes]:
    """The fast-import stream: linear history, 1-3 files changed per commit."""
    rng = random.Random(seed)
    paths = [f"pkg{i % 40}/mod{i // 40}/file_{i}.py" for i in range(files)]
    bodies = {p: [_line(rng) for _ in range(20)] for p in paths}
    when = 1_500_000_000
    for n in range(commits):
        when += 600
        if n == 0:  # the initial tree: every file
            changes = [_inline(p, bodies[p]) for p in paths]
            subject, body = "Initial import", ""
        elif n % 200 == 199:  # a rename
            i = rng.randrange(len(paths))
            old = paths[i]
            new = old.replace("file_", f"renamed{n}_")
            paths[i] = new
            bodies[new] = bodies.pop(old)
            changes = [f"R {old} {new}\n".encode()]
            subject, body = f"Move {Path(old).name} to {Path(new).name}", ""
        else:
            changes = []
            for path in rng.sample(paths, rng.randint(1, 3)):
                lines = bodies[path]
                for _ in range(rng.randint(1, 3)):
                    lines[rng.randrange(len(lines))] = _line(rng)
                changes.append(_inline(path, lines))
            word = rng.choice(WORDS)
            subject = f"Change {word} handling in {Path(path).stem}"
            kind = n % 4
            signed = "Signed-off-by: Bench <bench@example.com>\n"
            why = f"The {word} path {rng.choice(REASONS)}.\n\n"
            body = why + signed if kind == 0 else signed if kind == 1 else ""
        message = (subject + "\n\n" + body if body else subject + "\n").encode()
        head = b"commit refs/heads/main\nmark :%d\n" % (n + 1)
        who = b"committer Bench <bench@example.com> %d +0000\n" % when
        yield head + who + b"data %d\n%s" % (len(message), message)
        if n:
            yield b"from :%d\n" % n
        yield b"".join(changes) + b"\n"


def build_repo(dest: Path, commits: int, files: int, seed: int = 27) -> float:
    """A ``commits``-commit repository at ``dest`` (checked out); seconds it took."""
    t0 = time.perf_counter()
    subprocess.run(["git", "init", "-q", "-b", "main", str(dest)], check=True, env=ENV)
    proc = subprocess.Popen(
        ["git", "fast-import", "--quiet"], cwd=dest, stdin=subprocess.PIPE, env=ENV
    )
    assert proc.stdin is not None
    for chunk in _stream(commits, files, seed):
        proc.stdin.write(chunk)
    proc.stdin.close()
    if proc.wait() != 0:
        raise SystemExit("git fast-import failed")
    subprocess.run(["git", "checkout", "-q", "main"], cwd=dest, check=True, env=ENV)
    return time.perf_counter() - t0


def _rss_mb() -> tuple[float, float]:
    """Peak RSS of this process and of its largest git child, MB (Linux: ru_maxrss in KB)."""
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return me, kids


def _new_commit(repo: Path, n: int) -> None:
    target = next(p for p in sorted((repo / "pkg1").rglob("*.py")))
    with target.open("a") as fh:
        fh.write(f"    extra_{n} = {n}\n")
    git = ["git", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True, env=ENV)
    message = f"Add extra_{n}\n\nKeep it because the retry budget is 3 attempts."
    subprocess.run([*git, "commit", "-q", "-m", message], cwd=repo, check=True, env=ENV)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=100_000)
    parser.add_argument("--files", type=int, default=2_000)
    parser.add_argument("--limit", type=int, default=20_000)
    parser.add_argument("--new", type=int, default=20)
    parser.add_argument("--repo", type=Path, help="reuse (or build once into) this folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="precedents-commits-") as tmp:
        repo = args.repo or Path(tmp) / "repo"
        if not (repo / ".git").exists():
            built = build_repo(repo, args.commits, args.files)
            print(f"built {args.commits:,} commits, {args.files:,} files in {built:.1f}s")
        t0 = time.perf_counter()
        read = read_commits(repo, limit=args.limit, mask=mask_secrets)
        t_read = time.perf_counter() - t0
        t0 = time.perf_counter()
        history = build_history(repo, read)
        t_hist = time.perf_counter() - t0
        me, kids = _rss_mb()
        decisions = sum(c.rationale for c in read.commits)
        print(
            f"first read: {len(read.commits):,} commits ({decisions:,} with rationale) in "
            f"{t_read:.2f}s; path history ({history.size():,} file decisions) in {t_hist:.2f}s"
        )
        print(f"peak RSS: this process {me:.0f} MB, largest git child {kids:.0f} MB")
        print(f"problems: {list(read.problems)} complete={read.complete}")
        times = []
        head = read.head
        for n in range(args.new):
            _new_commit(repo, n)
            t0 = time.perf_counter()
            new = read_commits(repo, known_head=head, limit=args.limit, mask=mask_secrets)
            history = update_history(repo, history, new)
            times.append((time.perf_counter() - t0) * 1000)
            assert len(new.commits) == 1 and new.commits[0].rationale, new
            head = new.head
        times.sort()
        p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
        print(
            f"new commit -> read incrementally (+ path history): p50 "
            f"{statistics.median(times):.0f} ms, p95 {p95:.0f} ms over {len(times)} commits"
        )


if __name__ == "__main__":
    main()
