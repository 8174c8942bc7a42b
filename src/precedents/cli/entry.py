"""The `precedents` console script: the fast path first (:mod:`.fast`), else the typer app."""

from __future__ import annotations

import sys


def main() -> None:
    """Console-script entry point."""
    from precedents.cli.fast import run

    code = run(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from precedents.cli.app import main as typer_main

    # Importing the submodule bound the package's `app` to the module: the app it is.
    sys.modules["precedents.cli"].app = sys.modules["precedents.cli.app"].app  # type: ignore[attr-defined]
    typer_main()
