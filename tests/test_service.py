"""`precedents service install/uninstall` writes exactly the reviewed unit templates."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from precedents.cli import app
from precedents.config import load_settings
from precedents.service import SYSTEMD_UNITS, install_service, uninstall_service, unit_dir

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
