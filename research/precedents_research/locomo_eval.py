"""Session-level recall@k of precedents' conversation path on LoCoMo (snap-research).

    python -m precedents_research.locomo_eval DATA [--work DIR] [--k 5 10] [--json]
                                   [--details FILE] [--words W ...] [--cv FOLDS]

``DATA`` is ``locomo10.json`` or a git directory holding it at
``HEAD:data/locomo10.json`` (a clone of github.com/snap-research/locomo, or the
bare copy the ``fetch`` tool makes). The data set is CC BY-NC 4.0 and is not
kept in this repository; docs/locomo.md says how to get it.

What runs is the path a Claude Code log takes (docs/locomo.md has the details):

1. every LoCoMo session becomes one Claude Code JSONL transcript: the session's
   first speaker writes ``user`` lines, the other ``assistant`` lines, each turn
   as ``"Name: text"``, with the session's date as the lines' timestamps;
2. each LoCoMo conversation's transcripts go in their own folder, which is a
   configured ``conversations`` folder and so its own project, and
   :class:`~precedents.ingest.indexer.Indexer` indexes them all into one store (the
   real parser, masking, chunking and the bundled model);
3. each question is ranked by :meth:`Recall.rank` within its own project, and
   the ranked transcripts (one per session) are its retrieved sessions. Words
   and vectors rank together (``Thresholds.conversation_words``; ``--words W``
   sets the weight, ``--words 0`` is vectors alone).

``--cv FOLDS`` with several ``--words`` cross-validates the weight: the ten
conversations are split into FOLDS groups; for each, the weight scoring best
(R@5 + R@10, ``fraction``) on the other groups is applied to it, and the
figures are those of the held-out groups only.

Per question, with E its evidence sessions (``"D3:5"`` is session 3) and T the
top-k sessions: ``fraction`` = |E ∩ T| / |E| (the figure MemPalace and
basic-memory publish), ``all`` = E ⊆ T, ``any`` = E ∩ T ≠ ∅. Questions whose
evidence names no session (four in locomo10) are left out and counted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from precedents.config import Settings
from precedents.ingest.indexer import Indexer, IndexReport
from precedents.ingest.sources import configured_sources, project_root, walk
from precedents.models.embedding import Embedder, load_embedder
from precedents.recall import Recall
from precedents.store import open_store

# LoCoMo's category ids as its own evaluation code scores them (task_eval/evaluation.py:
# 1 is split into sub-answers, 5 checks for "not mentioned"); 2-4 as most papers name them.
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
HEADLINE = (1, 2, 3, 4)  # the LoCoMo QA protocol leaves the adversarial category out
RULES = ("fraction", "all", "any")
DATA_IN_GIT = "HEAD:data/locomo10.json"
_EVIDENCE = re.compile(r"D:?(\d+):")  # "D3:5"; also the data's slips "D:11:26", "D8:6; D9:17"
_SESSION_FILE = re.compile(r"session_(\d+)\.jsonl$")


# ------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Turn:
    """One line of dialogue."""

    speaker: str
    text: str


@dataclass(frozen=True)
class Session:
    """One LoCoMo session: its number, when it took place, its turns."""

    number: int
    date_time: str  # as written, e.g. "1:56 pm on 8 May, 2023"
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    """One QA item: its text, category and the sessions its evidence lies in."""

    text: str
    category: int
    sessions: frozenset[int]


@dataclass(frozen=True)
class Sample:
    """One LoCoMo conversation: its sessions and questions."""

    sample_id: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]


def read_data(path: Path) -> bytes:
    """The bytes of ``locomo10.json``, or of ``HEAD:data/locomo10.json`` in a git dir."""
    if not path.is_dir():
        return path.read_bytes()
    shown = subprocess.run(
        ["git", "--git-dir", str(_git_dir(path)), "show", DATA_IN_GIT],
        capture_output=True,
        check=True,
    )
    return shown.stdout


def parse_data(data: bytes) -> list[Sample]:
    """Every conversation of ``locomo10.json``."""
    raw = json.loads(data)
    if not isinstance(raw, list):
        raise ValueError("expected a JSON list of LoCoMo samples")
    return [parse_sample(s) for s in raw]


def _git_dir(path: Path) -> Path:
    """A work tree's ``.git``, or ``path`` itself when it is a bare git directory."""
    return path / ".git" if (path / ".git").exists() else path


def evidence_sessions(evidence: Iterable[str]) -> frozenset[int]:
    """Session numbers named by evidence ids (``"D3:5"`` -> 3)."""
    return frozenset(int(n) for item in evidence for n in _EVIDENCE.findall(str(item)))


def parse_sample(raw: dict[str, Any]) -> Sample:
    """One element of ``locomo10.json`` as a :class:`Sample`."""
    conversation = raw["conversation"]
    sessions = []
    for key, turns in conversation.items():
        found = re.fullmatch(r"session_(\d+)", key)
        if found and isinstance(turns, list):
            number = int(found.group(1))
            parsed = tuple(Turn(str(t["speaker"]), str(t.get("text", ""))) for t in turns)
            date = str(conversation.get(f"{key}_date_time", ""))
            sessions.append(Session(number, date, parsed))
    questions = tuple(
        Question(str(q["question"]), int(q["category"]), evidence_sessions(q.get("evidence", [])))
        for q in raw["qa"]
    )
    ordered = tuple(sorted(sessions, key=lambda s: s.number))
    return Sample(str(raw["sample_id"]), ordered, questions)


# ------------------------------------------------------------------ transcripts


def iso_time(date_time: str) -> str:
    """LoCoMo's ``"1:56 pm on 8 May, 2023"`` as an ISO timestamp; "" when unreadable."""
    try:
        when = datetime.strptime(date_time.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return ""
    return when.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def transcript_lines(sample_id: str, session: Session, cwd: str) -> list[dict[str, Any]]:
    """One session as Claude Code transcript lines (the 2.x CLI's shape).

    The session's first speaker is the user and the other speaker the
    assistant, so every session opens with a prompt; a turn is ``"Name: text"``,
    so the names stay searchable as in the published runs.
    """
    session_id = f"{sample_id}-session-{session.number}"
    stamp = iso_time(session.date_time)
    first = session.turns[0].speaker if session.turns else ""
    lines = []
    for i, turn in enumerate(session.turns):
        text = f"{turn.speaker}: {turn.text}"
        line: dict[str, Any] = {"uuid": f"{session_id}-{i}", "sessionId": session_id}
        line |= {"cwd": cwd, "timestamp": stamp, "isSidechain": False, "entrypoint": "cli"}
        if turn.speaker == first:
            line |= {"type": "user", "origin": {"kind": "human"}}
            line["message"] = {"role": "user", "content": text}
        else:
            line["type"] = "assistant"
            content = [{"type": "text", "text": text}]
            line["message"] = {"id": f"msg_{session_id}_{i}", "role": "assistant", "model": "x"}
            line["message"]["content"] = content
        lines.append(line)
    return lines


def write_transcripts(sample: Sample, folder: Path) -> None:
    """Write each session as ``folder/session_NN.jsonl``; an unchanged file is left alone."""
    folder.mkdir(parents=True, exist_ok=True)
    for session in sample.sessions:
        lines = transcript_lines(sample.sample_id, session, str(folder))
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        path = folder / f"session_{session.number:02d}.jsonl"
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


def session_of(path: str) -> int:
    """The session number of a transcript path written by :func:`write_transcripts`."""
    found = _SESSION_FILE.search(path)
    if found is None:
        raise ValueError(f"{path}: not a LoCoMo session transcript")
    return int(found.group(1))


# ---------------------------------------------------------------- index and rank


@dataclass
class Ranked:
    """One question and the sessions ranked for it, best first."""

    sample_id: str
    question: Question
    sessions: list[int]


@dataclass
class Run:
    """What indexing and ranking did."""

    model: str = ""
    ranked: list[Ranked] = field(default_factory=list)
    report: IndexReport | None = None
    chunks: int = 0
    sessions: int = 0
    skipped: int = 0  # questions whose evidence names no session
    query_seconds: float = 0.0
    words: float = 0.0  # the word weight the run ranked with


def check_folders(folders: Sequence[Path]) -> None:
    """Each conversation folder must be its own project (no git repository above it)."""
    roots = [project_root(f) for f in folders]
    if roots != [str(f) for f in folders]:
        raise SystemExit("the work folder lies inside a git repository: pick one outside")


def index(settings: Settings, model: Embedder) -> IndexReport:
    """Index every configured conversation folder with the real indexer."""
    store = open_store(settings.index_dir, model)
    return Indexer(settings, store, model).sync(walk(configured_sources(settings)))


def rank_sample(recall: Recall, sample: Sample, folder: Path, k: int, run: Run) -> None:
    """Rank every question of ``sample`` within its own conversation's project."""
    for question in sample.questions:
        if not question.sessions:
            run.skipped += 1
            continue
        hits = recall.rank(question.text, folder, kinds=("conversation",), k=k)
        sessions = [session_of(h.record.path) for h in hits]
        run.ranked.append(Ranked(sample.sample_id, question, sessions))


def evaluate(
    samples: Sequence[Sample],
    work: Path,
    k: int,
    model: Embedder | None = None,
    words: Sequence[float | None] = (None,),
    model_id: str | None = None,
) -> list[Run]:
    """Write, index and rank ``samples`` under ``work``; ``k`` sessions kept per question.
    One run per weight in ``words`` (None: the model's default), on one index."""
    folders = [(work / "conversations" / s.sample_id).absolute() for s in samples]
    check_folders(folders)
    for sample, folder in zip(samples, folders, strict=True):
        write_transcripts(sample, folder)
    settings = Settings(home=work / "state", discover_claude=False, conversations=tuple(folders))
    if model_id:
        settings = replace(settings, model=model_id)
    model = model or load_embedder(settings.model_spec())
    report = index(settings, model)
    recall = Recall(settings, model)
    runs = []
    default = recall.thresholds
    try:
        for weight in words:
            run = Run(model.model_id, report=report, words=default.conversation_words)
            if weight is not None:
                recall.thresholds = replace(default, conversation_words=weight)
                run.words = weight
            run.chunks = recall.snapshot.rows
            run.sessions = len({m["path"] for m in recall.snapshot.meta})
            started = time.perf_counter()
            for sample, folder in zip(samples, folders, strict=True):
                rank_sample(recall, sample, folder, k, run)
            run.query_seconds = time.perf_counter() - started
            runs.append(run)
    finally:
        recall.close()
    return runs


def cross_validate(runs: Sequence[Run], folds: int) -> tuple[Run, list[dict[str, Any]]]:
    """The held-out run: each group of conversations ranked with the weight that scored
    best on the other groups. Returns it and, per fold, its conversations and weight."""
    samples = sorted({r.sample_id for r in runs[0].ranked})
    fold_of = {sid: i % folds for i, sid in enumerate(samples)}

    def merit(run: Run, held: int) -> float:
        rows = [r for r in run.ranked if fold_of[r.sample_id] != held]
        hits = [
            recall_at(r.sessions, r.question.sessions, k, "fraction") for r in rows for k in (5, 10)
        ]
        return sum(hits) / max(len(hits), 1)

    out = Run(runs[0].model, report=runs[0].report, chunks=runs[0].chunks)
    out.sessions, out.skipped = runs[0].sessions, runs[0].skipped
    chosen = []
    for held in range(folds):
        best = max(runs, key=lambda run: merit(run, held))
        out.ranked += [r for r in best.ranked if fold_of[r.sample_id] == held]
        names = [sid for sid in samples if fold_of[sid] == held]
        chosen.append({"held_out": names, "words": best.words})
    return out, chosen


# ----------------------------------------------------------------------- scoring


def recall_at(ranked: Sequence[int], evidence: frozenset[int], k: int, rule: str) -> float:
    """One question's recall@k under ``rule`` (``fraction``, ``all`` or ``any``)."""
    found = len(evidence & set(ranked[:k]))
    if rule == "fraction":
        return found / len(evidence)
    if rule == "all":
        return float(found == len(evidence))
    if rule == "any":
        return float(found > 0)
    raise ValueError(f"unknown rule {rule!r}")


def groups(ranked: Sequence[Ranked]) -> Iterator[tuple[str, list[Ranked]]]:
    """The rows of the table: each category, then cats 1-4 and all five together."""
    for category, name in CATEGORIES.items():
        rows = [r for r in ranked if r.question.category == category]
        if rows:
            yield f"{category} {name}", rows
    yield "1-4 (LoCoMo QA protocol)", [r for r in ranked if r.question.category in HEADLINE]
    yield "1-5 (all)", list(ranked)


def score(ranked: Sequence[Ranked], ks: Sequence[int]) -> list[dict[str, Any]]:
    """Mean recall per group, rule and k, as rows of plain data."""
    out = []
    for name, rows in groups(ranked):
        row: dict[str, Any] = {"group": name, "n": len(rows)}
        for rule in RULES:
            row[rule] = {
                str(k): _mean(recall_at(r.sessions, r.question.sessions, k, rule) for r in rows)
                for k in ks
            }
        out.append(row)
    return out


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return round(sum(items) / len(items), 4) if items else 0.0


def table(rows: Sequence[dict[str, Any]], ks: Sequence[int]) -> str:
    """The scores as an aligned text table (percentages)."""
    heads = [f"{rule} R@{k}" for rule in RULES for k in ks]
    lines = [f"{'group':<26} {'n':>5}  " + "  ".join(f"{h:>12}" for h in heads)]
    for row in rows:
        cells = [f"{row[rule][str(k)] * 100:11.1f}%" for rule in RULES for k in ks]
        lines.append(f"{row['group']:<26} {row['n']:>5}  " + "  ".join(cells))
    return "\n".join(lines)


# --------------------------------------------------------------------------- CLI


def summary(data: bytes, run: Run, ks: Sequence[int], seconds: float) -> dict[str, Any]:
    """Everything the run measured, for ``--json``."""
    report = run.report
    return {
        "data_sha256": hashlib.sha256(data).hexdigest(),
        "model": run.model,
        "conversation_words": run.words,
        "sessions_indexed": run.sessions,
        "chunks": run.chunks,
        "chunks_embedded": report.chunks_embedded if report else 0,
        "index_seconds": round(report.seconds, 1) if report else 0.0,
        "questions": len(run.ranked),
        "skipped_no_evidence": run.skipped,
        "query_ms_mean": round(run.query_seconds * 1000 / max(len(run.ranked), 1), 2),
        "total_seconds": round(seconds, 1),
        "scores": score(run.ranked, ks),
    }


def write_details(path: Path, run: Run) -> None:
    """One JSON line per question: its category, evidence sessions and ranked sessions."""
    with path.open("w", encoding="utf-8") as out:
        for r in run.ranked:
            row = {
                "sample_id": r.sample_id,
                "question": r.question.text,
                "category": r.question.category,
                "evidence_sessions": sorted(r.question.sessions),
                "ranked_sessions": r.sessions,
            }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


@contextmanager
def work_folder(given: Path | None) -> Iterator[Path]:
    """The given work folder (kept, so a re-run embeds nothing), else a temporary one."""
    if given is not None:
        given.mkdir(parents=True, exist_ok=True)
        yield given.absolute()
        return
    with tempfile.TemporaryDirectory(prefix="precedents-locomo-") as tmp:
        yield Path(tmp)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="locomo10.json, or a git dir holding it")
    parser.add_argument("--work", type=Path, help="keep transcripts and index here")
    parser.add_argument("--k", type=int, nargs="+", default=[5, 10], help="cut-offs (5 10)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N conversations")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--details", type=Path, help="write one JSON line per question here")
    parser.add_argument(
        "--words", type=float, nargs="+", help="word weight(s) for conversations (0: vectors)"
    )
    parser.add_argument("--cv", type=int, default=0, help="cross-validate --words, FOLDS groups")
    parser.add_argument("--model", help="embedding model id (default: the settings' model)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print its table (or JSON)."""
    args = parse_args(argv)
    started = time.perf_counter()
    data = read_data(args.data)
    samples = parse_data(data)[: args.limit or None]
    ks = sorted(set(args.k))
    weights: list[float | None] = list(args.words) if args.words else [None]
    with work_folder(args.work) as work:
        runs = evaluate(samples, work, max(ks), words=weights, model_id=args.model)
    if args.cv:
        run, chosen = cross_validate(runs, args.cv)
    else:
        run, chosen = runs[-1], []
    result = summary(data, run, ks, time.perf_counter() - started)
    if chosen:
        result["cv_folds"] = chosen
        result["in_sample"] = {
            str(r.words): {row["group"]: row["fraction"] for row in score(r.ranked, ks)}
            for r in runs
        }
    if args.details:
        write_details(args.details, run)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        info = {k: v for k, v in result.items() if k != "scores"}
        print(" ".join(f"{k}={v}" for k, v in info.items()))
        print(table(result["scores"], ks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
