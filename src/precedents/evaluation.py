"""`precedents eval`: retrieval and selection quality on the shared evaluation sets.

The corpus is assembled as ``shared/eval/dev-situational/README.md`` says (the
dev notes, the situational rules and six ADR corpora, as one project), indexed
into its own state folder (``<state>/eval/<model>``, kept between runs so a
re-run embeds nothing), and every message goes through the same code the hook
uses: :class:`Recall` ranks, :func:`select` decides, :func:`format_context`
writes the lines. Scores follow the sets' READMEs:

- ``dev`` questions: the expected note ranked first (bar 95%);
- situational: an expected record in the top 3 (bar 85%) and injected (80%);
- superseded traps: a shown trap carries its mark (always), successor shown (bonus);
- unrelated (``dev`` and situational): nothing injected (bar 85%).

``tune`` re-runs only the pure selection over a grid of thresholds (the
ranking is computed once) and reports the best setting that keeps unrelated
messages quiet; the chosen values go in :data:`config.MODEL_THRESHOLDS`.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from precedents.config import Settings, Thresholds
from precedents.embedding import Embedder, load_embedder
from precedents.errors import UsageError
from precedents.indexer import Indexer, Progress
from precedents.query_daemon.format import format_context
from precedents.query_daemon.recall import Recall
from precedents.query_daemon.selection import select
from precedents.sources import configured_sources, walk
from precedents.store import DocumentHit, DocumentRecord

ADR_CORPORA = (
    "JabRef__jabref",
    "alphagov__govuk-aws",
    "alphagov__gsp",
    "elastisys__compliantkubernetes",
    "ministryofjustice__modernisation-platform",
    "thomvaill__log4brains",
)
PROJECT_NAME = "eval-project"
MARKED = re.compile(r"⚠️|△|status unknown")


@dataclass(frozen=True)
class Message:
    """One evaluation message with what should (or should not) come back."""

    id: str
    text: str
    kind: str  # paraphrase | situational | superseded_trap | unrelated
    expected: tuple[str, ...] = ()
    trap: str = ""
    successor: str = ""
    source: str = ""  # dev | situational


@dataclass
class Ranked:
    """A message with its ranked documents (record ids) and hits, computed once."""

    message: Message
    hits: list[DocumentHit]
    ids: list[str]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def load_messages(shared: Path) -> list[Message]:
    """The dev questions and unrelated messages, and the situational set."""
    out: list[Message] = []
    dev = shared / "eval" / "dev"
    for row in _jsonl(dev / "questions.jsonl") + _jsonl(dev / "unrelated.jsonl"):
        out.append(
            Message(
                row["id"],
                row["text"],
                row["kind"],
                tuple(f"notes/{e}" for e in row.get("expected", [])),
                source="dev",
            )
        )
    for row in _jsonl(dev / "crosslingual.jsonl") if (dev / "crosslingual.jsonl").exists() else []:
        expected = tuple(f"notes/{e}" for e in row.get("expected", []))
        out.append(Message(row["id"], row["text"], "crosslingual", expected, source="crosslingual"))
    for row in _jsonl(shared / "eval" / "dev-situational" / "messages.jsonl"):
        out.append(
            Message(
                row["id"],
                row["text"],
                row["kind"],
                tuple(row.get("expected", [])),
                row.get("trap") or "",
                row.get("successor") or "",
                "situational",
            )
        )
    return out


def assemble_corpus(shared: Path, work: Path) -> dict[str, Path]:
    """Lay the eval corpus out under ``work``; returns record id -> file path.

    Notes and rules are used in place; the ADRs keyed in each corpus'
    EXPECTED.json are copied (the folders also hold READMEs and indexes that
    are not part of the corpus).
    """
    if not (shared / "eval" / "dev-situational").is_dir():
        raise UsageError(f"{shared}: no eval sets there (expected eval/ and adr-corpora/)")
    ids: dict[str, Path] = {}
    for path in sorted((shared / "eval" / "dev" / "notes").glob("*.md")):
        ids[f"notes/{path.name}"] = path
    for path in sorted((shared / "eval" / "dev-situational" / "rules").glob("*.mdc")):
        ids[f"rules/{path.name}"] = path
    for corpus in ADR_CORPORA:
        src = shared / "adr-corpora" / corpus
        expected = json.loads((src / "EXPECTED.json").read_text(encoding="utf-8"))
        keys = expected.get("records", expected) if isinstance(expected, dict) else {}
        for rel in keys:
            if not (src / rel).is_file():
                continue
            dst = work / "adrs" / corpus / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            if not dst.exists() or dst.read_bytes() != (src / rel).read_bytes():
                shutil.copyfile(src / rel, dst)
            ids[f"adrs/{corpus}/{rel}"] = dst
    return ids


def assemble_crosslingual(shared: Path, work: Path) -> dict[str, Path]:
    """The dev notes with the ten that have a Japanese translation replaced by it.

    As ``eval/dev/README.md`` says: never both, or the English original would
    answer the English question.
    """
    dev = shared / "eval" / "dev"
    folder = work / "crosslingual" / "notes"
    folder.mkdir(parents=True, exist_ok=True)
    ids: dict[str, Path] = {}
    for path in sorted((dev / "notes").glob("*.md")):
        ja = dev / "notes_ja" / path.name
        src = ja if ja.is_file() else path
        dst = folder / path.name
        if not dst.exists() or dst.read_bytes() != src.read_bytes():
            shutil.copyfile(src, dst)
        ids[f"notes/{path.name}"] = dst
    return ids


@dataclass
class EvalRun:
    """An indexed eval corpus and its ranked messages."""

    settings: Settings
    project: str
    ids: dict[str, str]  # stored path -> record id
    ranked: list[Ranked] = field(default_factory=list)
    marks: Callable[[DocumentRecord], str] = field(default=lambda _r: "")


def prepare(
    settings: Settings,
    shared: Path,
    progress: Progress | None = None,
    embedder: Embedder | None = None,
) -> EvalRun:
    """Index the eval corpus (incrementally, in its own state folder) and rank every message."""
    from precedents.api import open_store

    slug = re.sub(r"[^A-Za-z0-9]+", "-", settings.model).strip("-")
    home = settings.home / "eval" / slug
    work = home / "corpus"
    project = str(work / PROJECT_NAME)
    eval_settings = replace(settings, home=home, discover_claude=False)
    ids = assemble_corpus(shared, work)
    for root in (project, str(work / "crosslingual")):
        # Each corpus is its own project even when the state folder sits inside
        # a git checkout (a project is its git root, SPEC §2).
        (Path(root) / ".git").mkdir(parents=True, exist_ok=True)
    model = embedder or load_embedder(settings.model, settings.device)
    store = open_store(eval_settings, model)
    sources = configured_sources(
        eval_settings,
        notes=[shared / "eval" / "dev" / "notes"],
        rules=[shared / "eval" / "dev-situational" / "rules"],
        adrs=[work / "adrs"],
        project=project,
    )
    Indexer(eval_settings, store, model).sync(walk(sources), progress)
    cross_ids = assemble_crosslingual(shared, work)
    cross_project = str(work / "crosslingual")
    cross = configured_sources(
        eval_settings, notes=[work / "crosslingual" / "notes"], project=cross_project
    )
    Indexer(eval_settings, store, model).sync(walk(cross), progress)
    paths = {str(p): rid for rid, p in ids.items()}
    paths.update({str(p): rid for rid, p in cross_ids.items()})
    run = EvalRun(eval_settings, project, paths)
    recall = Recall(eval_settings, model)
    try:
        for msg in load_messages(shared):
            if msg.kind == "crosslingual":  # its own corpus: notes only, as the set says
                hits = recall.rank(msg.text, cross_project, kinds=("note",))
            else:
                hits = recall.rank(msg.text, project)
            ranked_ids = [run.ids.get(h.record.path, h.record.path) for h in hits]
            run.ranked.append(Ranked(msg, hits, ranked_ids))
        run.marks = recall.marks.mark_for
    finally:
        recall.close()
    return run


def _shown(text: str | None, hits: list[DocumentHit], ids: dict[str, str]) -> dict[str, str]:
    """Record id -> the injected line that shows it."""
    if not text:
        return {}
    shown: dict[str, str] = {}
    for line in text.splitlines()[1:]:
        for h in hits:
            if f"({h.record.path})" in line:
                shown[ids.get(h.record.path, h.record.path)] = line
    return shown


def score(run: EvalRun, thresholds: Thresholds) -> dict[str, Any]:
    """Every figure of the eval at one threshold setting."""
    tally: dict[str, list[int]] = {}

    def add(key: str, ok: bool) -> None:
        tally.setdefault(key, [0, 0])
        tally[key][0] += int(ok)
        tally[key][1] += 1

    for r in run.ranked:
        m = r.message
        selection = select(r.hits, thresholds, run.project)
        shown = _shown(format_context(selection, run.marks), r.hits, run.ids)
        docs = [i for i, h in zip(r.ids, r.hits, strict=True) if h.record.kind != "conversation"]
        if m.kind == "paraphrase":
            add("dev: right note first", bool(docs) and docs[0] in m.expected)
            add("dev: right note injected", any(e in shown for e in m.expected))
        elif m.kind == "crosslingual":
            add("crosslingual: right note first", bool(docs) and docs[0] in m.expected)
            add("crosslingual: in top 3", any(e in docs[:3] for e in m.expected))
        elif m.kind == "situational":
            group = m.expected[0].split("/")[0]
            top3 = any(e in docs[:3] for e in m.expected)
            add("situational: in top 3", top3)
            add("situational: injected", top3 and any(e in shown for e in m.expected))
            add(f"situational {group}: injected", top3 and any(e in shown for e in m.expected))
        elif m.kind == "superseded_trap":
            if m.trap in shown:
                add("trap: shown with its mark", bool(MARKED.search(shown[m.trap])))
            add(
                "trap: not shown unmarked",
                m.trap not in shown or bool(MARKED.search(shown[m.trap])),
            )
            if m.successor:
                add("trap: successor shown (bonus)", m.successor in shown)
        elif m.kind == "unrelated":
            add(f"unrelated ({m.source}): nothing injected", not shown)
            add("unrelated (all): nothing injected", not shown)
    return {k: {"ok": v[0], "n": v[1], "rate": round(v[0] / v[1], 3)} for k, v in tally.items()}


GRID = (
    tuple(x / 100 for x in range(20, 72, 2)),  # min_top
    tuple(x / 1000 for x in range(0, 101, 5)),  # min_gap
    tuple(x / 100 for x in range(4, 21, 2)),  # wide_gap
)


def tune(
    run: EvalRun,
    unrelated_bar: float = 0.85,
    grid: tuple[Sequence[float], Sequence[float], Sequence[float]] = GRID,
) -> tuple[Thresholds, dict[str, Any]]:
    """The grid point with the most situational records injected whose unrelated
    messages stay quiet at ``unrelated_bar`` (or, if none reaches it, the quietest)."""
    best: tuple[tuple[float, ...], Thresholds, dict[str, Any]] | None = None
    for min_top, min_gap, wide in itertools.product(*grid):
        if wide < min_gap:
            continue
        th = Thresholds(min_top, min_gap, wide, 0.05)
        s = score(run, th)
        quiet = s["unrelated (all): nothing injected"]["rate"]
        injected = s["situational: injected"]["rate"]
        dev = s["dev: right note injected"]["rate"]
        key = (
            float(quiet >= unrelated_bar),
            injected + dev if quiet >= unrelated_bar else quiet,
            quiet,
        )
        if best is None or key > best[0]:
            best = (key, th, s)
    assert best is not None
    return best[1], best[2]


def report_lines(scores: dict[str, Any]) -> Iterable[str]:
    """The figures as aligned text lines."""
    for key, v in scores.items():
        yield f"  {key:<42} {v['ok']:>3}/{v['n']:<3} {v['rate'] * 100:5.1f}%"
