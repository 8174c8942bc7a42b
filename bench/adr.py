"""ADR graph build time for 1,000 generated records (SPEC §7 bar: cold <= 300 ms).

Run: .venv/bin/python bench/adr.py [N]
Generates N records (Nygard/adr-tools, MADR 2 bullets, MADR 3 front matter,
chains of supersessions, amendments, a few proposals), then times a cold build
(no cache: scan, hash, parse, rule) and a cached build (hash only, cache hit).
"""

from __future__ import annotations

import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from precedents.adr_graph import build_graph

_VOCABULARY = """
service cluster ingress database cache queue deploy release rollback schema
network policy secret token storage backup monitor alert latency budget team
review decision option consequence context approach migrate replace support
"""
WORDS = _VOCABULARY.split()


def _prose(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def generate(folder: Path, n: int, seed: int = 7) -> None:
    """Write ``n`` ADRs in three formats, with supersession chains and amendments."""
    rng = random.Random(seed)
    for i in range(1, n + 1):
        slug = "-".join(rng.sample(WORDS, 3))
        name = f"{i:04d}-{slug}.md"
        title = f"Use {' '.join(rng.sample(WORDS, 4))}"
        body = "\n\n".join(_prose(rng, 60) for _ in range(6))
        successor = i + rng.randint(1, 20) if i % 7 == 0 and i + 20 <= n else None
        status = "Accepted" if i % 11 else "Proposed"
        style = i % 3
        if style == 0:  # Nygard / adr-tools
            lines = [f"# {i}. {title}", "", "Date: 2024-01-02", "", "## Status", ""]
            if successor:
                lines.append(f"Superseded by [{successor}. X]({successor:04d}-x.md)")
            else:
                lines.append(status)
            if i % 13 == 0 and i > 1:
                lines += ["", f"Amends [{i - 1}. Y]({i - 1:04d}-y.md)"]
            lines += ["", "## Context", "", body, "", "## Decision", "", body[:400]]
            lines += ["", "## Consequences", "", body[:300]]
        elif style == 1:  # MADR 2 bullets
            st = (
                f"superseded by [ADR-{successor:04d}]({successor:04d}-x.md)"
                if successor
                else status
            )
            lines = [f"# {title}", "", f"- Status: {st}", "- Deciders: team", "- Date: 2024-02-03"]
            lines += ["", "## Context and Problem Statement", "", body]
            lines += ["", "## Decision Outcome", "", f"Chosen option: {_prose(rng, 8)}"]
        else:  # MADR 3 front matter (status optional)
            fm = ["---", "date: 2024-03-04", "component: core" if i % 2 else "component: web"]
            if successor:
                fm.append(f'status: "superseded by ADR-{successor:04d}"')
            elif i % 4:
                fm.append(f"status: {status.lower()}")
            fm.append("---")
            lines = [*fm, f"# {title}", "", "## Context and Problem Statement", "", body]
            if i % 17 == 0 and i > 2:
                lines += ["", f"This decision supersedes ADR-{i - 2:04d}."]
            lines += ["", "## Decision Outcome", "", f"Chosen option: {_prose(rng, 8)}"]
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "README.md").write_text("# Decisions\n\n- [one](0001-a.md)\n", encoding="utf-8")


def _time(fn: object, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        out.append((time.perf_counter() - t) * 1000)
    return out


def main(argv: list[str]) -> int:
    """Print cold and cached build times; exit 1 when cold misses the 300 ms bar."""
    n = int(argv[0]) if argv else 1000
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "adr"
        folder.mkdir()
        cache = Path(tmp) / "cache"
        generate(folder, n)
        graph = build_graph(folder)  # warm the OS page cache and imports once
        cold = _time(lambda: build_graph(folder), 7)
        build_graph(folder, cache)
        cached = _time(lambda: build_graph(folder, cache), 7)
        assert build_graph(folder, cache).from_cache
        counts: dict[str, int] = {}
        for rec in graph:
            counts[rec.status] = counts.get(rec.status, 0) + 1
    cpu = platform.processor() or platform.machine()
    print(f"machine: {cpu}, Python {platform.python_version()}, {n} records {counts}")
    print(f"cold build   median {statistics.median(cold):6.1f} ms  min {min(cold):6.1f} ms")
    print(f"cached build median {statistics.median(cached):6.1f} ms  min {min(cached):6.1f} ms")
    bar = statistics.median(cold) <= 300
    print(f"bar cold <= 300 ms: {'met' if bar else 'MISSED'}")
    return 0 if bar else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
