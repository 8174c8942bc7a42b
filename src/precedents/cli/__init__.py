"""The `precedents` command line: a typer app, one module per command group.

Each command is thin: it resolves settings, makes one library call and
prints. Nothing below this package imports it.

Importing this package loads nothing else: ``main`` (:mod:`.entry`) first offers the
arguments to :mod:`precedents.cli.fast` (`status`, `query`, `mcp` without
the typer app), and ``app`` — the typer app with every command group — is
built on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from precedents.lazy import lazy_attributes

if TYPE_CHECKING:
    from precedents.cli.app import app
    from precedents.cli.entry import main


__getattr__ = lazy_attributes(__name__, {"app": "app", "main": "entry"})

__all__ = ["app", "main"]
