"""Measure the suspect check (docs/daemon.md, "Stored text is data"): the cost of one
record as the hooks read it (name, description, file name) over the real rule files and
ADRs of the test fixtures, memo cleared, and of one ADR paragraph as the ADR tools read
it; and how many of them are flagged (false positives: the goal is none).

Run: .venv/bin/python bench/suspect.py
"""

from __future__ import annotations

import re
import statistics
import time
from pathlib import Path

from precedents.inert import path_words, suspect_reason
from precedents.ingest.chunking import adr_summary, parse_note
from precedents.secrets.mask import mask_secrets

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
PARAGRAPH = re.compile(r"\n[ \t]*\n")
SKIP = ("SOURCE.json", "README.md", "label.mjs")


def records(folder: str, adr: bool) -> list[tuple[tuple[str, ...], list[str]]]:
    """(the fields a hook reads, the body's paragraphs) of every real file of ``folder``."""
    root = FIXTURES / folder
    out = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.name in SKIP or path.suffix in (".json", ".jsonl"):
            continue
        if path.name.startswith("UPSTREAM-LICENSE"):
            continue
        if not adr and "tree" not in path.relative_to(root).parts:
            continue
        text = mask_secrets(path.read_text(encoding="utf-8", errors="replace"))
        meta = parse_note(text, path.stem)
        description = (adr_summary(meta.body) or meta.description) if adr else meta.description
        fields = (meta.name, description, path_words(str(path)))
        out.append((fields, [p for p in PARAGRAPH.split(meta.body) if p.strip()]))
    return out


def per_item(items: list[tuple[str, ...]], rounds: int = 7) -> float:
    """Median µs per call over ``rounds`` passes, the memo cleared before each pass."""
    times = []
    for _ in range(rounds):
        suspect_reason.cache_clear()
        start = time.perf_counter()
        for fields in items:
            suspect_reason(*fields)
        times.append((time.perf_counter() - start) / len(items) * 1e6)
    return statistics.median(times)


def main() -> None:
    for folder, adr in (("rules-wild", False), ("adr-wild", True)):
        found = records(folder, adr)
        heads = [fields for fields, _ in found]
        paragraphs = [(p,) for _, body in found for p in body]
        flagged = sum(bool(suspect_reason(*f)) for f in heads)
        flagged_body = sum(bool(suspect_reason(*p)) for p in paragraphs)
        print(
            f"{folder}: {len(heads)} records, {per_item(heads):.1f} µs a record, "
            f"{flagged} flagged; {len(paragraphs)} body paragraphs, "
            f"{per_item(paragraphs, 3):.1f} µs a paragraph, {flagged_body} flagged"
        )


if __name__ == "__main__":
    main()
