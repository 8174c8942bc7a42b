"""Package attributes that load their module on first use (PEP 562).

Why: a package's ``__init__`` runs whenever any of its modules is imported.
The CLI imports ``adr_graph`` for its status names and the daemon imports
``store`` for its row types; neither should pay for the ADR parser or for
pyarrow and LanceDB until a command actually builds a graph or opens a store.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``where`` maps an attribute to the
    submodule defining it; the value is cached in the package once loaded."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(importlib.import_module(package), name, value)
        return value

    return __getattr__
