"""Hand labels of real ADR folders against the graph: shared by the shared-corpora
test and the wild-corpora test (same EXPECTED.json format)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from precedents.adr_graph import build_graph


def readings(label: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """The labelled reading plus, for an ambiguous record, every alternative."""
    out = [(label["effective_status"], sorted(label.get("successors", [])))]
    if label.get("ambiguous"):
        out += [
            (a["effective_status"], sorted(a.get("successors", []))) for a in label["alternatives"]
        ]
    return out


def disagreements(folder: Path, expected: dict[str, dict[str, Any]]) -> list[str]:
    """Every label the graph of ``folder`` disagrees with, and every unlabelled ADR."""
    graph = build_graph(folder)
    wrong = []
    for path, label in expected.items():
        rec = graph.by_path.get(path)
        if rec is None:
            wrong.append(f"{path}: not taken for an ADR")
            continue
        got = (rec.status, sorted(rec.successors))
        if got not in readings(label):
            wrong.append(f"{path}: got {got}, labelled {readings(label)}")
    extra = sorted(set(graph.by_path) - set(expected))
    return wrong + [f"taken for an ADR but not labelled: {p}" for p in extra]
