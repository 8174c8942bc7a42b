"""The MCP ADR tools' answers without what the user muted (recall/mute.py).

`adr_status`, `adr_find` and `adr_chain` hand an agent ADR records and their
text. A muted ADR is not hidden from the graph (a chain through it would break,
and its status is a fact), but none of its words reach the agent: it keeps its
id, path, status, mark, date and place in the chain, says ``"muted": true``,
and its title, status as written, component, relations and ``lines`` are
empty, as a suspect record's are (adr_graph/view.py). A replaced ADR's mark
names a muted successor by its id followed by "(muted)", as the hooks' lines do
(recall/marks.py). `precedents adr` on the command line is the user's own
lookup and shows every record in full.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from precedents.adr_graph.model import label_for
from precedents.inert import inert_path
from precedents.recall.mute import MuteList, name_muted

if TYPE_CHECKING:
    from precedents.adr_graph.view import AdrView
    from precedents.config import Settings

# What a muted record's row keeps empty, by field (the view's shapes).
_EMPTY: dict[str, Any] = {
    "title": "",
    "declared_status": None,
    "successors": [],
    "relations": [],
    "component": None,
    "lines": [],
    "external": [],
}


class MutedAdrs:
    """The muted records of one ADR view's folder: by the path its rows show."""

    def __init__(self, view: AdrView, muted: frozenset[str]) -> None:
        graph = view.graph
        found = (graph.record_for_path(p) for p in muted)
        records = [r for r in found if r is not None]
        self.paths = {inert_path(r.path) for r in records}
        self.labels = [label_for(r.id, r.number) for r in records]

    @classmethod
    def of(cls, settings: Settings, view: AdrView) -> MutedAdrs:
        """The records of ``view`` on the mute list of ``settings``' state folder now."""
        return cls(view, MuteList(settings.home).paths())

    def __bool__(self) -> bool:
        return bool(self.paths)

    def row(self, row: dict[str, Any]) -> dict[str, Any]:
        """One record (`adr_status`, `adr_find`) or chain source: a muted one without its
        words; any other with its muted successors named as such in its mark."""
        out = dict(row)
        if out.get("mark"):
            out["mark"] = name_muted(str(out["mark"]), self.labels)
        if out.get("path") not in self.paths:
            return out
        for key, empty in _EMPTY.items():
            if key in out:
                out[key] = empty
        out.pop("warnings", None)
        out["muted"] = True
        return out

    def chain(self, packet: dict[str, Any]) -> dict[str, Any]:
        """An `adr_chain` answer with each source passed through :meth:`row`."""
        sources = packet.get("sources") or {}
        return {**packet, "sources": {k: self.row(v) for k, v in sources.items()}}
