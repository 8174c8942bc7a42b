"""What every command module shares: the error boundary, JSON printing, the shared options.

The error boundary is the only place where library errors become exit codes:
one line on stderr, exit 2 for a user's mistake (:class:`UsageError`), 1 for
other failures, 130 on Ctrl-C; never a traceback. An ``OSError`` that no
layer below translated is one line and exit 1 as well; a full disk, whatever
layer reports it (LanceDB says so in a RuntimeError's text), is always the
same :class:`DiskFull` line (issue #20). Every command is attached through
:func:`add_commands`, so none can bypass it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer

from precedents.errors import PrecedentsError, UsageError, disk_full, is_disk_full

if TYPE_CHECKING:
    from typer._click import exceptions as click_errors

    from precedents.api import Sources
else:
    # Typer 0.2x carries its own copy of click (typer._click); older ones use click.
    try:
        from typer._click import exceptions as click_errors
    except ImportError:  # pragma: no cover - typer before it vendored click
        from click import exceptions as click_errors

# The usage errors the app raises (cli/app.py prints each as one line).
ClickException = click_errors.ClickException
ClickUsageError = click_errors.UsageError
NoArgsIsHelp = click_errors.NoArgsIsHelpError

F = TypeVar("F", bound=Callable[..., Any])


class NoSuchPath(ClickUsageError):
    """A folder option that names no folder: misuse, exit 2, one line (cli/app.py prints
    it without a `--help` hint)."""


def _paths_of(value: Any) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]


def existing_folder(param: typer.CallbackParam, value: Any) -> Any:
    """Typer callback: ``value`` (one path or a list) when each names an existing folder
    (a project, a source, an ADR or eval set folder); else :class:`NoSuchPath` naming
    the option and the path."""
    name = param.opts[0] if param.opts and param.param_type_name == "option" else ""
    label = f"{name} " if name else ""
    for raw in _paths_of(value):
        path = Path(raw).expanduser()
        if not path.exists():
            raise NoSuchPath(f"{label}{raw[:300]}: no such folder")
        if not path.is_dir():
            raise NoSuchPath(f"{label}{raw[:300]}: a file, not a folder")
    return value


# One declaration of each option that several commands take, so their names
# and help texts cannot drift apart between commands. Every path option is
# checked by the callbacks above, before the command runs (issue #29: a missing
# --project was answered as an empty project, rc 0).
JsonOpt = Annotated[bool, typer.Option("--json", help="Print data as JSON.")]
ProjectOpt = Annotated[
    str | None,
    typer.Option(
        "--project",
        "--repo",
        help="Project root (default: this directory's root).",
        callback=existing_folder,
    ),
]
ModelOpt = Annotated[str | None, typer.Option(help="Embedding model id or folder.")]
NotesOpt = Annotated[
    list[Path] | None, typer.Option("--notes", help="A notes folder.", callback=existing_folder)
]
RulesOpt = Annotated[
    list[Path] | None, typer.Option("--rules", help="A rules folder.", callback=existing_folder)
]
AdrsOpt = Annotated[
    list[Path] | None, typer.Option("--adrs", help="An ADR folder.", callback=existing_folder)
]
ConversationsOpt = Annotated[
    list[Path] | None,
    typer.Option("--conversations", help="A folder of .jsonl logs.", callback=existing_folder),
]


def to_sources(
    notes: list[Path] | None,
    rules: list[Path] | None,
    adrs: list[Path] | None,
    conversations: list[Path] | None,
    project: str | None,
) -> Sources:
    """The folders named by ``--notes/--rules/--adrs/--conversations`` for ``--project``."""
    from precedents.api import Sources

    return Sources(
        tuple(notes or ()),
        tuple(rules or ()),
        tuple(adrs or ()),
        tuple(conversations or ()),
        project,
    )


def fail(message: str, code: int) -> NoReturn:
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
        except OSError as exc:
            fail(_full_disk_line(exc) if is_disk_full(exc) else _os_line(exc), 1)
        except (RuntimeError, ValueError) as exc:
            if not is_disk_full(exc):
                raise  # a bug: its traceback is what finds it
            fail(_full_disk_line(exc), 1)

    return wrapper  # type: ignore[return-value]


def _full_disk_line(exc: BaseException) -> str:
    from precedents.config import state_dir

    where = None if getattr(exc, "filename", None) else state_dir(create=False)
    return str(disk_full(exc, where, "free some space and run the command again"))


def _os_line(exc: OSError) -> str:
    """An OS error as one line: what failed, and on which file when it says."""
    what = exc.strerror or type(exc).__name__
    files = [str(f) for f in (exc.filename, exc.filename2) if f is not None]
    return f"{what}: {' -> '.join(files)}" if files else what


def add_commands(app: typer.Typer, commands: Mapping[str, Callable[..., Any]]) -> None:
    """Attach ``commands`` (name -> function) to ``app``, each behind the error boundary."""
    for name, fn in commands.items():
        app.command(name)(errors(fn))


def print_json(data: Any) -> None:
    """Data as indented JSON, non-ASCII kept readable."""
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2))
