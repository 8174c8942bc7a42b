"""The `precedents` command line: a typer app, one module per command group.

Each command is thin: it resolves settings, makes one library call and
prints. Nothing below this package imports it.

Importing this package loads nothing else: :func:`main` first offers the
arguments to :mod:`precedents.cli.fast` (`status`, `query`, `mcp` without
the typer app), and ``app`` — the typer app with every command group — is
built on first use.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from precedents.lazy import lazy_attributes

if TYPE_CHECKING:
    from precedents.cli.app import app


def main() -> None:
    """Console-script entry point."""
    from precedents.cli.fast import run

    code = run(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from precedents.cli.app import main as typer_main

    # Importing the submodule bound the package's `app` to the module: the app it is.
    globals()["app"] = sys.modules["precedents.cli.app"].app
    typer_main()


__getattr__ = lazy_attributes(__name__, {"app": "app"})

__all__ = ["app", "main"]
