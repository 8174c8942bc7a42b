"""Measure secret masking: first-call cost, per-call latency on a 2 KB note, MB/s,
then false positives and throughput on the shared corpora (docs/secrets.md).

Run: .venv/bin/python bench/masking.py  (not secrets.py: that name would shadow the stdlib module)
"""

from __future__ import annotations

import random
import statistics
import string
import time
from collections import Counter
from pathlib import Path
from unittest import mock

from precedents.secrets.mask import find_secrets, mask_secrets
from precedents.secrets.mask import mask as secrets

SHARED = Path(__file__).resolve().parents[2] / "shared"
# Every real text the project has: notes, rules, ADRs, conversation logs.
CORPUS_GLOBS = (
    "eval/**/*.md",
    "eval/**/*.mdc",
    "eval/**/*.jsonl",
    "claude-code/*.jsonl",
    "adr-corpora/**/*.md",
)

_RNG = random.Random(7)


def _note(size: int, *, japanese: bool = False) -> str:
    """A note of about ``size`` characters: prose, code, a hash, one planted secret."""
    words = ["index", "notes", "commit", "the", "store", "query", "model", "token", "daemon"]
    if japanese:
        words += ["日本語", "メモ", "検索", "🎉"]
    token = "ghp_" + "".join(_RNG.choice(string.ascii_letters + string.digits) for _ in range(36))
    parts = [
        "# Decision\n",
        f"commit {''.join(_RNG.choice('0123456789abcdef') for _ in range(40))}\n",
        f"export API_TOKEN={token}\n",
        "def f(password: str) -> None:\n    token = get_token()\n",
    ]
    while sum(map(len, parts)) < size:
        parts.append(" ".join(_RNG.choice(words) for _ in range(12)) + ".\n")
    return "".join(parts)[:size]


def _per_call(text: str, n: int) -> tuple[float, float]:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        mask_secrets(text)
        times.append(time.perf_counter() - start)
    times.sort()
    return statistics.median(times) * 1e6, times[int(0.99 * len(times))] * 1e6


def main() -> None:
    start = time.perf_counter()
    find_secrets("warm up")
    print(f"first call (builds the scanner): {time.perf_counter() - start:.2f} s")
    for label, japanese in (("ASCII", False), ("Japanese", True)):
        note = _note(2048, japanese=japanese)
        median, p99 = _per_call(note, 2000)
        print(f"2 KB {label} note: median {median:.0f} µs, p99 {p99:.0f} µs per call")
        big = _note(4 * 1024 * 1024, japanese=japanese)
        size_mb = len(big.encode()) / 1e6
        start = time.perf_counter()
        mask_secrets(big)
        elapsed = time.perf_counter() - start
        print(f"4 MB {label} text: {size_mb / elapsed:.1f} MB/s")
        notes = [_note(2048, japanese=japanese) for _ in range(500)]
        start = time.perf_counter()
        for n in notes:
            mask_secrets(n)
        elapsed = time.perf_counter() - start
        mb = sum(len(n.encode()) for n in notes) / 1e6
        print(f"500 x 2 KB {label} notes: {mb / elapsed:.1f} MB/s")


def _preview(value: str) -> str:
    """Enough of a finding to judge it by eye, never a whole secret."""
    return f"{value[:6]}…({len(value)} chars)" if len(value) > 10 else "…"


def corpora() -> None:
    """Spans found in the shared corpora, and those only the keyword-free rules add.

    Every span printed should be a real secret: the corpora hold one planted
    key (AWS's documentation example, twice). Anything else is a false positive.
    """
    files = sorted({p for pattern in CORPUS_GLOBS for p in SHARED.glob(pattern)})
    if not files:
        print(f"shared corpora not found under {SHARED}: skipped")
        return
    texts = {p: p.read_text("utf-8", "replace") for p in files}
    total: Counter[str] = Counter()
    added = 0
    for path, text in texts.items():
        spans = find_secrets(text)
        with (
            mock.patch.object(secrets, "token_spans", lambda text, data: []),
            mock.patch.object(secrets, "repeat_spans", lambda text, spans: []),
        ):
            before = {(s.start, s.end) for s in find_secrets(text)}
        for span in spans:
            total[span.kind] += 1
            new = (span.start, span.end) not in before
            added += new
            where = path.relative_to(SHARED)
            value = _preview(text[span.start : span.end])
            print(f"  {'NEW ' if new else ''}{span.kind:<16} {value:<22} {where}")
    mb = sum(len(t.encode()) for t in texts.values()) / 1e6
    print(
        f"shared corpora: {len(files)} files, {mb:.1f} MB: {sum(total.values())} spans "
        f"{dict(total)}, {added} of them from the keyword-free rules"
    )
    logs = [t for p, t in texts.items() if p.parent.name == "claude-code"]
    size_mb = sum(len(t.encode()) for t in logs) / 1e6
    lines = [line for t in logs for line in t.splitlines()]
    for label, batch in (("whole files", logs), ("line by line", lines)):
        runs = []
        for _ in range(7):
            start = time.perf_counter()
            for text in batch:
                mask_secrets(text)
            runs.append(time.perf_counter() - start)
        print(
            f"claude-code transcripts ({size_mb:.2f} MB), {label}: "
            f"median {size_mb / statistics.median(runs):.1f} MB/s, "
            f"best {size_mb / min(runs):.1f} MB/s"
        )


if __name__ == "__main__":
    main()
    corpora()
