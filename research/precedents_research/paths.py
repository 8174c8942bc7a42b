"""Where the research reads and writes: its data, the repository, the shipped artifacts.

The package runs from its folder (an editable install, as ``make research-install``
makes): the data sits beside it and the artifacts go into the product's source tree.
"""

from __future__ import annotations

from pathlib import Path

RESEARCH = Path(__file__).resolve().parents[1]
REPO = RESEARCH.parent
DATA = RESEARCH / "data"
# The product's learned artifacts (precedents.recall loads them from its package data).
ARTIFACTS = REPO / "src" / "precedents" / "recall" / "data"
STATE = REPO / ".state"
