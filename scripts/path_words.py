"""Path words as a query for the file hook: how often a real file path pulls a record.

Measured and not shipped (docs/eval.md, issue #18): every path of the
rules-wild traces (real files of 44 projects) is turned into words
(``src/payments/refund_service.py`` -> "src payments refund service py"),
ranked against an eval store's notes and ADRs with the prompt path's own
ranking and selection, and counted when the selection would inject.

    .venv/bin/python scripts/path_words.py STATE_DIR_OF_AN_EVAL_STORE

``STATE_DIR`` is a folder ``precedents eval`` made (``<state>/eval/<model>/situational-*``).
"""

from __future__ import annotations

import json
import os
import re
import statistics
import sys
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
WILD = REPO / "tests" / "fixtures" / "rules-wild"
_SPLIT = re.compile(r"[/_.\-]+|(?<=[a-z])(?=[A-Z])")


def words(path: str) -> str:
    """A file path as the words a query would hold."""
    return " ".join(w for w in _SPLIT.split(path) if len(w) > 1)


def main() -> int:
    from precedents.config import load_settings
    from precedents.recall import Recall, select

    home = Path(sys.argv[1])
    recall = Recall(replace(load_settings(discover_claude=False), home=home))
    project = sorted({m["project"] for m in recall.snapshot.meta})[0]
    paths = [
        json.loads(line)["file"]
        for traces in sorted(WILD.glob("*/TRACES.jsonl"))
        for line in traces.read_text().splitlines()
        if line.strip()
    ]
    injected, tops = 0, []
    for path in paths:
        hits, relevance = recall.assess(words(path), project)
        hits = [h for h in hits if h.record.kind in ("note", "adr")]
        sel = select(hits, recall.thresholds, project, relevance, recall.marks.successors_for)
        tops.append(sel.top)
        if sel.injected:
            injected += 1
            print(json.dumps({"path": path, "shown": [h.record.name for h in sel.chosen]}))
    ordered = sorted(tops)
    print(
        json.dumps(
            {
                "paths": len(paths),
                "injected": injected,
                "top_p50": round(statistics.median(tops), 3),
                "top_p95": round(ordered[int(0.95 * (len(ordered) - 1))], 3),
            }
        )
    )
    recall.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
