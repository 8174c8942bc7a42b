"""The files withheld for a secret in their path, recorded for ``status`` (issue #20).

:mod:`precedents.secrets.names` decides (pure, so the ADR graph may call it);
this module keeps the record in ``<state>/cache/withheld.json``, masked.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from precedents.runlock import write_private
from precedents.secrets.names import shown_path

WITHHELD_FILE: Final = "withheld.json"


def read_withheld(cache_dir: Path) -> list[dict[str, str]]:
    """The files last found with a secret in their path: ``{"path", "reason"}``, masked."""
    try:
        data = json.loads((cache_dir / WITHHELD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    items = data.get("files") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return []
    return [
        {"path": str(i["path"]), "reason": str(i["reason"])}
        for i in items
        if isinstance(i, dict) and "path" in i and "reason" in i
    ]


def record_withheld(
    cache_dir: Path, found: Iterable[tuple[str, str]], roots: Iterable[str] = ()
) -> None:
    """Record files withheld (``(masked path, reason)``) for ``status``.

    Entries under ``roots`` (a pass that walked them) are replaced by
    ``found``; others are kept, so a pass over one folder does not forget
    another's. A file that could not be recorded is logged by nobody: the
    record is a courtesy for ``status``, never a reason to stop indexing.
    """
    prefixes = tuple(shown_path(r).rstrip(os.sep) + os.sep for r in roots)
    kept = [i for i in read_withheld(cache_dir) if not i["path"].startswith(prefixes or ("\0",))]
    seen = {i["path"] for i in kept}
    for path, reason in found:
        if path not in seen:
            seen.add(path)
            kept.append({"path": path, "reason": reason})
    if not kept and not (cache_dir / WITHHELD_FILE).exists():
        return
    try:
        cache_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_private(cache_dir / WITHHELD_FILE, json.dumps({"files": kept}, indent=1))
    except OSError:
        pass
