"""What the daemon injected lately, read back from its log (`precedents why`).

The log holds, per answer, the project root, the decision, the scores and the
paths shown — never the text of a message — so this is all `why` can show,
and all it needs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

LOG = "daemon.log"
_MARK = " answer {"


# Reasons for which something was chosen (recall/selection.py; "file": the file hook's).
CHOSEN = ("narrow", "wide", "changed", "relevant", "file")


def _decision(entry: dict[str, Any]) -> str:
    reason = str(entry.get("reason") or "")
    if reason in CHOSEN:
        return "injected" if entry.get("bytes") else "nothing-fit"
    return reason or "none"


def recent_answers(log_dir: Path, project: str | None, n: int = 5) -> list[dict[str, Any]]:
    """The last ``n`` answers to prompts and file tools (newest first), of ``project``
    when given; a record left out as given already in the session is ``withheld``."""
    found: list[dict[str, Any]] = []
    for name in (f"{LOG}.2", f"{LOG}.1", LOG):  # oldest first, as the handler rotates
        try:
            lines = (log_dir / name).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            at = line.find(_MARK)
            if at < 0:
                continue
            try:
                entry = json.loads(line[at + len(_MARK) - 1 :])
            except ValueError:
                continue
            if entry.get("op") not in ("context", "file"):
                continue
            if project and entry.get("project") != project:
                continue
            found.append(
                {
                    "time": line[:19],
                    "project": entry.get("project"),
                    "event": "file" if entry.get("op") == "file" else "prompt",
                    "decision": _decision(entry),
                    "withheld": entry.get("withheld") or [],
                    "reason": entry.get("reason"),
                    "top": entry.get("top"),
                    "gap": entry.get("gap"),
                    "relevance": entry.get("relevance"),
                    # Older log lines have no "shown": their ids were the records shown.
                    "shown": entry["shown"] if "shown" in entry else entry.get("ids") or [],
                    # Shown as their path only: their text reads as orders (docs/daemon.md).
                    "suspect": entry.get("suspect") or [],
                    "bytes": entry.get("bytes", 0),
                    "ms": (entry.get("ms") or {}).get("total"),
                }
            )
    return found[::-1][:n]
