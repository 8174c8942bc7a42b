"""``python -m precedents.watcher [options]``: the `watch` command without the main CLI."""

from __future__ import annotations

import typer

from precedents.cli_watch import register


def main() -> None:
    """Run the `watch` command as this module's only command."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    register(app)
    app()  # a Typer with one command runs it directly: no `watch` word needed


if __name__ == "__main__":
    main()
