"""`precedents install-hook`: which settings file, merge, never duplicate, uninstall exactly."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from precedents.cli.daemon import register
from precedents.errors import UsageError
from precedents.hook.install import (
    ARGS_SINCE,
    claude_version,
    install,
    is_ours,
    launcher_path,
    plugin_enabled,
    settings_path,
)

USER_HOOK = {"type": "command", "command": "echo mine", "timeout": 2}
PY = "/opt/venv/bin/python"


def read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def app() -> typer.Typer:
    a = typer.Typer()

    @a.callback()
    def _root() -> None:
        """Root."""

    register(a)
    return a


def test_exec_form_entries(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    report = install(path, python=PY, exec_form=True)
    assert report.action == "installed"
    hooks = read(path)["hooks"]
    assert hooks["UserPromptSubmit"] == [
        {
            "hooks": [
                {
                    "type": "command",
                    "command": PY,
                    "args": ["-I", "-S", str(launcher_path()), "prompt"],
                    "timeout": 10,  # above the 8 s first-prompt budget (issue #21)
                }
            ]
        }
    ]
    assert hooks["SessionStart"][0]["hooks"][0]["args"][-1] == "session"


def test_shell_form_is_quoted(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    install(path, python="/path with space/python", exec_form=False)
    entry = read(path)["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    assert "args" not in entry
    assert entry["command"].startswith("'/path with space/python' -I -S ")
    assert entry["command"].endswith(" prompt")


def test_merges_keeps_others_and_never_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    original = {
        "model": "opus",
        "hooks": {
            "UserPromptSubmit": [{"hooks": [USER_HOOK]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [USER_HOOK]}],
        },
    }
    path.write_text(json.dumps(original))
    install(path, python=PY, exec_form=True)
    again = install(path, python=PY, exec_form=True)
    assert again.action == "unchanged"
    data = read(path)
    assert data["model"] == "opus"
    # The user's own PreToolUse group stays first and untouched; ours is a group of its own.
    pre = data["hooks"]["PreToolUse"]
    assert pre[0] == original["hooks"]["PreToolUse"][0]
    assert pre[1]["matcher"] == "Read|Edit|MultiEdit|Write|NotebookEdit"
    assert pre[1]["hooks"][0]["args"][-1] == "file" and is_ours(pre[1]["hooks"][0])
    prompt = data["hooks"]["UserPromptSubmit"]
    assert prompt[0] == {"hooks": [USER_HOOK]}
    assert sum(is_ours(h) for g in prompt for h in g["hooks"]) == 1
    # A reinstall with another interpreter replaces ours, still only one.
    install(path, python="/other/python", exec_form=True)
    prompt = read(path)["hooks"]["UserPromptSubmit"]
    ours = [h for g in prompt for h in g["hooks"] if is_ours(h)]
    assert [h["command"] for h in ours] == ["/other/python"]


def test_uninstall_removes_exactly_what_it_added(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    original = {"env": {"A": "1"}, "hooks": {"UserPromptSubmit": [{"hooks": [USER_HOOK]}]}}
    path.write_text(json.dumps(original))
    install(path, python=PY, exec_form=True)
    report = install(path, uninstall=True)
    assert report.action == "uninstalled" and report.removed == 3
    assert read(path) == original
    assert install(path, uninstall=True).action == "absent"
    fresh = tmp_path / "fresh.json"
    install(fresh, python=PY, exec_form=False)
    install(fresh, uninstall=True)
    assert read(fresh) == {}


def test_a_mixed_group_keeps_the_users_handler(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    install(path, python=PY, exec_form=True)
    data = read(path)
    data["hooks"]["UserPromptSubmit"][0]["hooks"].append(USER_HOOK)
    path.write_text(json.dumps(data))
    install(path, uninstall=True)
    assert read(path)["hooks"] == {"UserPromptSubmit": [{"hooks": [USER_HOOK]}]}


@pytest.mark.parametrize("text", ["{not json", "[]", '{"hooks": []}', '{"hooks": {"X": 1}}'])
def test_malformed_settings_are_reported_and_untouched(
    tmp_path: Path, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRECEDENTS_HOME", str(tmp_path / "state"))
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    path = project / ".claude" / "settings.local.json"
    path.write_text(text)
    result = CliRunner().invoke(app(), ["install-hook", "--project", str(project)])
    assert result.exit_code == 2
    assert "left untouched" in result.output
    assert path.read_text() == text


def test_settings_path_choices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    claude = tmp_path / "claude"
    project = tmp_path / "proj"
    project.mkdir()
    assert settings_path(None, claude) == claude / "settings.json"
    assert settings_path(project, claude) == project / ".claude" / "settings.local.json"
    assert settings_path(project, claude, shared=True) == project / ".claude" / "settings.json"
    monkeypatch.chdir(project)
    assert settings_path(None, claude, shared=True) == project / ".claude" / "settings.json"
    with pytest.raises(UsageError):
        settings_path(tmp_path / "missing", claude)


@pytest.mark.parametrize("variable", ["PRECEDENTS_CLAUDE_DIR", "CLAUDE_CONFIG_DIR"])
def test_cli_default_is_the_users_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    """No option: the user's own settings.json in Claude Code's folder, nothing in the project."""
    monkeypatch.setenv("PRECEDENTS_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("PRECEDENTS_CLAUDE_DIR", raising=False)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv(variable, str(tmp_path / "claude"))
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.chdir(project)
    user_file = tmp_path / "claude" / "settings.json"
    user_file.parent.mkdir()
    user_file.write_text(json.dumps({"theme": "dark"}))
    runner = CliRunner()
    result = runner.invoke(app(), ["install-hook", "--form", "exec"])
    assert result.exit_code == 0, result.output
    assert str(user_file) in result.output
    data = read(user_file)
    assert data["theme"] == "dark"
    assert is_ours(data["hooks"]["UserPromptSubmit"][0]["hooks"][0])
    assert not (project / ".claude").exists()
    again = runner.invoke(app(), ["install-hook", "--form", "exec", "--json"])
    assert json.loads(again.output)["action"] == "unchanged"
    result = runner.invoke(app(), ["install-hook", "--uninstall"])
    assert "removed 3" in result.output
    assert read(user_file) == {"theme": "dark"}


def test_cli_project_is_local_and_shared_is_explicit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRECEDENTS_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("PRECEDENTS_CLAUDE_DIR", str(tmp_path / "claude"))
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    committed = project / ".claude" / "settings.json"
    committed.write_text(json.dumps({"permissions": {"allow": ["Bash(ls)"]}}))
    local = project / ".claude" / "settings.local.json"
    runner = CliRunner()
    result = runner.invoke(app(), ["install-hook", "--project", str(project), "--form", "exec"])
    assert result.exit_code == 0, result.output
    assert "exec form" in result.output and str(local) in result.output
    assert is_ours(read(local)["hooks"]["SessionStart"][0]["hooks"][0])
    # The committed file is never touched without --shared.
    assert read(committed) == {"permissions": {"allow": ["Bash(ls)"]}}
    assert not (tmp_path / "claude" / "settings.json").exists()
    result = runner.invoke(
        app(), ["install-hook", "--project", str(project), "--shared", "--form", "shell", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["path"] == str(committed)
    data = read(committed)
    assert data["permissions"] == {"allow": ["Bash(ls)"]}
    assert "args" not in data["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    result = runner.invoke(app(), ["install-hook", "--user", "--project", str(project)])
    assert result.exit_code == 2
    result = runner.invoke(app(), ["install-hook", "--user", "--shared"])
    assert result.exit_code == 2
    result = runner.invoke(app(), ["install-hook", "--project", str(project), "--uninstall"])
    assert "removed 3" in result.output and "hooks" not in read(local)
    result = runner.invoke(
        app(), ["install-hook", "--project", str(project), "--shared", "--uninstall"]
    )
    assert "removed 3" in result.output
    assert read(committed) == {"permissions": {"allow": ["Bash(ls)"]}}
    result = runner.invoke(app(), ["install-hook", "--user", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["path"] == str(tmp_path / "claude" / "settings.json")


def test_claude_version_decides_the_form(tmp_path: Path) -> None:
    fake = tmp_path / "claude"
    fake.write_text("#!/bin/sh\necho '2.1.100 (Claude Code)'\n")
    fake.chmod(0o755)
    assert claude_version(str(fake)) == (2, 1, 100) < ARGS_SINCE
    fake.write_text("#!/bin/sh\necho '2.1.197 (Claude Code)'\n")
    assert claude_version(str(fake)) == (2, 1, 197) >= ARGS_SINCE
    assert claude_version(str(tmp_path / "missing")) is None


def test_installed_command_runs(tmp_path: Path) -> None:
    """The registered exec-form command, run as Claude Code would, exits 0 silently."""
    import sys

    path = tmp_path / "settings.json"
    install(path, python=sys.executable, exec_form=True)
    entry = read(path)["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    proc = subprocess.run(
        [entry["command"], *entry["args"]],
        input=b"{}",
        capture_output=True,
        env={"PRECEDENTS_HOME": str(tmp_path / "state")},
        timeout=30,
    )
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""


def test_a_configured_budget_is_passed_to_the_prompt_hook(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    install(path, python=PY, exec_form=True, budget_ms=450)
    hooks = read(path)["hooks"]
    assert hooks["UserPromptSubmit"][0]["hooks"][0]["args"][-2:] == ["--budget-ms", "450"]
    assert "--budget-ms" not in hooks["SessionStart"][0]["hooks"][0]["args"]


def test_an_enabled_plugin_is_pointed_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRECEDENTS_HOME", str(tmp_path / "state"))
    claude = tmp_path / "claude"
    monkeypatch.setenv("PRECEDENTS_CLAUDE_DIR", str(claude))
    assert not plugin_enabled(claude)
    claude.mkdir()
    (claude / "settings.json").write_text(
        json.dumps({"enabledPlugins": {"precedents@precedents": True, "other@x": True}})
    )
    assert plugin_enabled(claude)
    result = CliRunner().invoke(app(), ["install-hook", "--form", "exec"])
    assert result.exit_code == 0, result.output
    assert "plugin is enabled too" in result.output
    (claude / "settings.json").write_text(
        json.dumps({"enabledPlugins": {"precedents@precedents": False}})
    )
    assert not plugin_enabled(claude)


def test_an_earlier_shared_install_is_pointed_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRECEDENTS_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("PRECEDENTS_CLAUDE_DIR", str(tmp_path / "claude"))
    project = tmp_path / "proj"
    committed = project / ".claude" / "settings.json"
    install(committed, python=PY, exec_form=True)  # what install-hook --project used to write
    result = CliRunner().invoke(app(), ["install-hook", "--project", str(project)])
    assert result.exit_code == 0, result.output
    assert "still holds precedents hooks" in result.output
