"""`precedents service install/uninstall`: run the watcher (and daemon) at login.

Linux gets systemd user units (``~/.config/systemd/user``), macOS LaunchAgents
(``~/Library/LaunchAgents``). The unit files are the templates shipped in this
package (``templates/systemd/``, ``templates/launchd/``) with the interpreter
and the state folder filled in, so what is installed is exactly what is
reviewed there. When ``systemctl``/``launchctl`` is missing the files are still
written (or removed) and the result says so; nothing else on the system is
touched. When the manager is there but fails, the command fails (exit 1, one
line naming the command and its reason): `uninstall` then removes no file, so
running it again once the manager answers finishes the job.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from precedents.config import Settings, xdg_config_home
from precedents.errors import PrecedentsError, UsageError

SYSTEMD_UNITS = ("precedents-watch.service", "precedents-daemon.service")
LAUNCHD_AGENTS = ("dev.precedents.watch.plist", "dev.precedents.daemon.plist")


@dataclass
class ServiceResult:
    """What install/uninstall wrote or removed (or, dry, would), and what the manager said."""

    manager: str
    files: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dry_run: bool = False
    contents: dict[str, str] = field(default_factory=dict)  # path -> unit text, dry runs only

    def to_json(self) -> dict[str, object]:
        """The ``--json`` shape (a dry run adds ``dry_run`` and each file's ``contents``)."""
        out: dict[str, object] = {
            "manager": self.manager,
            "files": self.files,
            "commands": self.commands,
            "notes": self.notes,
        }
        if self.dry_run:
            out |= {"dry_run": True, "contents": self.contents}
        return out


def _platform_manager() -> str:
    if sys.platform == "darwin":
        return "launchd"
    if sys.platform.startswith("linux"):
        return "systemd"
    raise UsageError(f"no service manager support on {sys.platform}; run `precedents watch`")


def unit_dir(manager: str) -> Path:
    """Where user units / agents live for ``manager``."""
    if manager == "launchd":
        return Path.home() / "Library" / "LaunchAgents"
    return xdg_config_home() / "systemd" / "user"


def template(manager: str, name: str) -> str:
    """The text of a unit template shipped in this package."""
    try:
        return (
            resources.files(__name__.rpartition(".")[0]) / "templates" / manager / name
        ).read_text(encoding="utf-8")
    except OSError:
        raise PrecedentsError(
            f"{manager}/{name}: service template missing from the installed package "
            "(reinstall precedents)"
        ) from None


def render(manager: str, name: str, settings: Settings, python: str) -> str:
    """A unit file with ``@PYTHON@``, ``@HOME_DIR@`` and ``@CLAUDE_DIR@`` filled in.

    The Claude Code folder is carried in as resolved now: a service starts
    without the login shell's environment, so a ``PRECEDENTS_CLAUDE_DIR`` set
    there would otherwise be lost and the watcher would index another folder.
    Everything else (model, thresholds, folders) is in the state folder's
    ``config.toml``, which ``PRECEDENTS_HOME`` points at.
    """
    text = template(manager, name)
    for key, value in (
        ("@PYTHON@", python),
        ("@HOME_DIR@", str(settings.home)),
        ("@CLAUDE_DIR@", str(settings.claude_dir)),
    ):
        text = text.replace(key, value)
    return text


def _load_commands(manager: str, names: tuple[str, ...], paths: list[str]) -> list[list[str]]:
    """What enables and starts the written units."""
    if manager == "systemd":
        return [
            ["systemctl", "--user", "daemon-reload"],
            ["systemctl", "--user", "enable", "--now", *names],
        ]
    return [["launchctl", "load", "-w", path] for path in paths]


def failure_reason(output: str, code: int) -> str:
    """The line of a manager's output that says what went wrong.

    systemctl prints progress ("Created symlink ...") on stderr before the
    error itself, so the first line is not the reason; a line that says
    failed/error is, else the last one.
    """
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if re.search(r"\b(?:fail(?:ed|ure)?|error|denied|not found)\b", line, re.IGNORECASE):
            return line
    return lines[-1] if lines else f"exit status {code}"


def _run(cmd: list[str], result: ServiceResult, then: str, missing: str) -> None:
    """Run a manager command; its failure is a :class:`PrecedentsError` whose line
    ends with ``then`` (where that leaves the user). A manager that is not
    installed is a note (``missing``): there is nothing it could have loaded."""
    if shutil.which(cmd[0]) is None:
        result.notes.append(f"{cmd[0]} not found: {missing}")
        return
    result.commands.append(" ".join(cmd))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PrecedentsError(f"`{' '.join(cmd)}` could not run: {exc}") from None
    if proc.returncode == 0:
        return
    reason = failure_reason(proc.stderr or proc.stdout, proc.returncode)
    raise PrecedentsError(f"`{' '.join(cmd)}` failed: {reason} ({then})")


def install_service(
    settings: Settings,
    *,
    daemon: bool = True,
    python: str | None = None,
    load: bool = True,
    dry_run: bool = False,
) -> ServiceResult:
    """Write (and load) the watcher unit, and the daemon's unless ``daemon`` is False.

    With ``dry_run``, nothing is written or run: the result holds the paths, the
    rendered contents and the commands that would run.
    """
    manager = _platform_manager()
    names = SYSTEMD_UNITS if manager == "systemd" else LAUNCHD_AGENTS
    chosen = names if daemon else names[:1]
    folder = unit_dir(manager)
    units = {
        str(folder / n): render(manager, n, settings, python or sys.executable) for n in chosen
    }
    result = ServiceResult(manager, files=list(units), dry_run=dry_run)
    commands = _load_commands(manager, chosen, result.files) if load else []
    if dry_run:
        result.contents = units
        result.commands = [" ".join(cmd) for cmd in commands]
        return result
    folder.mkdir(parents=True, exist_ok=True)
    (settings.home / "logs").mkdir(parents=True, exist_ok=True)
    for path, text in units.items():
        try:
            Path(path).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise PrecedentsError(f"{path}: cannot write ({exc.strerror})") from None
    for cmd in commands:
        _run(
            cmd,
            result,
            "the unit files are written; start them once the service manager is reachable, "
            "or run `precedents watch`",
            "files written, not loaded",
        )
    return result


def uninstall_service(*, load: bool = True) -> ServiceResult:
    """Stop and remove exactly the units ``install_service`` writes.

    A unit the manager failed to stop is a :class:`PrecedentsError`, and no file
    is removed: a unit file gone while its service still runs (and is still
    enabled) could no longer be stopped by this command.
    """
    manager = _platform_manager()
    names = SYSTEMD_UNITS if manager == "systemd" else LAUNCHD_AGENTS
    folder = unit_dir(manager)
    present = [folder / n for n in names if (folder / n).exists()]
    result = ServiceResult(manager)
    kept = (
        "no unit file removed; run it again once the service manager answers, or "
        "`precedents service uninstall --no-load` to remove only the files"
    )
    if load and present:
        if manager == "systemd":
            stop = [["systemctl", "--user", "disable", "--now", *[p.name for p in present]]]
        else:
            stop = [["launchctl", "unload", "-w", str(path)] for path in present]
        for cmd in stop:
            _run(cmd, result, kept, "files removed, no unit stopped")
    for path in present:
        try:
            path.unlink()
        except FileNotFoundError:
            continue  # removed meanwhile: what was asked
        except OSError as exc:
            raise PrecedentsError(f"{path}: cannot remove ({exc.strerror})") from None
        result.files.append(str(path))
    # Without systemctl the note above already says so; there is nothing to reload.
    if load and present and manager == "systemd" and shutil.which("systemctl") is not None:
        _run(
            ["systemctl", "--user", "daemon-reload"],
            result,
            "the units are stopped and their files removed; systemd forgets them at its "
            "next reload or login",
            "files removed, no unit stopped",
        )
    return result
