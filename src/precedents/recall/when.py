"""Date words in a question, as a window of days: "yesterday", "on Tuesday", "last week".

"What did we decide about the Stripe webhook on Tuesday?" names a day the
conversation logs carry (each log's date, SPEC §2). :func:`window` turns the
question's date words into an inclusive range of calendar days relative to
``today``; the ranking lifts the conversations dated inside it
(:meth:`VectorSnapshot.rank_many`, ``Thresholds.conversation_dates``). English
only, like the rest of the word matching (:mod:`precedents.store.lexical`).

Understood (case-insensitive), the first match in the text wins:

- ``today``, ``this morning|afternoon|evening``, ``tonight``; ``yesterday``;
- ``N days ago`` (digits or one..ten, ``a``), ``N weeks ago``;
- ``on|last|this past <weekday>`` and ``<weekday> morning|afternoon|evening|night``:
  the latest such day before today (``on Tuesday`` said on a Tuesday is today);
- ``this|last week`` (calendar weeks from Monday), ``this|last month``;
- ``2026-11-28``; ``Nov 28``, ``November 28th``, ``28 November`` (with or
  without a year: without, the latest such day not after today);
  ``in November``, ``in May 2023`` (the month).

A bare weekday or month name is not a date ("the May release", "Friday deploy
freeze"): it needs one of the words above next to it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}


@dataclass(frozen=True)
class Window:
    """An inclusive range of days."""

    start: date
    end: date

    def holds(self, day: date) -> bool:
        """Whether ``day`` is inside."""
        return self.start <= day <= self.end


def _day(d: date) -> Window:
    return Window(d, d)


_WD = "|".join(WEEKDAYS)
_MON = "|".join(m for m in MONTHS) + "|" + "|".join(m[:3] for m in MONTHS) + "|sept"
_NUM = r"\d{1,2}|" + "|".join(_NUMBERS)
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        ("iso", r"\b(\d{4})-(\d{2})-(\d{2})\b"),
        ("month_day", rf"\b({_MON})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}})\b)?"),
        (
            "day_month",
            rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MON})\b\.?(?:,?\s+(\d{{4}})\b)?",
        ),
        ("in_month", rf"\b(?:in|during|early|late|mid)\s+({_MON})\b\.?(?:\s+(\d{{4}})\b)?"),
        ("ago", rf"\b({_NUM})\s+(day|week)s?\s+ago\b"),
        ("today", r"\b(today|tonight|this\s+(?:morning|afternoon|evening))\b"),
        ("yesterday", r"\byesterday\b"),
        ("weekday", rf"\b(?:on|last|this\s+past)\s+({_WD})\b"),
        ("weekday_part", rf"\b({_WD})\s+(?:morning|afternoon|evening|night)\b"),
        ("week", r"\b(this|last|past)\s+week\b"),
        ("month", r"\b(this|last|past)\s+month\b"),
    )
)


def _month(name: str) -> int:
    return MONTHS.index(next(m for m in MONTHS if m.startswith(name.lower()[:3]))) + 1


def _latest(month: int, day: int, year: str | None, today: date) -> date | None:
    try:
        if year:
            return date(int(year), month, day)
        found = date(today.year, month, day)
        return found if found <= today else date(today.year - 1, month, day)
    except ValueError:  # 31 February: not a date, so no window
        return None


def _month_window(month: int, year: str | None, today: date) -> Window:
    y = int(year) if year else (today.year if month <= today.month else today.year - 1)
    start = date(y, month, 1)
    end = date(y + 1, 1, 1) if month == 12 else date(y, month + 1, 1)
    return Window(start, end - timedelta(days=1))


def _weekday(name: str, today: date) -> Window:
    back = (today.weekday() - WEEKDAYS.index(name.lower())) % 7
    return _day(today - timedelta(days=back))


def _relative(name: str, m: re.Match[str], today: date) -> Window | None:
    monday = today - timedelta(days=today.weekday())
    if name == "today":
        return _day(today)
    if name == "yesterday":
        return _day(today - timedelta(days=1))
    if name == "ago":
        raw = m.group(1).lower()
        n = int(raw) if raw.isdigit() else _NUMBERS[raw]
        if m.group(2).lower() == "day":
            # "two days ago" is loose speech: a day either side.
            mid = today - timedelta(days=n)
            return Window(mid - timedelta(days=1), min(mid + timedelta(days=1), today))
        mid = today - timedelta(days=7 * n)
        return Window(mid - timedelta(days=3), min(mid + timedelta(days=3), today))
    if name in ("weekday", "weekday_part"):
        return _weekday(m.group(1), today)
    if name == "week":
        if m.group(1).lower() == "this":
            return Window(monday, today)
        return Window(monday - timedelta(days=7), monday - timedelta(days=1))
    if m.group(1).lower() == "this":  # month
        return Window(today.replace(day=1), today)
    last = today.replace(day=1) - timedelta(days=1)
    return Window(last.replace(day=1), last)


def _absolute(name: str, m: re.Match[str], today: date) -> Window | None:
    if name == "iso":
        try:
            return _day(date(int(m.group(1)), int(m.group(2)), int(m.group(3))))
        except ValueError:
            return None
    if name == "in_month":
        return _month_window(_month(m.group(1)), m.group(2), today)
    if name == "month_day":
        month, day, year = _month(m.group(1)), int(m.group(2)), m.group(3)
    else:
        month, day, year = _month(m.group(2)), int(m.group(1)), m.group(3)
    found = _latest(month, day, year, today)
    return None if found is None else _day(found)


def window(text: str, today: date) -> Window | None:
    """The days ``text``'s date words point at, relative to ``today``; None if none."""
    best: tuple[int, Window] | None = None
    for name, pattern in _PATTERNS:
        m = pattern.search(text)
        if m is None:
            continue
        if name in ("iso", "month_day", "day_month", "in_month"):
            found = _absolute(name, m, today)
        else:
            found = _relative(name, m, today)
        if found is not None and (best is None or m.start() < best[0]):
            best = (m.start(), found)
    return None if best is None else best[1]


def day_of(value: str) -> date | None:
    """A stored ``YYYY-MM-DD`` date, or None when absent or malformed."""
    try:
        return date.fromisoformat(value[:10]) if value else None
    except ValueError:
        return None
