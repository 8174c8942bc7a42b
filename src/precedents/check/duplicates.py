"""A staged team note that nearly repeats another team note of the repository.

Lexical, so that a pre-commit hook on a 2-core machine answers in milliseconds
without loading a model: each note (name, description and body; not its author
or date, which every note of one author shares) is cut into the index terms of
:func:`precedents.text.tokens` (lower case, stop words out, light stem),
and two notes score the mean of

* the cosine of their term counts (the same words, in any order: a reworded
  note), and
* the containment of their word pairs, ``|A ∩ B| / min(|A|, |B|)`` (the same
  phrases, one note possibly longer: a note copied and extended).

Measured (docs/check.md, "Near-duplicate team notes"): ten near-duplicates made
from a set of 24 team notes (reworded, extended, trimmed, edited, renamed,
reformatted as bullets) score 0.60-0.98, 8 of 10 at or above 0.70; the 24
notes against each other, same-topic notes that decide otherwise included,
score at most 0.20; the 9,929 pairs of ADRs within each project of
tests/fixtures/adr-wild reach 0.70 only for unfilled templates and decisions
recorded twice. Hence :data:`THRESHOLD` 0.70.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from precedents.check.model import DUPLICATE, WARNING, Finding
from precedents.check.tree import Tree
from precedents.secrets.names import shown_path
from precedents.text import normalize, split_front_matter, tokens

THRESHOLD: Final = 0.70
# Notes shorter than this many terms say too little to be compared reliably.
MIN_TERMS: Final = 8
INDEX_NAMES: Final = frozenset({"memory.md"})  # an index of notes, not a note


@dataclass(frozen=True)
class Terms:
    """One note as the similarity sees it."""

    counts: Counter[str]
    norm: float
    pairs: frozenset[tuple[str, str]]

    @classmethod
    def of(cls, text: str) -> Terms:
        read = split_front_matter(normalize(text), lenient=True)
        front = read.data or {}
        words = " ".join(str(front.get(k) or "") for k in ("name", "description"))
        terms = tokens(f"{words}\n{read.body}")
        counts = Counter(terms)
        norm = math.sqrt(sum(n * n for n in counts.values()))
        return cls(counts, norm, frozenset(itertools.pairwise(terms)))

    def __len__(self) -> int:
        return sum(self.counts.values())


def similarity(a: Terms, b: Terms) -> float:
    """Mean of the term cosine and the word-pair containment, in [0, 1]."""
    if not a.norm or not b.norm:
        return 0.0
    small, large = (a, b) if len(a.counts) <= len(b.counts) else (b, a)
    cosine = sum(n * large.counts[t] for t, n in small.counts.items()) / (a.norm * b.norm)
    shared = len(a.pairs & b.pairs)
    contained = shared / min(len(a.pairs), len(b.pairs)) if a.pairs and b.pairs else 0.0
    return (cosine + contained) / 2


def is_note(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.lower().endswith(".md") and name.lower() not in INDEX_NAMES


def duplicate_findings(tree: Tree, folder: str, staged: Sequence[str]) -> list[Finding]:
    """A warning for each note of ``staged`` (paths relative to the root, inside the team
    notes ``folder``) that nearly duplicates another team note, naming the closest."""
    notes = [p for p in tree.files_under(folder) if is_note(p)]
    wanted = [p for p in staged if is_note(p)]
    contents = tree.read(sorted({*notes, *wanted}))
    terms = {
        path: Terms.of(data.decode("utf-8", "replace"))
        for path, data in contents.items()
        if isinstance(data, bytes)
    }
    out: list[Finding] = []
    for path in wanted:
        mine = terms.get(path)
        if mine is None or len(mine) < MIN_TERMS:
            continue
        best, score = "", 0.0
        for other, theirs in terms.items():
            if other == path or len(theirs) < MIN_TERMS:
                continue
            value = similarity(mine, theirs)
            if value > score:
                best, score = other, value
        if score >= THRESHOLD:
            message = (
                f"near-duplicate of {shown_path(best)} (similarity {score:.2f}): "
                "merge them, or say how they differ"
            )
            out.append(Finding(path, 1, WARNING, DUPLICATE, message))
    return out
