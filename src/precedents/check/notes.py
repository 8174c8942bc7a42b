"""A team note's front matter that every channel would not show as written (issue #28).

Its author and date are part of the head of the note's line (docs/team.md): an
author that is no short name is shown as ``author withheld`` (it could carry a
second head, a mark, a sentence), and a date in the future as no date (it would
sort the note first for ever). Both are warnings: the note is still indexed and
shown, and the team should fix its front matter.
"""

from __future__ import annotations

import re

from precedents.check.model import NOTE, WARNING, Finding
from precedents.inert import AUTHOR_WITHHELD, DATE_CHARS, inert, is_future, shown_author
from precedents.ingest.chunking import parse_note
from precedents.ingest.team import team_fields


def note_findings(path: str, text: str) -> list[Finding]:
    """Warnings for the team note at ``path`` (its text ``text``)."""
    meta = parse_note(text, path.rsplit("/", 1)[-1])
    author, date = team_fields(meta.front, meta.date)
    out = []
    if author and shown_author(author) == AUTHOR_WITHHELD:
        out.append(
            Finding(
                path, _line(text, "author"), WARNING, NOTE,
                f"author {inert(author, 60)!r} is not a name (one to three words of letters, "
                f"at most 32 characters): every channel shows '{AUTHOR_WITHHELD}'",
            )
        )  # fmt: skip
    if is_future(date):
        out.append(
            Finding(
                path, _line(text, "created|date|updated"), WARNING, NOTE,
                f"date {inert(date, DATE_CHARS)} is in the future: shown and sorted as no date",
            )
        )  # fmt: skip
    return out


def _line(text: str, keys: str) -> int:
    """The 1-based line of the first front matter key of ``keys`` (1 when not found)."""
    found = re.search(rf"^\s*(?:{keys})\s*:", text, re.MULTILINE)
    return text.count("\n", 0, found.start()) + 1 if found else 1
