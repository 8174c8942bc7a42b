"""What one hook question produced, and what the daemon's log may say about it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from precedents.recall.selection import Selection

# The reasons of the file hook's answers (recall/hooks.py): scope matches, no scores.
FILE_REASONS = ("file", "no-scope")

# A record the mute list kept out, with the route it would have come by (recall/mute.py).
Withheld = tuple[str, str]


@dataclass
class Answer:
    """What one question produced, with the facts the log records (never the text)."""

    context: str | None
    selection: Selection | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    skipped: str = ""  # why nothing was searched ("short", "no-index", "outside")
    project: str = ""  # the project root the question was asked in (a path, never text)
    # Chosen records left out because this session was given them already (unchanged).
    withheld: tuple[str, ...] = ()
    # The records whose lines are in ``context`` (replaced ADRs' successors included).
    shown: tuple[str, ...] = ()
    # Those of ``shown`` whose text reads as orders: shown as their path only (`why` says so).
    suspect: tuple[str, ...] = ()
    # Records the mute list kept out that would have been given, each with its route
    # (recall/mute.py ROUTES): `why` lists them as "muted".
    muted: tuple[Withheld, ...] = ()
    # The team notes of ``shown``, path -> mark as shown ("(team, author, date)"; `why`).
    team: dict[str, str] = field(default_factory=dict)
    # The conversations of ``shown`` with their decision passage, path -> where it was
    # said ("YYYY-MM-DD#N": day and exchange; `why` says which exchange was picked).
    decided: dict[str, str] = field(default_factory=dict)

    def log_fields(self) -> dict[str, Any]:
        """Ids, bytes, scores and timings: what the log may hold about an answer."""
        sel = self.selection
        reason = self.skipped or (sel.reason if sel else "")
        # The file hook matches scopes: it has no scores to log.
        scored = sel if sel is not None and sel.reason not in FILE_REASONS else None
        if sel and sel.injected and not self.context and self.withheld:
            reason = "already-given"
        return {
            "ids": [h.record.adr_id or h.record.path for h in sel.chosen] if sel else [],
            "shown": self._shown(),
            "suspect": list(self.suspect),
            "withheld": list(self.withheld),
            "muted": [{"path": path, "route": route} for path, route in self.muted],
            "team": dict(self.team),
            "decided": dict(self.decided),
            "project": self.project,
            "bytes": len(self.context.encode("utf-8")) if self.context else 0,
            "reason": reason,
            "top": round(scored.top, 4) if scored else None,
            "gap": round(scored.gap, 4) if scored else None,
            "relevance": (
                round(scored.relevance, 4) if scored and scored.relevance is not None else None
            ),
            "ms": {k: round(v, 1) for k, v in self.timings_ms.items()},
        }

    def _shown(self) -> list[str]:
        if self.shown:
            return list(self.shown)
        sel = self.selection
        chosen = [h.record.path for h in sel.chosen] if sel else []
        return [p for p in chosen if p not in self.withheld]
