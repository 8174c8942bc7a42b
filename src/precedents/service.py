"""`precedents service install/uninstall`: run the watcher (and daemon) at login.

Linux gets systemd user units (``~/.config/systemd/user``), macOS LaunchAgents
(``~/Library/LaunchAgents``). The unit files are the templates in the
repository's ``systemd/`` and ``launchd/`` folders with the interpreter and the
state folder filled in, so what is installed is exactly what is reviewed there.
When ``systemctl``/``launchctl`` is missing the files are still written and
the result says so; nothing else on the system is touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from precedents.config import Settings
from precedents.errors import PrecedentsError, UsageError

SYSTEMD_UNITS = ("precedents-watch.service", "precedents-daemon.service")
LAUNCHD_AGENTS = ("dev.precedents.watch.plist", "dev.precedents.daemon.plist")
TEMPLATES = Path(__file__).resolve().parents[2]


@dataclass
class ServiceResult:
    """What install/uninstall wrote or removed, and what the service manager said."""

    manager: str
    files: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        """The ``--json`` shape."""
        return {
            "manager": self.manager,
            "files": self.files,
            "commands": self.commands,
            "notes": self.notes,
        }


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
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user"


def render(template: Path, settings: Settings, python: str) -> str:
    """A unit file with ``@PYTHON@`` and ``@HOME_DIR@`` filled in."""
    try:
        text = template.read_text(encoding="utf-8")
    except OSError:
        raise UsageError(
            f"{template}: service template not found (install precedents from its checkout "
            "with `make run`, which keeps systemd/ and launchd/ beside the package)"
        ) from None
    return text.replace("@PYTHON@", python).replace("@HOME_DIR@", str(settings.home))


def _run(cmd: list[str], result: ServiceResult) -> None:
    if shutil.which(cmd[0]) is None:
        result.notes.append(f"{cmd[0]} not found: files written, not loaded")
        return
    result.commands.append(" ".join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    if proc.returncode != 0:
        reason = (proc.stderr or proc.stdout).strip().splitlines()
        result.notes.append(f"`{' '.join(cmd)}` failed: {reason[0] if reason else proc.returncode}")


def install_service(
    settings: Settings, *, daemon: bool = True, python: str | None = None, load: bool = True
) -> ServiceResult:
    """Write (and load) the watcher unit, and the daemon's unless ``daemon`` is False."""
    manager = _platform_manager()
    interpreter = python or sys.executable
    names = SYSTEMD_UNITS if manager == "systemd" else LAUNCHD_AGENTS
    chosen = names if daemon else names[:1]
    folder = unit_dir(manager)
    folder.mkdir(parents=True, exist_ok=True)
    (settings.home / "logs").mkdir(parents=True, exist_ok=True)
    result = ServiceResult(manager)
    for name in chosen:
        template = TEMPLATES / manager / name
        target = folder / name
        try:
            target.write_text(render(template, settings, interpreter), encoding="utf-8")
        except OSError as exc:
            raise PrecedentsError(f"{target}: cannot write ({exc.strerror})") from None
        result.files.append(str(target))
    if load:
        if manager == "systemd":
            _run(["systemctl", "--user", "daemon-reload"], result)
            _run(["systemctl", "--user", "enable", "--now", *chosen], result)
        else:
            for path in result.files:
                _run(["launchctl", "load", "-w", path], result)
    return result


def uninstall_service(*, load: bool = True) -> ServiceResult:
    """Stop and remove exactly the units ``install_service`` writes."""
    manager = _platform_manager()
    names = SYSTEMD_UNITS if manager == "systemd" else LAUNCHD_AGENTS
    folder = unit_dir(manager)
    present = [folder / n for n in names if (folder / n).exists()]
    result = ServiceResult(manager)
    if load and present:
        if manager == "systemd":
            _run(["systemctl", "--user", "disable", "--now", *[p.name for p in present]], result)
        else:
            for path in present:
                _run(["launchctl", "unload", "-w", str(path)], result)
    for path in present:
        path.unlink()
        result.files.append(str(path))
    if load and present and manager == "systemd":
        _run(["systemctl", "--user", "daemon-reload"], result)
    return result
