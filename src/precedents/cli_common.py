"""What every command module shares: the error boundary and JSON printing.

Library errors become one line on stderr: exit 2 for a user's mistake
(:class:`UsageError`), 1 for other failures, 130 on Ctrl-C; never a traceback.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from precedents.errors import PrecedentsError, UsageError

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int) -> None:
    """Print a one-line error and exit with ``code``."""
    typer.echo(f"precedents: {message}", err=True)
    raise typer.Exit(code)


def errors(fn: F) -> F:
    """Turn library errors raised by a command into one-line messages and exit codes."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except UsageError as exc:
            fail(str(exc), 2)
        except PrecedentsError as exc:
            fail(str(exc), 1)
        except KeyboardInterrupt:
            fail("interrupted", 130)

    return wrapper  # type: ignore[return-value]


def print_json(data: Any) -> None:
    """Data as indented JSON, non-ASCII kept readable."""
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2))
