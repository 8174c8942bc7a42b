"""The command line as a user runs it: `python -m precedents.cli` in a real subprocess.

The error boundary (exit 2 for a user's mistake, 1 for a failure, one line on
stderr, never a traceback), `--help` on every command, and the package's
layering rule: nothing outside cli/ imports cli/.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from precedents.cli import app
from precedents.cli.common import add_commands
from precedents.errors import PrecedentsError, UsageError

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "precedents"


def cli_env(tmp_path: Path) -> dict[str, str]:
    """An empty state folder and Claude Code folder: nothing of the machine's own."""
    (tmp_path / "claude").mkdir(exist_ok=True)
    return {
        **os.environ,
        "PRECEDENTS_HOME": str(tmp_path / "state"),
        "PRECEDENTS_CLAUDE_DIR": str(tmp_path / "claude"),
        "HF_HUB_OFFLINE": "1",
    }


def run_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "precedents.cli", *args],
        capture_output=True,
        text=True,
        env=cli_env(tmp_path),
        cwd=tmp_path,
        timeout=120,
    )


def command_paths(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command and group of the app, as the words that name it."""
    yield path
    for name, sub in getattr(command, "commands", {}).items():  # a group's subcommands
        yield from command_paths(sub, (*path, name))


def test_user_mistake_exits_2_with_one_line(tmp_path: Path) -> None:
    out = run_cli(tmp_path, "query", "x", "-k", "0")
    assert out.returncode == 2
    assert out.stderr.strip() == "precedents: -k must be at least 1"
    assert "Traceback" not in out.stderr + out.stdout


def test_every_command_has_help(tmp_path: Path) -> None:
    paths = list(command_paths(typer.main.get_command(app)))
    assert ("adr", "chain") in paths and ("service", "install") in paths and ("eval",) in paths
    # All at once: each is a fresh interpreter, and none of them touches the state.
    procs = [
        (
            path,
            subprocess.Popen(
                [sys.executable, "-m", "precedents.cli", *path, "--help"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=cli_env(tmp_path),
                cwd=tmp_path,
            ),
        )
        for path in paths
    ]
    for path, proc in procs:
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 0, (path, stderr)
        assert "Usage:" in stdout, path


def test_status_json_on_an_empty_state_folder(tmp_path: Path) -> None:
    out = run_cli(tmp_path, "status", "--json")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["documents"] == 0 and info["chunks"] == 0 and info["indexed_model"] in (None, "")
    assert info["state_dir"] == str(tmp_path / "state")


@pytest.mark.parametrize(
    ("exc", "code"),
    [(UsageError("bad option"), 2), (PrecedentsError("it broke"), 1), (KeyboardInterrupt(), 130)],
)
def test_error_boundary_maps_errors_to_exit_codes(exc: BaseException, code: int) -> None:
    def boom() -> None:
        raise exc

    sub = typer.Typer()
    add_commands(sub, {"boom": boom, "other": lambda: None})
    out = CliRunner().invoke(sub, ["boom"])
    assert out.exit_code == code
    assert len(out.stderr.strip().splitlines()) == 1 and out.stderr.startswith("precedents: ")
    assert out.exception is None or isinstance(out.exception, SystemExit)


def test_nothing_outside_cli_imports_cli() -> None:
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.is_relative_to(PACKAGE / "cli"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n == "precedents.cli" or n.startswith("precedents.cli.") for n in names):
                offenders.append(str(path.relative_to(PACKAGE)))
    assert offenders == []
