"""Agreement of the ADR graph with the hand-labelled corpora (SPEC §7: 100%).

Run: .venv/bin/python bench/adr_agreement.py [CORPORA_DIR] [-v]
Prints, per corpus, how many records agree on effective status and on
successors (a record labelled `ambiguous` agrees with any of its alternatives).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from precedents.adr_graph import build_graph

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "adr-corpora"


def readings(label: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """Every acceptable (status, successors) reading of one labelled record."""
    out = [(label["effective_status"], list(label.get("successors", [])))]
    for alt in label.get("alternatives", []) if label.get("ambiguous") else []:
        out.append((alt["effective_status"], list(alt.get("successors", []))))
    return out


def compare(corpus: Path) -> dict[str, Any]:
    """Agreement figures for one corpus folder, with the disagreements."""
    expected = json.loads((corpus / "EXPECTED.json").read_text(encoding="utf-8"))
    graph = build_graph(corpus)
    status_ok = succ_ok = title_ok = 0
    misses: list[str] = []
    for path, label in expected.items():
        rec = graph.by_path.get(path)
        if rec is None:
            misses.append(f"{path}: not found as an ADR")
            continue
        got = (rec.status, sorted(rec.successors))
        ok = [(s, sorted(x)) for s, x in readings(label)]
        if any(rec.status == s for s, _ in ok):
            status_ok += 1
        if got in ok:
            succ_ok += 1
        else:
            misses.append(f"{path}: got {got}, expected one of {ok}")
        title_ok += rec.title == label.get("title")
    extra = sorted(set(graph.by_path) - set(expected))
    misses.extend(f"{p}: taken for an ADR but not labelled" for p in extra)
    return {
        "corpus": corpus.name,
        "records": len(expected),
        "status": status_ok,
        "status_and_successors": succ_ok,
        "titles": title_ok,
        "extra": len(extra),
        "misses": misses,
    }


def main(argv: list[str]) -> int:
    """Print the table; exit 1 when any record disagrees."""
    verbose = "-v" in argv
    args = [a for a in argv if a != "-v"]
    root = Path(args[0]) if args else DEFAULT
    if not root.is_dir():
        print(f"corpora not found: {root}", file=sys.stderr)
        return 2
    bad = 0
    print(f"{'corpus':44} {'ADRs':>5} {'status':>8} {'+succ':>8} {'titles':>7}")
    for corpus in sorted(p for p in root.iterdir() if (p / "EXPECTED.json").is_file()):
        r = compare(corpus)
        n = r["records"]
        print(
            f"{r['corpus']:44} {n:5d} {r['status'] / n:8.1%} "
            f"{r['status_and_successors'] / n:8.1%} {r['titles'] / n:7.1%}"
        )
        bad += len(r["misses"])
        if verbose:
            for m in r["misses"]:
                print("   ", m)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
