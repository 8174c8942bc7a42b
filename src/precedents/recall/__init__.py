"""The one ranking path: vectors, selection, marks, format and the :class:`Recall` engine.

The daemon, `precedents query`, `query --auto`, eval and the MCP server all
rank and select here, so their answers can never disagree.
"""

from precedents.recall.core import Answer, Recall, auto_context
from precedents.recall.marks import AdrMarks
from precedents.recall.selection import Selection, select
from precedents.recall.vectors import VectorSnapshot, search

__all__ = [
    "AdrMarks",
    "Answer",
    "Recall",
    "Selection",
    "VectorSnapshot",
    "auto_context",
    "search",
    "select",
]
