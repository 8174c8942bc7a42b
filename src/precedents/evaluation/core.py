"""`precedents eval --set DIR`: retrieval and selection quality on labelled sets.

An eval set is a folder (docs/eval.md, "Eval set format")::

    SET/
      notes/          *.md            memory notes          (each part optional,
      rules/          *.md, *.mdc     shared rules           at least one needed)
      adrs/           ADR folders     architecture decisions
      conversations/  *.jsonl         Claude Code logs
      messages.jsonl  one labelled message per line

Each set is indexed as one project into its own store under
``<state>/eval/<model>/<set>-<hash>/`` (kept between runs, so a re-run embeds
nothing), and every message goes through the code the hook runs:
:class:`Recall` ranks, :func:`select` decides, :func:`format_context` writes
the lines. A record id is a file's path relative to its set (``notes/x.md``).

Figures, by message kind:

- ``paraphrase``: the expected record ranked first, in the top 3, injected;
- ``situational``: an expected record in the top 3 (bar 85%) and injected (80%);
- ``superseded_trap``: a shown trap carries its mark (always); successor shown (bonus);
  handled: marked with a mark naming its successor, or the successor shown;
- ``unrelated``: nothing injected (bar 85%); padded copies (``padded_from``)
  are reported apart, so a decision that leans on length shows up.

``tune`` re-runs only the pure selection over a grid of thresholds (the
ranking is computed once) and reports the best setting that keeps unrelated
messages quiet; the chosen values go in the model's profile (:data:`config.PROFILES`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from precedents.config import Settings, Thresholds
from precedents.errors import UsageError
from precedents.ingest.indexer import Indexer
from precedents.ingest.progress import Progress
from precedents.ingest.sources import Sources, configured_sources, project_root, walk
from precedents.models.embedding import Embedder, load_embedder
from precedents.recall import AdrMarks, Recall, select
from precedents.recall.format import format_context
from precedents.store import DocumentHit, open_store

MESSAGES = "messages.jsonl"
PARTS = ("notes", "rules", "adrs", "conversations")
MESSAGE_KINDS = ("paraphrase", "situational", "superseded_trap", "unrelated")
MARKED = re.compile(r"⚠️|△|status unknown")
AMENDED = "⚠️amended"


@dataclass(frozen=True)
class Message:
    """One labelled message with what should (or should not) come back."""

    id: str
    text: str
    kind: str  # one of MESSAGE_KINDS
    expected: tuple[str, ...] = ()
    trap: str = ""
    successor: str = ""
    group: str = ""  # the label its figures are reported under (default: the set's name)
    padded: bool = False  # an unrelated message wrapped in neutral chatter
    where: str = ""  # its file and line, for errors
    # Records an expected one amended (a chat's earlier decisions, issue #27): passes
    # when each is left out or shown with its amended mark.
    stale: tuple[str, ...] = ()
    # The file the agent reads next (relative to the set): the file hook's answer for
    # it counts too ("reaches the agent, prompt or file hook").
    file: str = ""


@dataclass
class SetRun:
    """One indexed set: its project, record ids and ADR marks."""

    name: str
    project: str
    ids: dict[str, str]  # stored path -> record id
    marks: AdrMarks | None = None  # the set's ADR marks and successors, as the hook shows them


@dataclass
class Ranked:
    """A message with its ranked documents (record ids) and hits, computed once."""

    message: Message
    hits: list[DocumentHit]
    ids: list[str]
    set: SetRun
    relevance: float | None = None  # the learned score select() decides with
    file_text: str | None = None  # what the file hook gave for the message's file


@dataclass
class EvalRun:
    """Every set's ranked messages."""

    settings: Settings
    sets: list[SetRun] = field(default_factory=list)
    ranked: list[Ranked] = field(default_factory=list)


def _message(row: Any, group: str, where: str) -> Message:
    if not isinstance(row, dict) or not isinstance(row.get("text"), str):
        raise UsageError(f"{where}: not an object with a text")
    kind = row.get("kind")
    if kind not in MESSAGE_KINDS:
        raise UsageError(f"{where}: kind must be one of {', '.join(MESSAGE_KINDS)}, not {kind!r}")
    expected = row.get("expected") or []
    if not isinstance(expected, list) or not all(isinstance(e, str) for e in expected):
        raise UsageError(f"{where}: expected must be a list of record ids")
    if kind in ("paraphrase", "situational") and not expected:
        raise UsageError(f"{where}: a {kind} message needs its expected record ids")
    if kind == "superseded_trap" and not isinstance(row.get("trap"), str):
        raise UsageError(f"{where}: a superseded_trap message needs its trap record id")
    stale = row.get("stale") or []
    if not isinstance(stale, list) or not all(isinstance(e, str) for e in stale):
        raise UsageError(f"{where}: stale must be a list of record ids")
    return Message(
        str(row.get("id") or where),
        row["text"],
        kind,
        tuple(expected),
        str(row.get("trap") or ""),
        str(row.get("successor") or ""),
        str(row.get("group") or group),
        bool(row.get("padded_from")),
        where,
        tuple(stale),
        str(row.get("file") or ""),
    )


def load_messages(folder: Path) -> list[Message]:
    """The labelled messages of a set; a malformed line is a one-line :class:`UsageError`."""
    path = folder / MESSAGES
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the set's messages ({exc})") from None
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise UsageError(f"{path}:{n}: not JSON ({exc})") from None
        msg = _message(row, folder.name, f"{path}:{n}")
        _check_files(folder, msg)
        out.append(msg)
    if not out:
        raise UsageError(f"{path}: no messages")
    return out


def _named(msg: Message) -> list[tuple[str, str]]:
    """Every record id a message names, with the field that names it."""
    out = [("expected", e) for e in msg.expected] + [("stale", e) for e in msg.stale]
    out += [(name, rid) for name, rid in (("trap", msg.trap), ("successor", msg.successor)) if rid]
    return out


def _who(msg: Message) -> str:
    """How an error names a message: its file and line, and its id when it has its own."""
    return msg.where if msg.id == msg.where else f"{msg.where} (message {msg.id!r})"


def _check_files(folder: Path, msg: Message) -> None:
    """Every id the message names is a file of the set; else a :class:`UsageError`.

    A label that names nothing would otherwise be scored as a miss forever, and
    the figures would blame the model for a typo in the set.
    """
    for name, rid in _named(msg):
        rel = Path(rid)
        if rel.is_absolute() or ".." in rel.parts or not (folder / rel).is_file():
            raise UsageError(
                f"{_who(msg)}: {name} {rid!r} names no file of the set "
                "(a record id is a path relative to the set, e.g. notes/x.md)"
            )


def _check_records(messages: Sequence[Message], records: set[str]) -> None:
    """Every id the messages name is a record the set's store holds (a file that
    indexed to nothing, say an empty note or a .txt under notes/, is no record)."""
    for msg in messages:
        for name, rid in _named(msg):
            if rid not in records:
                raise UsageError(
                    f"{_who(msg)}: {name} {rid!r} is a file of the set, "
                    "but no record was indexed from it (empty, or not a note, rule or ADR?)"
                )


def check_set(folder: Path) -> Sources:
    """The folders of an eval set, as sources of one project; a bad set is a UsageError."""
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such eval set folder")
    parts = {p: (folder / p,) if (folder / p).is_dir() else () for p in PARTS}
    if not any(parts.values()):
        raise UsageError(f"{folder}: an eval set needs notes/, rules/, adrs/ or conversations/")
    if not (folder / MESSAGES).is_file():
        raise UsageError(f"{folder}: an eval set needs {MESSAGES}")
    return Sources(
        parts["notes"], parts["rules"], parts["adrs"], parts["conversations"], str(folder)
    )


def _index_set(
    settings: Settings, folder: Path, model: Embedder, progress: Progress | None
) -> Settings:
    """Index a set into its own store; returns the settings whose state holds it."""
    folder = folder.absolute()
    sources = check_set(folder)
    slug = re.sub(r"[^A-Za-z0-9]+", "-", settings.model).strip("-")
    tag = hashlib.sha256(str(folder).encode()).hexdigest()[:8]
    home = settings.home / "eval" / slug / f"{folder.name}-{tag}"
    set_settings = replace(settings, home=home, discover_claude=False)
    store = open_store(set_settings.index_dir, model)
    found = walk(configured_sources(set_settings, sources))
    # The whole set folder is a root: a part the set no longer has (say adrs/)
    # loses its rows too, so the store holds exactly what the set holds.
    found.own(folder)
    Indexer(set_settings, store, model).sync(found, progress)
    return set_settings


def _rank_set(set_settings: Settings, folder: Path, model: Embedder, run: EvalRun) -> None:
    """Rank every message of a set with :class:`Recall` over the set's store."""
    folder = folder.absolute()
    messages = load_messages(folder)
    recall = Recall(set_settings, model)
    try:
        ids = {m["path"]: str(Path(m["path"]).relative_to(folder)) for m in recall.snapshot.meta}
        _check_records(messages, set(ids.values()))
        one = SetRun(folder.name, project_root(folder), ids, recall.marks)
        run.sets.append(one)
        for msg in messages:
            hits, relevance = recall.assess(msg.text, folder)
            ranked_ids = [ids.get(h.record.path, h.record.path) for h in hits]
            # The file hook needs no thresholds: its answer is computed once.
            file_text = (
                recall.file_context(str(folder), str(folder / msg.file)).context
                if msg.file
                else None
            )
            run.ranked.append(Ranked(msg, hits, ranked_ids, one, relevance, file_text))
    finally:
        recall.close()


def prepare(
    settings: Settings,
    sets: Sequence[Path],
    progress: Progress | None = None,
    embedder: Embedder | None = None,
) -> EvalRun:
    """Index every set (incrementally, in its own store) and rank all its messages."""
    if not sets:
        raise UsageError("name at least one eval set folder (--set DIR)")
    for folder in sets:  # every set is checked before any model load or indexing
        check_set(folder)
        load_messages(folder)
    model = embedder or load_embedder(settings.model_spec())
    run = EvalRun(settings)
    for folder in sets:
        set_settings = _index_set(settings, folder, model, progress)
        _rank_set(set_settings, folder, model, run)
    return run


def _shown(text: str | None, ids: dict[str, str]) -> dict[str, str]:
    """Record id -> the injected line that shows it (every line ends in "(path)")."""
    if not text:
        return {}
    shown: dict[str, str] = {}
    for line in text.splitlines()[1:]:
        path = line.rsplit(" (", 1)[-1].removesuffix(")")
        shown[ids.get(path, path)] = line
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
        marks = r.set.marks
        successors = marks.successors_for if marks is not None else None
        selection = select(r.hits, thresholds, r.set.project, r.relevance, successors)
        text = (
            format_context(selection, marks.mark_for, marks.successors_for)
            if marks is not None
            else format_context(selection, lambda _r: "")
        )
        shown = _shown(text, r.set.ids)
        chats = any(e.startswith("conversations/") for e in m.expected)
        # Notes, rules and ADRs are ranked among themselves (conversations rank apart);
        # a message that expects a chat is ranked among everything.
        docs = [
            i
            for i, h in zip(r.ids, r.hits, strict=True)
            if chats or h.record.kind != "conversation"
        ]
        _tally(add, m, docs, shown, _shown(r.file_text, r.set.ids))
    return {k: {"ok": v[0], "n": v[1], "rate": round(v[0] / v[1], 3)} for k, v in tally.items()}


def _tally(
    add: Callable[[str, bool], None],
    m: Message,
    docs: list[str],
    shown: dict[str, str],
    on_file: dict[str, str] | None = None,
) -> None:
    """The figures one message counts towards (record ids ranked, lines shown by the prompt
    hook, and by the file hook on the message's file)."""
    top3 = any(e in docs[:3] for e in m.expected)
    if m.kind == "paraphrase":
        add(f"{m.group}: right note first", bool(docs) and docs[0] in m.expected)
        add(f"{m.group}: in top 3", top3)
        add(f"{m.group}: right note injected", any(e in shown for e in m.expected))
    elif m.kind == "situational":
        group = m.expected[0].split("/")[0]
        injected = top3 and any(e in shown for e in m.expected)
        add("situational: in top 3", top3)
        add("situational: injected", injected)
        add(f"situational {group}: injected", injected)
        if m.file:
            # Issue #27: the deciding record reaches the agent on the prompt, or on the
            # file hook when the agent reads the file the report names.
            given = {**(on_file or {}), **shown}
            reached = injected or any(e in (on_file or {}) for e in m.expected)
            add(f"situational {group}: reaches the agent (prompt or file hook)", reached)
        else:
            given = shown
            reached = injected
        if m.stale:
            # Issue #27: the amending chat shown, each stale one marked or absent.
            stale_ok = all(e not in given or AMENDED in given[e] for e in m.stale)
            add("amended: latest reaches the agent, stale marked or absent", reached and stale_ok)
            add("amended: stale never shown unmarked", stale_ok)
    elif m.kind == "superseded_trap":
        marked = m.trap in shown and bool(MARKED.search(shown[m.trap]))
        if m.trap in shown:
            add("trap: shown with its mark", marked)
        add("trap: not shown unmarked", m.trap not in shown or marked)
        if m.successor:
            add("trap: successor shown (bonus)", m.successor in shown)
        # Issue #9's goal: the old decision shown with a mark that names its
        # successor ("⚠️superseded → ADR-0057"), or the successor itself shown;
        # one with no live successor (a rejected ADR) can only be shown marked.
        handled = (
            (marked and "→" in shown[m.trap]) or m.successor in shown if m.successor else marked
        )
        add("trap: handled (marked with successor, or successor shown; marked if none)", handled)
    elif m.kind == "unrelated":
        add(f"unrelated ({m.group}{', padded' if m.padded else ''}): nothing injected", not shown)
        add("unrelated (all): nothing injected", not shown)


GRID = (
    tuple(x / 100 for x in range(20, 72, 2)),  # min_top
    tuple(x / 1000 for x in range(0, 101, 5)),  # min_gap
    tuple(x / 100 for x in range(4, 21, 2)),  # wide_gap
)


# With the learned relevance, its threshold is searched too, over a coarser grid
# of the others (the relevance does most of the deciding).
RELEVANCE_GRID = (
    tuple(x / 100 for x in range(20, 62, 5)),  # min_top
    (0.0, 0.025, 0.05, 0.075, 0.1),  # min_gap
    tuple(x / 100 for x in range(4, 21, 4)),  # wide_gap
    tuple(x / 100 for x in range(30, 82, 2)),  # min_relevance
)


# Where the learned relevance may speak (Thresholds.speak_relevance); None: never.
SPEAK_GRID = (None, *(x / 100 for x in range(36, 61)))

# Where a conversation speaks on its own: conversation_top with conversation_gap, and
# conversation_top with conversation_relevance (a model with a learned relevance);
# searched at the documents' best point, only when a set has conversations.
CONVERSATION_TOPS = (0.0, *(x / 100 for x in range(20, 62, 2)))
CONVERSATION_GAPS = tuple(x / 100 for x in range(0, 61, 2))
CONVERSATION_RELEVANCES = tuple(x / 100 for x in range(10, 61))


def _injected(scores: dict[str, Any]) -> float:
    """What a grid point is chosen for: the injected rate of every labelled group,
    summed (situational records, and each set's reworded questions)."""
    return float(
        sum(
            v["rate"]
            for k, v in scores.items()
            if k == "situational: injected" or k.endswith(": right note injected")
        )
    )


def tune(
    run: EvalRun,
    unrelated_bar: float = 0.85,
    grid: Sequence[Sequence[float]] | None = None,
) -> tuple[Thresholds, dict[str, Any]]:
    """The grid point that injects the most (:func:`_injected`) among those whose
    unrelated messages stay quiet at ``unrelated_bar`` in *every* group (all, each
    set's, padded; issue #9 asks it of each), or, if none reaches it, the quietest."""
    learned = grid is None and any(r.relevance is not None for r in run.ranked)
    if grid is not None:
        points: Iterable[tuple[float, ...]] = itertools.product(*grid)
    else:
        # The cosine rules alone, and (when the model has a learned relevance)
        # the relevance deciding too: either may be the better default.
        points = itertools.product(*GRID)
        if learned:
            points = itertools.chain(points, itertools.product(*RELEVANCE_GRID))
    candidates = (
        Thresholds(p[0], p[1], p[2], 0.05, p[3] if len(p) > 3 else None)
        for p in points
        if p[2] >= p[1]  # wide_gap below min_gap means nothing
    )
    best = _best(run, candidates, unrelated_bar)
    if learned:
        # Then where the learned relevance may speak, at that point (one more axis
        # on the whole grid would cost ten times the time).
        found = best[1]
        speaking = (replace(found, speak_relevance=x) for x in SPEAK_GRID)
        best = max(best, _best(run, speaking, unrelated_bar), key=lambda b: b[0])
    if grid is None and any(h.record.kind == "conversation" for r in run.ranked for h in r.hits):
        found = replace(
            best[1], conversation_top=None, conversation_gap=None, conversation_relevance=None
        )
        alone = itertools.chain(
            [found],
            (
                replace(found, conversation_top=t, conversation_gap=g)
                for t, g in itertools.product(CONVERSATION_TOPS, CONVERSATION_GAPS)
            ),
            (
                replace(found, conversation_top=t, conversation_relevance=r)
                for t, r in itertools.product(CONVERSATION_TOPS, CONVERSATION_RELEVANCES)
                if learned
            ),
        )
        best = max(best, _best(run, alone, unrelated_bar), key=lambda b: b[0])
    return best[1], best[2]


def _best(
    run: EvalRun, candidates: Iterable[Thresholds], unrelated_bar: float
) -> tuple[tuple[float, ...], Thresholds, dict[str, Any]]:
    """The best of ``candidates`` by :func:`tune`'s order, with its sort key and figures."""
    best: tuple[tuple[float, ...], Thresholds, dict[str, Any]] | None = None
    for th in candidates:
        s = score(run, th)
        # A set without unrelated messages has nothing to keep quiet.
        quiet = min((v["rate"] for k, v in s.items() if k.startswith("unrelated (")), default=1.0)
        key = (
            float(quiet >= unrelated_bar),
            _injected(s) if quiet >= unrelated_bar else quiet,
            quiet,
        )
        if best is None or key > best[0]:
            best = (key, th, s)
    assert best is not None
    return best


def report_lines(scores: dict[str, Any]) -> Iterable[str]:
    """The figures as aligned text lines."""
    for key, v in scores.items():
        yield f"  {key:<42} {v['ok']:>3}/{v['n']:<3} {v['rate'] * 100:5.1f}%"
