"""Rules attached per each format's own semantics: the file hook against tests/fixtures/rules-wild.

For every project of the set (real rule files of 44 public repositories, each
laid out as that project's tree), the tree is copied into a git folder,
indexed the way `precedents reindex --project` does (discovery, parsing,
store), and every trace (a file an agent touches with Read, Edit or Write)
goes through the file hook's own path (:meth:`Recall.file_context`). Counted:
the rule attachments the labels expect that the hook gives, the ones it
gives outside every label (must be 0), per format and per tool; and for the
recorded sessions, how many records the hook injects with and without "once
per session".

    .venv/bin/python scripts/rules_conformance.py [--json out.json] [--project NAME]...

Uses the public API only; the labels come from an independent reference
(tests/fixtures/rules-wild/label.mjs, picomatch), never from this code.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
WILD = REPO / "tests" / "fixtures" / "rules-wild"


def projects() -> list[Path]:
    """The project folders of the set."""
    return sorted(p for p in WILD.iterdir() if (p / "TRACES.jsonl").is_file())


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def index_project(project: Path, work: Path, embedder: Any) -> tuple[Any, Path]:
    """Copy ``project``'s tree into a git folder under ``work`` and index it; returns
    (settings, the repository folder)."""
    from precedents.config import load_settings
    from precedents.ingest.indexer import Indexer
    from precedents.ingest.sources import Sources, configured_sources, walk
    from precedents.store import Store

    repo = work / project.name
    shutil.copytree(project / "tree", repo, symlinks=True)
    (repo / ".git").mkdir()
    os.environ["PRECEDENTS_HOME"] = str(work / f"{project.name}.state")
    settings = load_settings(discover_claude=False)
    store = Store(settings.index_dir, embedder.model_id, embedder.dimension)
    found = configured_sources(settings, Sources(project=str(repo)))
    Indexer(settings, store, embedder).sync(walk(found))
    return settings, repo


def rules_given(answer: Any, repo: Path) -> set[str]:
    """The rule files (relative to the repository) whose lines the hook printed."""
    from precedents.rules.formats import classify

    prefix = str(repo) + os.sep
    return {
        p[len(prefix) :].replace(os.sep, "/")
        for p in answer.shown
        if p.startswith(prefix) and classify(p, repo) is not None
    }


def score_traces(
    file_context: Callable[..., Any], repo: Path, traces: Iterable[dict[str, Any]]
) -> dict[str, Any]:
    """Expected attachments given, missed, and given outside every label."""
    from precedents.rules.formats import classify

    out: dict[str, Any] = {"traces": 0, "perfect": 0, "by_format": {}, "by_tool": {}}
    totals: Counter[str] = Counter()
    for trace in traces:
        answer = file_context(str(repo), str(repo / trace["file"]))
        given, expected = rules_given(answer, repo), set(trace["expected"])
        out["traces"] += 1
        out["perfect"] += given == expected
        for rel in expected | given:
            placed = classify(repo / rel, repo)
            fmt = placed.format if placed else "?"
            verdict = (
                "given"
                if rel in given and rel in expected
                else ("missed" if rel in expected else "outside")
            )
            for key, bucket in (("by_format", fmt), ("by_tool", trace["tool"])):
                entry = out[key].setdefault(bucket, Counter())
                entry[verdict] += 1
            totals[verdict] += 1
            if verdict != "given":
                out.setdefault("misses", []).append(
                    {"file": trace["file"], "rule": rel, "verdict": verdict}
                )
    out.update(totals)
    out["by_format"] = {k: dict(v) for k, v in sorted(out["by_format"].items())}
    out["by_tool"] = {k: dict(v) for k, v in sorted(out["by_tool"].items())}
    return out


def score_sessions(
    file_context: Callable[..., Any], repo: Path, sessions: Iterable[dict[str, Any]]
) -> dict[str, int]:
    """Records injected over each recorded session: once per session, and without it
    (every touch a session of its own, as before the change)."""
    once = every = touches = 0
    for n, session in enumerate(sessions):
        for i, touch in enumerate(session["touches"]):
            path = str(repo / touch["file"])
            touches += 1
            once += len(file_context(str(repo), path, session=f"s{n}").shown)
            every += len(file_context(str(repo), path, session=f"s{n}-{i}").shown)
    return {"touches": touches, "injected_once_per_session": once, "injected_every_touch": every}


def run(names: list[str], embedder: Any) -> dict[str, Any]:
    """Score every project named (all when none)."""
    from precedents.recall.core import Recall

    result: dict[str, Any] = {"projects": {}}
    work = Path(tempfile.mkdtemp(prefix="precedents-rules-wild-"))
    try:
        for project in projects():
            if names and project.name not in names:
                continue
            settings, repo = index_project(project, work, embedder)
            recall = Recall(settings, embedder)
            try:
                scored = score_traces(
                    recall.file_context, repo, read_jsonl(project / "TRACES.jsonl")
                )
                scored["sessions"] = score_sessions(
                    recall.file_context, repo, read_jsonl(project / "SESSIONS.jsonl")
                )
            finally:
                recall.close()
            result["projects"][project.name] = scored
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return summarize(result)


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    """Totals over the projects: attachments given / expected, outside, sessions."""
    total: Counter[str] = Counter()
    by_format: dict[str, Counter[str]] = {}
    by_tool: dict[str, Counter[str]] = {}
    sessions: Counter[str] = Counter()
    for scored in result["projects"].values():
        for key in ("traces", "perfect", "given", "missed", "outside"):
            total[key] += scored.get(key, 0)
        for src, dst in ((scored["by_format"], by_format), (scored["by_tool"], by_tool)):
            for bucket, counts in src.items():
                dst.setdefault(bucket, Counter()).update(counts)
        sessions.update(scored["sessions"])
    expected = total["given"] + total["missed"]
    result["total"] = {
        **total,
        "expected": expected,
        "attached_rate": round(total["given"] / expected, 4) if expected else None,
    }
    result["by_format"] = {k: dict(v) for k, v in sorted(by_format.items())}
    result["by_tool"] = {k: dict(v) for k, v in sorted(by_tool.items())}
    result["sessions"] = dict(sessions)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--project", action="append", default=[], help="only this fixture")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    from precedents.models.embedding import load_embedder

    result = run(args.project, load_embedder())
    brief = {k: result[k] for k in ("total", "by_format", "by_tool", "sessions")}
    print(json.dumps(brief, indent=2))
    misses = [
        {"project": name, **m}
        for name, scored in result["projects"].items()
        for m in scored.get("misses", [])
    ]
    for miss in misses[:40]:
        print(json.dumps(miss))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
