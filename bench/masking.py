"""Measure secret masking: first-call cost, per-call latency on a 2 KB note, MB/s.

Run: .venv/bin/python bench/masking.py  (not secrets.py: that name would shadow the stdlib module)
"""

from __future__ import annotations

import random
import statistics
import string
import time

from precedents.secrets import find_secrets, mask_secrets

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


if __name__ == "__main__":
    main()
