"""Which ranked records, if any, are worth injecting (SPEC §5): pure functions.

The rule, over notes, rules and ADRs only (conversations are long, score high
against almost anything, and would shrink the gap):

- ``top`` = best score; ``gap`` = top − mean of ranks 2..11.
- top < min_top → nothing ("below-top"); gap < min_gap → nothing ("small-gap").
- gap < wide_gap → the top 3, 1,024-byte cap ("narrow": nothing stands out
  much, so show a few, briefly).
- otherwise → up to 3 within ``near_top`` of the top, 2,048-byte cap ("wide":
  one or two records stand out clearly).

Decisions where the SPEC is silent, written down here and in docs/daemon.md:

- A conversation joins a set the documents earned when its score is within
  ``near_top`` of the best document's; at most one is shown, in its place in score
  order among the at most 3 chosen. A decision commit (docs/commits.md) joins the
  same way, at most one; it never speaks on its own (no labelled prompts to set
  such a rule by).
- A conversation also speaks on its own (issue #27: a project whose memory is its
  chats), when it settled something: among the conversations with a decision
  passage (ingest/decisions.py), when the best-ranked one's cosine reaches
  ``conversation_top`` and its ranking key (cosine, words, date words:
  recall/vectors.py) stands ``conversation_gap`` above the mean of the next ten
  such conversations' keys ("conversation"; one conversation, wide cap, so its
  decision passage and the chat that amended it both fit). With documents
  chosen too, it takes the last place when the set is full. Its own rule, not the
  documents': conversations are long and score high against almost anything, so
  only standing out among the project's own conversations says one applies.
- With fewer than two documents, the missing ranks of the mean count as 0, so
  a single document above ``min_top`` stands out (gap = top).
- A changed decision speaks up a little earlier: when nothing clears the
  thresholds but a replaced ADR *and* the live ADR that replaced it both rank
  in the top 3, with the top within ``CHANGED_MARGIN`` below ``min_top``, the
  two are shown ("changed"). Both decisions of one topic ranking together is
  evidence the message is about that decision, and silence there lets the
  agent follow the replaced one — the mistake ADR marks exist to prevent.
- The learned relevance speaks where the cosine rules stay silent: when they
  show nothing, but the relevance of the top records
  (:mod:`precedents.recall.relevance`) reaches ``speak_relevance`` and the top
  cosine is at most ``RELEVANCE_MARGIN`` below ``min_top``, the records within
  ``near_top`` of the top are shown ("relevant", narrow cap). The adapter was
  trained for exactly this decision; cross-validated on records it never saw,
  the route injects more at the same quiet (docs/eval.md).
- "A current-project note close to the top goes before a shared rule": a note
  of the current project whose score is within ``near_top`` of the top moves
  ahead of every shared rule (project ``*``) ranked above it; nothing else is
  reordered. Only the display order changes, which matters because lines at
  the end are the first to go when the byte cap bites.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from precedents.config import Thresholds
from precedents.kinds import DOCUMENT_KINDS, SHARED_PROJECT
from precedents.store.rows import DocumentHit, DocumentRecord

MAX_SHOWN = 3
MAX_CONVERSATIONS = 1
NARROW_CAP_BYTES = 1024
WIDE_CAP_BYTES = 2048
GAP_RANKS = 10  # ranks 2..11
CHANGED_MARGIN = 0.10  # how far below min_top a changed decision may still be shown
# How far below min_top the learned relevance may still speak (0.30 for MiniLM);
# a fixed floor, not tuned: dev figures were the same from 0.30 to 0.40.
RELEVANCE_MARGIN = 0.18

# The live ADR(s) that replaced a record (recall.marks.AdrMarks.successors_for).
Successors = Callable[[DocumentRecord], Sequence[DocumentRecord]]


@dataclass(frozen=True)
class Selection:
    """The outcome of :func:`select`: what to show, within which byte cap, and why."""

    chosen: tuple[DocumentHit, ...]  # in display order
    byte_cap: int  # 0 when nothing is chosen
    top: float  # best score among notes/rules/ADRs (0.0 if none)
    gap: float  # top - mean(ranks 2..11) over notes/rules/ADRs only
    # "irrelevant" | "below-top" | "small-gap" | "changed" | "relevant" | "narrow" | "wide"
    # | "conversation" | "chat-below" | "empty"
    reason: str
    relevance: float | None = None  # the learned score the decision used, if any

    @property
    def injected(self) -> bool:
        """Whether anything is chosen."""
        return bool(self.chosen)


def gap_of(scores: Sequence[float]) -> float:
    """``scores[0]`` minus the mean of ``scores[1:11]`` (missing ranks count as 0)."""
    if not scores:
        return 0.0
    rest = list(scores[1 : 1 + GAP_RANKS])
    mean = sum(rest) / len(rest) if rest else 0.0
    return scores[0] - mean


def select(
    hits: Sequence[DocumentHit],
    thresholds: Thresholds,
    current_project: str,
    relevance: float | None = None,
    successors: Successors | None = None,
) -> Selection:
    """Apply the SPEC §5 selection rule to ``hits`` (all kinds, any order).

    ``relevance`` is the learned score of the top-ranked records
    (:mod:`precedents.recall.relevance`); below ``thresholds.min_relevance``
    nothing is injected ("irrelevant"), whatever the cosines say.

    ``current_project`` is the project root the query was made for; a note of
    that project (or of an unresolved Claude Code key of it) counts as the
    current project's for ordering ahead of shared rules.

    ``successors`` (the ADR graph's) lets a changed decision be shown below the
    thresholds (see the module docstring); without it the rule is off.
    """
    documents = _select_documents(hits, thresholds, current_project, relevance, successors)
    spoken = conversation_alone(hits, thresholds)
    if spoken is None and documents.reason == "empty":
        # Only chats to go by (a project whose memory is its conversations): `why`
        # shows the best deciding chat's cosine and learned relevance.
        return _quiet_chats(hits, relevance) or documents
    if spoken is None or any(h.record.kind == "conversation" for h in documents.chosen):
        return documents
    if not documents.chosen:
        return Selection(
            (spoken,), WIDE_CAP_BYTES, documents.top, documents.gap, "conversation", relevance
        )
    chosen = (*documents.chosen[: MAX_SHOWN - 1], spoken)
    return replace(documents, chosen=chosen, byte_cap=WIDE_CAP_BYTES)


def _quiet_chats(hits: Sequence[DocumentHit], relevance: float | None) -> Selection | None:
    """Nothing chosen in a project of chats only: "chat-below", with the best deciding
    chat's cosine as ``top`` and its learned relevance (else ``relevance``)."""
    decided = [h for h in hits if h.record.kind == "conversation" and h.record.decided]
    if not decided:
        return None
    best = max(decided, key=lambda h: h.score)
    scored = [h.relevance for h in decided if h.relevance is not None]
    learned = max(scored) if scored else relevance
    return Selection((), 0, best.score, 0.0, "chat-below", learned)


def conversation_gap(hits: Sequence[DocumentHit]) -> tuple[DocumentHit | None, float]:
    """The best-ranked conversation of ``hits`` that settled something (it has a decision
    passage) and how far its ranking key stands above the mean of the next ten such
    conversations' (missing ranks count as 0)."""
    convs = sorted(
        (h for h in hits if h.record.kind == "conversation" and h.record.decided),
        key=lambda h: -h.rank_key,
    )
    if not convs:
        return None, 0.0
    return convs[0], gap_of([h.rank_key for h in convs])


def conversation_alone(hits: Sequence[DocumentHit], thresholds: Thresholds) -> DocumentHit | None:
    """The conversation that speaks on its own for ``hits`` (module docstring), or None."""
    floor = thresholds.conversation_top
    if floor is None:
        return None
    if thresholds.conversation_relevance is not None:
        scored = [h for h in hits if h.record.kind == "conversation" and h.relevance is not None]
        if scored:
            best = max(scored, key=lambda h: h.relevance or 0.0)
            relevance = best.relevance or 0.0
            if relevance >= thresholds.conversation_relevance and best.score >= floor:
                return best
    if thresholds.conversation_gap is None:
        return None
    top, gap = conversation_gap(hits)
    if top is None or top.score < floor:
        return None
    return top if gap >= thresholds.conversation_gap else None


def _select_documents(
    hits: Sequence[DocumentHit],
    thresholds: Thresholds,
    current_project: str,
    relevance: float | None,
    successors: Successors | None,
) -> Selection:
    """The documents' rule (the module docstring), conversations joining what it earned."""
    ranked = sorted(hits, key=lambda h: -h.score)
    docs = [h for h in ranked if h.record.kind in DOCUMENT_KINDS]
    if not docs:
        return Selection((), 0, 0.0, 0.0, "empty")
    top = docs[0].score
    gap = gap_of([h.score for h in docs])
    if (
        relevance is not None
        and thresholds.min_relevance is not None
        and relevance < thresholds.min_relevance
    ):
        return Selection((), 0, top, gap, "irrelevant", relevance)
    if top < thresholds.min_top or gap < thresholds.min_gap:
        changed = _changed_decision(docs, thresholds, successors)
        if changed:
            return Selection(changed, NARROW_CAP_BYTES, top, gap, "changed", relevance)
        if (
            relevance is not None
            and thresholds.speak_relevance is not None
            and relevance >= thresholds.speak_relevance
            and top >= thresholds.min_top - RELEVANCE_MARGIN
        ):
            near = tuple(h for h in docs[:MAX_SHOWN] if h.score >= top - thresholds.near_top)
            return Selection(near, NARROW_CAP_BYTES, top, gap, "relevant", relevance)
        reason = "below-top" if top < thresholds.min_top else "small-gap"
        return Selection((), 0, top, gap, reason, relevance)

    floor = top - thresholds.near_top
    wide = gap >= thresholds.wide_gap
    chosen: list[DocumentHit] = []
    joined = {"conversation": 0, "commit": 0}
    for hit in ranked:
        if len(chosen) >= MAX_SHOWN:
            break
        if hit.record.kind in joined:
            # Conversations and decision commits join what the documents earned; at
            # most one of each (no labelled prompts to calibrate more: docs/commits.md).
            if joined[hit.record.kind] >= MAX_CONVERSATIONS or hit.score < floor:
                continue
            joined[hit.record.kind] += 1
        elif hit.record.kind not in DOCUMENT_KINDS:
            continue
        elif wide and hit.score < floor:
            # Ranked order: every later document is below the floor too, but a
            # conversation cannot be either, so the loop may stop here.
            break
        chosen.append(hit)
    ordered = _notes_before_rules(chosen, floor, current_project)
    return Selection(
        tuple(ordered),
        WIDE_CAP_BYTES if wide else NARROW_CAP_BYTES,
        top,
        gap,
        "wide" if wide else "narrow",
        relevance,
    )


def _changed_decision(
    docs: list[DocumentHit], thresholds: Thresholds, successors: Successors | None
) -> tuple[DocumentHit, ...]:
    """A replaced ADR and its live successor, both in the top 3 (score order), or ()."""
    if successors is None or docs[0].score < thresholds.min_top - CHANGED_MARGIN:
        return ()
    head = docs[:MAX_SHOWN]
    by_path = {h.record.path: h for h in head}
    for hit in head:
        if hit.record.kind != "adr":
            continue
        for live in successors(hit.record):
            other = by_path.get(live.path)
            if other is not None and other is not hit:
                return tuple(sorted((hit, other), key=lambda h: -h.score))
    return ()


def _is_current_note(hit: DocumentHit, current_project: str) -> bool:
    project = hit.record.project
    if hit.record.kind != "note" or project == SHARED_PROJECT:
        return False
    # Searches are scoped to the current project's keys and shared rules, so a
    # non-shared key is the current project's (an unresolved `claude:` key too).
    return not current_project or project == current_project or project.startswith("claude:")


def _notes_before_rules(
    chosen: list[DocumentHit], floor: float, current_project: str
) -> list[DocumentHit]:
    out = list(chosen)
    for note in [h for h in chosen if h.score >= floor and _is_current_note(h, current_project)]:
        idx = out.index(note)
        first_rule = next(
            (
                i
                for i, h in enumerate(out[:idx])
                if h.record.kind == "rule" and h.record.project == SHARED_PROJECT
            ),
            None,
        )
        if first_rule is not None:
            out.pop(idx)
            out.insert(first_rule, note)
    return out
