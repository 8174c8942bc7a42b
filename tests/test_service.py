"""`precedents service install/uninstall` writes exactly the reviewed unit templates."""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path

import pytest
from typer.testing import CliRunner

from precedents.cli import app
from precedents.config import load_settings
from precedents.service.units import (
    LAUNCHD_AGENTS,
    SYSTEMD_UNITS,
    install_service,
    template,
    uninstall_service,
    unit_dir,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="systemd units")


def test_install_fills_templates_and_uninstall_removes_them(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    other = unit_dir("systemd") / "someone-else.service"
    other.parent.mkdir(parents=True)
    other.write_text("[Service]\nExecStart=/bin/true\n")
    result = install_service(load_settings(), python="/opt/venv/bin/python", load=False)
    assert [Path(f).name for f in result.files] == list(SYSTEMD_UNITS)
    watch = (unit_dir("systemd") / "precedents-watch.service").read_text()
    assert "ExecStart=/opt/venv/bin/python -m precedents.cli watch" in watch
    assert f"Environment=PRECEDENTS_HOME={home}" in watch
    assert "@PYTHON@" not in watch and "@HOME_DIR@" not in watch
    removed = uninstall_service(load=False)
    assert sorted(Path(f).name for f in removed.files) == sorted(SYSTEMD_UNITS)
    assert other.exists()  # not ours: untouched
    assert not (unit_dir("systemd") / "precedents-watch.service").exists()


def test_cli_install_without_systemctl_says_so(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    out = CliRunner().invoke(app, ["service", "install", "--no-daemon", "--json"])
    assert out.exit_code == 0, out.output
    assert '"precedents-watch.service"' not in out.output  # full paths are printed
    assert "precedents-watch.service" in out.output
    assert "precedents-daemon.service" not in out.output
    assert "systemctl not found" in out.output


def test_templates_ship_inside_the_package() -> None:
    shipped = resources.files("precedents.service") / "templates"
    for manager, names in (("systemd", SYSTEMD_UNITS), ("launchd", LAUNCHD_AGENTS)):
        for name in names:
            assert (shipped / manager / name).is_file()
            text = template(manager, name)
            assert "@PYTHON@" in text and "@HOME_DIR@" in text
            assert "precedents.cli" in text  # the units run the CLI module, which must stay


def test_dry_run_prints_the_units_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("PRECEDENTS_HOME", str(tmp_path / "state"))
    out = CliRunner().invoke(app, ["service", "install", "--dry-run"])
    assert out.exit_code == 0, out.output
    target = tmp_path / "config" / "systemd" / "user"
    assert f"== would write {target / 'precedents-watch.service'}" in out.output
    assert f"== would write {target / 'precedents-daemon.service'}" in out.output
    assert f"ExecStart={sys.executable} -m precedents.cli watch" in out.output
    assert "would run: systemctl --user daemon-reload" in out.output
    data = json.loads(
        CliRunner().invoke(app, ["service", "install", "--dry-run", "--no-daemon", "--json"]).output
    )
    assert data["dry_run"] is True and data["files"] == [str(target / "precedents-watch.service")]
    assert f"PRECEDENTS_HOME={tmp_path / 'state'}" in data["contents"][data["files"][0]]
    assert not (tmp_path / "config").exists() and not (tmp_path / "state").exists()


def fake_systemctl(folder: Path, code: int, stderr: str) -> Path:
    """A `systemctl` on PATH that prints ``stderr`` and exits ``code`` (no user bus here)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "systemctl"
    script.write_text(f"#!/bin/sh\nprintf {json.dumps(stderr)} >&2\nexit {code}\n")
    script.chmod(0o755)
    return folder


def test_a_failing_service_manager_exits_1_with_its_reason(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    bus_error = (
        "Created symlink /x/default.target.wants/precedents-watch.service.\n"
        "Failed to connect to bus: No medium found\n"
    )
    monkeypatch.setenv("PATH", str(fake_systemctl(tmp_path / "bin", 1, bus_error)))
    out = CliRunner().invoke(app, ["service", "install", "--no-daemon"])
    assert out.exit_code == 1, out.output
    lines = [line for line in out.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Failed to connect to bus: No medium found" in lines[0]
    assert "Created symlink" not in out.output and "Traceback" not in out.output


def test_units_carry_the_claude_folder(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    claude = tmp_path / "my-claude"
    monkeypatch.setenv("PRECEDENTS_CLAUDE_DIR", str(claude))
    install_service(load_settings(), python="/opt/venv/bin/python", load=False)
    for name in SYSTEMD_UNITS:
        text = (unit_dir("systemd") / name).read_text()
        assert f"Environment=PRECEDENTS_CLAUDE_DIR={claude}" in text, name
        assert "@CLAUDE_DIR@" not in text
    for name in LAUNCHD_AGENTS:
        assert "<string>@CLAUDE_DIR@</string>" in template("launchd", name)
