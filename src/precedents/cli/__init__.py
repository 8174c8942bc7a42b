"""The `precedents` command line: a typer app, one module per command group.

Each command is thin: it resolves settings, makes one library call and
prints. Nothing below this package imports it.
"""

from precedents.cli.app import app, main

__all__ = ["app", "main"]
