"""A conversation's decision passage: the exchange that settled something (issue #27).

Pure logic, standard library only, no model: chosen at index time and stored as the
conversation's description, so the hook's line carries the decision, not the first
prompt (which names the symptom or the task, not what was settled).

Every sentence of every exchange (prompt and answer, already masked) is scored:

* **decision words**: "settled", "decided", "agreed", "we'll go with", "the rule is",
  "from now on", "going forward", "let's keep"… (the strongest sign);
* **rule shape**: "always", "never", "must", "only", "do not"…, and what makes a rule
  precise — a number, a set ("one of", "a, b and c"), an order ("before", "first…
  then"), a condition ("if", "unless", "only when");
* **agreement**: the user's next prompt opens by agreeing ("yes", "agreed", "go with
  that", "sounds good"…) — the sentence before it is what they agreed to; or the
  assistant's answer opens by agreeing with a rule the user stated;
* **amendment words** ("amend", "instead of", "changing … to", "scratch the earlier",
  "no longer"…) count as decision words: a chat that revises a rule has its revision
  as its passage, which is what :mod:`precedents.recall.amendments` compares.

Questions, code lines, lists of paths and pleasantries score nothing. The best
sentence (the next one joins it when it gives the reason: "because…", "so that…")
is the passage, cut to :data:`PASSAGE_CHARS`; a conversation where nothing scores
:data:`MIN_SCORE` has none, and its line shows its title as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "MIN_SCORE",
    "PASSAGE_CHARS",
    "Passage",
    "amends",
    "decision_passage",
    "sentences",
]

PASSAGE_CHARS = 240
MIN_SCORE = 3.0
# Sentences longer than this are walls of prose or pasted output, not a rule.
_MAX_SENTENCE = 420
_MIN_SENTENCE = 12

_DECISION = re.compile(
    r"\b(settled|decided|decision|agreed|we(?:'ll| will) (?:go with|use|keep|stick)|"
    r"let'?s (?:go with|keep|use|stick|make it|do)|go(?:ing)? with|the rule(?: is|:)|"
    r"rule of thumb|from now on|going forward|policy(?: is|:)|convention(?: is|:)|"
    r"we keep|keep (?:it|them|this) (?:at|to|as)|stick (?:with|to)|final answer|"
    r"the plan is|standard(?:ise|ize)? on|we'?ll standardi[sz]e|"
    r"(?:my|our|the|new|same) (?:rule|convention|policy)(?: would be| is|:)|"
    r"(?:rule|convention|policy) for (?:this|the) (?:codebase|project|repo))\b",
    re.IGNORECASE,
)
_AMEND = re.compile(
    r"\b(amend(?:ed|ing|ment)?|revis(?:e|ed|ing|ion)|instead of|no longer|"
    r"chang(?:e|es|ed|ing) (?:the|our|that|this|it)\b|"
    r"replac(?:e|es|ed|ing) (?:the|our|that|this) (?:earlier|old|previous|last)|"
    r"scratch (?:the|that|our)|supersed(?:e|es|ed|ing)|revers(?:e|ed|ing)|revert(?:ed|ing)?|"
    r"roll(?:ing|ed)? back|undo|bring (?:it|them|that) back|reconsider(?:ed|ing)?|"
    r"(?:earlier|previous|old|last (?:month|week)'?s?|january'?s?|february'?s?|march'?s?|"
    r"april'?s?|may'?s?|june'?s?|july'?s?|august'?s?|september'?s?|october'?s?|"
    r"november'?s?|december'?s?) (?:rule|decision|approach|policy|call|convention|list)|"
    r"update (?:to|of) the (?:rule|decision)|overrid(?:e|es|ing)|soften)\b",
    re.IGNORECASE,
)
_RULE = re.compile(
    r"\b(always|never|must(?:n't| not)?|only|do not|don't|should(?:n't| not)?|"
    r"required?|at most|at least|no more than|cap(?:ped)?|limit(?:ed)?|maximum|minimum|"
    r"wins?|takes? precedence|prefer|default(?:s)? to|reject|forbid(?:den)?|allowed|"
    r"we (?:don't|do not|never|always|keep|drop|use))\b",
    re.IGNORECASE,
)
_PRECISE = (
    re.compile(r"\d"),  # a number
    re.compile(r"\b(one of|either|both|any of|all of)\b|\w+, \w+,? (?:and|or) \w+", re.I),  # a set
    re.compile(r"\b(before|after|first\b.*\bthen|followed by|in order|newest|oldest)\b", re.I),
    re.compile(r"\b(if|unless|when|only when|except|otherwise|as long as)\b", re.I),  # condition
)
_AGREE = re.compile(
    r"^\W*(yes|yep|yeah|ok(?:ay)?|agreed|agree|sounds (?:good|right)|go|good|"
    r"do (?:it|that)|perfect|great|lgtm|makes sense|correct|exactly|right|sure|fine|"
    r"let'?s do (?:it|that)|approved|ship it|works for me|that'?s a good (?:rule|call|idea))\b|"
    r"^\s*(?:👍|✅|\+1)",
    re.IGNORECASE,
)
_REASON = re.compile(r"^\W*(because|so that|so we|since|otherwise|that way|this keeps)\b", re.I)
_CODEISH = re.compile(r"^\s*(?:[$>#]|```|\w+\(.*\)\s*$|[\w./-]+\.\w{1,4}\s*$)")
_SPLIT = re.compile(r"(?<=[.!?;])\s+(?=[A-Z\"'(`*])|\n+")


@dataclass(frozen=True)
class Passage:
    """The sentence(s) that settled something, and where they were said."""

    text: str  # one line, at most PASSAGE_CHARS
    exchange: int  # 1-based number of the exchange among the conversation's
    date: str  # YYYY-MM-DD of that exchange ("" when its prompt has no timestamp)
    score: float
    amends: bool  # its exchange revises an earlier rule (amendment words)

    def stamp(self) -> str:
        """The stored form of where it was said, ``YYYY-MM-DD#N``, with ``#amends`` when
        it revises an earlier rule (DocumentRecord.decided)."""
        return f"{self.date}#{self.exchange}" + ("#amends" if self.amends else "")


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences and lines, Markdown bullets and emphasis stripped."""
    out = []
    for raw in _SPLIT.split(text):
        s = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", raw)
        s = re.sub(r"[*_`]{1,3}", "", s).strip()
        if s:
            out.append(s)
    return out


def amends(text: str) -> bool:
    """Whether ``text`` reads as revising an earlier rule (amendment words)."""
    return bool(_AMEND.search(text))


def _score(sentence: str) -> float:
    if not _plain(sentence):
        return 0.0
    score = 0.0
    if _DECISION.search(sentence):
        score += 3.0
    if _AMEND.search(sentence):
        score += 2.5
    if _RULE.search(sentence):
        score += 1.5
        score += sum(0.75 for p in _PRECISE if p.search(sentence))
    return score


def _plain(sentence: str) -> bool:
    """A sentence that could state a decision: prose of a readable length, no question."""
    return (
        _MIN_SENTENCE <= len(sentence) <= _MAX_SENTENCE
        and not _CODEISH.match(sentence)
        and not sentence.rstrip().endswith("?")
    )


def _candidates(
    prompt: str, answer: str, next_prompt: str
) -> list[tuple[float, str, list[str], int]]:
    """(score, who, that text's sentences, index) of each scored sentence of one exchange."""
    out: list[tuple[float, str, list[str], int]] = []
    agreed_next = bool(_AGREE.match(next_prompt))
    answer_sentences = sentences(answer)
    answer_agrees = bool(answer_sentences) and bool(_AGREE.match(answer_sentences[0]))
    for who, parts in (("user", sentences(prompt)), ("assistant", answer_sentences)):
        for i, s in enumerate(parts):
            score = _score(s)
            bonus = 0.0
            # What the person agreed to: the answer's last sentences before their
            # "yes", or the rule they stated that the answer accepted; an answer that
            # opens by agreeing restates the decision in its next sentences.
            if who == "assistant" and agreed_next and i >= len(parts) - 4:
                bonus += 2.0
            if who == "assistant" and answer_agrees and 1 <= i <= 3:
                bonus += 1.0
            if who == "user" and answer_agrees:
                bonus += 2.0
            if not score and bonus >= 3.0 and _plain(s):
                score = 0.5  # agreed on both sides: a decision even without rule words
            if score:
                out.append((score + bonus, who, parts, i))
    return out


def decision_passage(
    exchanges: Sequence[tuple[str, str, str]], chars: int = PASSAGE_CHARS
) -> Passage | None:
    """The passage of a conversation given as (prompt, answer, timestamp) exchanges,
    in order; None when no sentence scores :data:`MIN_SCORE`.

    Ties go to the later exchange: a conversation that settles a rule and then
    refines it has the refinement as its passage.
    """
    best: tuple[float, int, str, int] | None = None  # score, exchange index, text, order
    for n, (prompt, answer, _stamp) in enumerate(exchanges):
        next_prompt = exchanges[n + 1][0] if n + 1 < len(exchanges) else ""
        for score, _who, parts, i in _candidates(prompt, answer, next_prompt):
            text = parts[i]
            if i + 1 < len(parts) and _REASON.match(parts[i + 1]):
                text = f"{text} {parts[i + 1]}"
            if best is None or score >= best[0]:
                best = (score, n, text, i)
    if best is None or best[0] < MIN_SCORE:
        return None
    score, n, text, _ = best
    prompt, answer, stamp = exchanges[n]
    # A revision often says so in the request ("scratch the removal", "amendment to
    # the redirect rule") and settles it in the answer: the exchange decides.
    revises = amends(text) or amends(prompt) or amends(answer)
    line = " ".join(text.split())
    if len(line) > chars:
        line = line[: chars - 1].rstrip() + "…"
    date = stamp[:10] if re.match(r"\d{4}-\d{2}-\d{2}", stamp) else ""
    return Passage(line, n + 1, date, score, revises)
