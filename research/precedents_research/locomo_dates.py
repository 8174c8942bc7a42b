"""Date words against a conversation's date, measured on LoCoMo questions given a date cue.

    python -m precedents_research.locomo_dates DATA --work DIR [--dates W ...] [--cv FOLDS]
                                    [--model ID]

No public set asks about past sessions by date ("what did we decide on
Tuesday?"), so this one is derived from LoCoMo (CC BY-NC 4.0, docs/locomo.md):
every question whose evidence lies in one session gets a cue that points at
that session's day from a chosen "today", the way a user would say it, and is
ranked with that today:

- ``yesterday`` (today is the day after),
- ``on <weekday>`` (today is 1–6 days after),
- ``last week`` (today is in the calendar week after),
- ``on <Month> <day>`` (today is 30 days after),

picked per question by a hash of its text (so every run asks the same). The
cue is appended: ``"<question> (we talked about it yesterday)"``. Ranking runs
through the product's :meth:`Recall.rank` (words and vectors as shipped),
once per ``--dates`` weight; ``--cv`` picks the weight on the other
conversations, fold by fold, like ``locomo_eval.py --cv``. The questions
without a cue are ranked too with the shipped weight, to show that a question
with no date words ranks as before.

It measures the mechanism on the days LoCoMo's sessions fall on (days to weeks
apart), not how often users say such things.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from precedents.config import Settings
from precedents.models.embedding import load_embedder
from precedents.recall import Recall
from precedents_research import locomo_eval as le


def session_day(session: le.Session) -> date | None:
    """The day a LoCoMo session took place."""
    stamp = le.iso_time(session.date_time)
    return datetime.fromisoformat(stamp[:10]).date() if stamp else None


def cue(question: str, day: date) -> tuple[str, date]:
    """The question with a date cue for ``day``, and the today it is asked on."""
    pick = int(hashlib.sha256(question.encode()).hexdigest(), 16)
    kind = pick % 4
    if kind == 0:
        return f"{question} (we talked about it yesterday)", day + timedelta(days=1)
    if kind == 1:
        after = 1 + (pick // 4) % 6
        weekday = day.strftime("%A")
        return f"{question} (we talked about it on {weekday})", day + timedelta(days=after)
    if kind == 2:
        monday = day - timedelta(days=day.weekday())
        today = monday + timedelta(days=7 + (pick // 4) % 7)
        return f"{question} (we talked about it last week)", today
    text = f"{question} (we talked about it on {day.strftime('%B')} {day.day})"
    return text, day + timedelta(days=30)


def score(rows: Sequence[tuple[str, frozenset[int], list[int]]]) -> dict[str, float]:
    """R@5 and R@10 (``fraction``) over ``rows`` of (sample, evidence, ranked)."""
    out = {}
    for k in (5, 10):
        hits = [le.recall_at(ranked, evidence, k, "fraction") for _, evidence, ranked in rows]
        out[f"R@{k}"] = round(100 * sum(hits) / max(len(hits), 1), 1)
    out["n"] = len(rows)
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Index (or reuse) the work folder, rank the cued questions per weight, cross-validate."""
    samples = le.parse_data(le.read_data(args.data))
    work = args.work.absolute()
    folders = [(work / "conversations" / s.sample_id).absolute() for s in samples]
    le.check_folders(folders)
    for sample, folder in zip(samples, folders, strict=True):
        le.write_transcripts(sample, folder)
    settings = Settings(home=work / "state", discover_claude=False, conversations=tuple(folders))
    if args.model:
        settings = replace(settings, model=args.model)
    model = load_embedder(settings.model_spec())
    le.index(settings, model)
    recall = Recall(settings, model)
    shipped = recall.thresholds
    cued: list[tuple[str, str, date, frozenset[int], Path]] = []
    plain: list[tuple[str, str, frozenset[int], Path]] = []
    for sample, folder in zip(samples, folders, strict=True):
        days = {s.number: session_day(s) for s in sample.sessions}
        for q in sample.questions:
            if not q.sessions:
                continue
            plain.append((sample.sample_id, q.text, q.sessions, folder))
            (only,) = q.sessions if len(q.sessions) == 1 else (None,)
            day = days.get(only) if only is not None else None
            if day is not None:
                text, today = cue(q.text, day)
                cued.append((sample.sample_id, text, today, q.sessions, folder))
    per_weight: dict[float, list[tuple[str, frozenset[int], list[int]]]] = {}
    try:
        for weight in args.dates:
            recall.thresholds = replace(shipped, conversation_dates=weight)
            rows = []
            for sid, text, today, evidence, folder in cued:
                hits = recall.rank(text, folder, kinds=("conversation",), k=10, today=today)
                rows.append((sid, evidence, [le.session_of(h.record.path) for h in hits]))
            per_weight[weight] = rows
        recall.thresholds = shipped
        plain_rows = []
        for sid, text, evidence, folder in plain:
            hits = recall.rank(text, folder, kinds=("conversation",), k=10)
            plain_rows.append((sid, evidence, [le.session_of(h.record.path) for h in hits]))
    finally:
        recall.close()
    return {
        "model": model.model_id,
        "cued_questions": len(cued),
        "in_sample": {str(w): score(rows) for w, rows in per_weight.items()},
        "held_out": cross_validate(per_weight, samples, args.cv) if args.cv else None,
        "plain_questions_shipped_weights": score(plain_rows),
        "shipped": {
            "conversation_words": shipped.conversation_words,
            "conversation_dates": shipped.conversation_dates,
        },
    }


def cross_validate(
    per_weight: dict[float, list[tuple[str, frozenset[int], list[int]]]],
    samples: Sequence[le.Sample],
    folds: int,
) -> dict[str, Any]:
    """Each fold of conversations scored with the weight best on the other folds."""
    fold_of = {s.sample_id: i % folds for i, s in enumerate(samples)}

    def merit(rows: list[tuple[str, frozenset[int], list[int]]], held: int) -> float:
        kept = [r for r in rows if fold_of[r[0]] != held]
        figures = score(kept)
        return figures["R@5"] + figures["R@10"]

    held_rows: list[tuple[str, frozenset[int], list[int]]] = []
    chosen = []
    for held in range(folds):
        weight = max(per_weight, key=lambda w: merit(per_weight[w], held))
        held_rows += [r for r in per_weight[weight] if fold_of[r[0]] == held]
        chosen.append(weight)
    return {"weights": chosen, **score(held_rows)}


def main(argv: Sequence[str] | None = None) -> int:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="locomo10.json, or a git dir holding it")
    parser.add_argument("--work", type=Path, required=True, help="transcripts and index")
    parser.add_argument("--dates", type=float, nargs="+", default=[0.0, 0.1, 0.2, 0.3, 0.5, 1.0])
    parser.add_argument("--cv", type=int, default=5, help="cross-validation folds (0: none)")
    parser.add_argument("--model", help="embedding model id (default: the settings' model)")
    args = parser.parse_args(argv)
    print(json.dumps(run(args), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
