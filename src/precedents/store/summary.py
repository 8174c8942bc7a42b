"""What a store holds, by kind and project: the body of `precedents status`.

One function so the daemon (which holds the store open, and answers `status`
without the CLI importing LanceDB) and the in-process fallback say the same.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from precedents.inert import suspect_summary
from precedents.rules.scope import REQUESTED, Scope

# The rows and columns `status` reads to find suspect records (precedents.inert): one row
# per document, its fields as the hook shows them.
DOCUMENT_ROWS = "chunk_index = 0"
DOCUMENT_COLUMNS = ["kind", "path", "name", "description", "adr_id", "author"]


class Countable(Protocol):
    """What a summary reads: the :class:`~precedents.store.Store`, or the export child's
    read-only view of the same tables (:mod:`precedents.store.export`)."""

    def counts(self) -> dict[tuple[str, str], dict[str, int]]: ...
    def size_bytes(self) -> int: ...
    def meta(self) -> dict[str, str]: ...
    def rule_scopes(self) -> list[tuple[str, str, str]]: ...
    def document_fields(self) -> list[dict[str, Any]]: ...


def summarize(store: Countable) -> dict[str, Any]:
    """Documents and chunks by kind and by project, the store's size and its stamps."""
    info: dict[str, Any] = {"kinds": {}, "projects": {}, "documents": 0, "chunks": 0}
    newest = 0.0  # the newest write of any file (a `remember`, the watcher's)
    for (kind, proj), c in sorted(store.counts().items()):
        newest = max(newest, float(c.get("indexed_at", 0)))
        for key, bucket in (("kinds", kind), ("projects", proj)):
            entry = info[key].setdefault(bucket, {"documents": 0, "chunks": 0})
            entry["documents"] += c["documents"]
            entry["chunks"] += c["chunks"]
        info["documents"] += c["documents"]
        info["chunks"] += c["chunks"]
    info["rules"] = rules_by_format(store.rule_scopes())
    # Records whose text reads as orders to the agent: shown by path only (docs/daemon.md).
    info["suspect"] = suspect_summary(store.document_fields())
    info["store_bytes"] = store.size_bytes()
    meta = store.meta()
    info["indexed_model"] = meta.get("model")
    info["dimension"] = int(meta["dimension"]) if meta.get("dimension") else None
    if "device" in meta:
        info["device"] = meta["device"]
    info["model_load_seconds"] = (
        float(meta["model_load_seconds"]) if "model_load_seconds" in meta else None
    )
    # A full pass stamps its end; a single note indexed since (`remember`, the watcher,
    # the daemon) only its file's row: the later of the two is the last write.
    last = max(float(meta.get("last_indexed") or 0), newest)
    info["last_indexed"] = (
        time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(last)) if last else None
    )
    return info


def rules_by_format(rows: list[tuple[str, str, str]]) -> dict[str, Any]:
    """Rule files by format and by mode (docs/rules.md), from (path, project, scope JSON)
    rows: ``{"formats": {format: {"files": n, "modes": {mode: n}}}, "files": [...]}``."""
    formats: dict[str, dict[str, Any]] = {}
    files = []
    for path, project, scope_json in sorted(rows):
        scope = Scope.from_json(scope_json)
        fmt, mode = scope.format or "plain", scope.mode or REQUESTED
        entry = formats.setdefault(fmt, {"files": 0, "modes": {}})
        entry["files"] += 1
        entry["modes"][mode] = entry["modes"].get(mode, 0) + 1
        files.append({"path": path, "project": project, "format": fmt, "mode": mode})
    return {"formats": dict(sorted(formats.items())), "files": files}
