"""The ADR graph (SPEC §4): parse an ADR folder, decide every record's status by one rule.

Standard library and PyYAML only, so the CLI, the watcher and the daemon can
all import it cheaply and call the same code::

    graph = build_graph(Path("docs/adr"), cache_dir, mask)   # mask: the secret masker
    rec = graph.record_for_path(path)   # .id .title .status .mark .date .component
    graph.chain("ADR-0012")             # {"current", "history", "sources"}
    graph.check()                       # [Finding]
    AdrView(graph).record(rec)          # as output: every field inert (view.py)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from precedents.adr_graph.chain import AdrChainError
from precedents.adr_graph.model import (
    DEPRECATED,
    LIVE,
    PARTIAL,
    PROPOSED,
    REJECTED,
    STATUSES,
    SUPERSEDED,
    UNKNOWN,
    AdrRecord,
    Finding,
    NonAdr,
)
from precedents.lazy import lazy_attributes

if TYPE_CHECKING:
    from precedents.adr_graph.graph import (
        CONVENTIONAL_DIRS,
        AdrGraph,
        build_graph,
        default_adr_dir,
        find_adr_dirs,
    )
    from precedents.adr_graph.status import decide
    from precedents.adr_graph.view import AdrView

# The parser, the status rule and the cache load on first use: every CLI
# command imports this package (for STATUSES), and only `adr` commands build
# a graph (~0.12 s of imports on a 2-core box).
_LAZY = {
    "CONVENTIONAL_DIRS": "graph",
    "AdrGraph": "graph",
    "build_graph": "graph",
    "default_adr_dir": "graph",
    "find_adr_dirs": "graph",
    "decide": "status",
    "AdrView": "view",
}


__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "CONVENTIONAL_DIRS",
    "DEPRECATED",
    "LIVE",
    "PARTIAL",
    "PROPOSED",
    "REJECTED",
    "STATUSES",
    "SUPERSEDED",
    "UNKNOWN",
    "AdrChainError",
    "AdrGraph",
    "AdrRecord",
    "AdrView",
    "Finding",
    "NonAdr",
    "build_graph",
    "decide",
    "default_adr_dir",
    "find_adr_dirs",
]
