"""The Claude Code plugin in plugin/ and the marketplace in .claude-plugin/, with the real client.

- The plugin's files parse and name only ``${CLAUDE_PLUGIN_ROOT}``-relative
  scripts or commands found on PATH: nothing absolute.
- The hook wrapper prints nothing and exits 0 when ``precedents-hook`` is not
  installed (or fails), and passes Claude Code's stdin and the mode through.
- ``claude plugin validate`` passes on the plugin and the marketplace; the
  marketplace installs the plugin; ``claude mcp list`` shows its MCP server.
- ``claude --plugin-dir plugin -p ...`` against the stand-in Messages API, with
  a real daemon over an index: the injected headline reaches the request.

Claude Code comes from npm (see tests/test_claude_code_e2e.py); those tests
skip where node/npm are missing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import precedents

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import (  # noqa: E402 - after the rewrite registration
    RELATED,
    RELATED_HEADLINE,
    RELATED_NOTE,
    DevState,
    hook_env,
)
from tests.test_claude_code_e2e import (  # noqa: E402
    CONTEXT_MARK,
    claude_bin,  # noqa: F401 - a fixture
    fake_api,  # noqa: F401 - a fixture
)

pytest_plugins = ["tests.conftest_daemon"]

REPO = Path(__file__).resolve().parents[1]
PLUGIN = REPO / "plugin"
WRAPPER = PLUGIN / "scripts" / "precedents-hook-wrapper"
ROOT_VAR = "${CLAUDE_PLUGIN_ROOT}"
# Where `precedents` and `precedents-hook` are installed for these tests.
VENV_BIN = Path(sys.executable).parent


def no_daemon_start(home: Path) -> Path:
    """A state folder where the hook will not start a daemon (as if it just had): none leaks."""
    from precedents.protocol import SPAWN_STAMP

    run = home / "run"
    run.mkdir(parents=True, mode=0o700)
    (run / SPAWN_STAMP).touch()
    return home


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def hook_commands() -> list[str]:
    hooks = load(PLUGIN / "hooks" / "hooks.json")["hooks"]
    return [h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]]


def assert_not_absolute(command: str) -> None:
    """A command names the plugin's own files by ``${CLAUDE_PLUGIN_ROOT}``, others by PATH."""
    for word in re.findall(r"[^\s\"']+", command):
        if word.startswith(ROOT_VAR):
            continue
        assert not word.startswith(("/", "~", "\\")), f"absolute path {word!r} in {command!r}"
        assert not re.match(r"^[A-Za-z]:[\\/]", word), f"absolute path {word!r} in {command!r}"


# -- (a) the files ---------------------------------------------------------------------------


def test_manifest_names_the_package_version() -> None:
    manifest = load(PLUGIN / ".claude-plugin" / "plugin.json")
    assert manifest["name"] == "precedents"
    assert manifest["version"] == precedents.__version__
    assert manifest["description"]
    market = load(REPO / ".claude-plugin" / "marketplace.json")
    [entry] = [p for p in market["plugins"] if p["name"] == "precedents"]
    assert entry["source"] == "./plugin"
    assert entry["version"] == precedents.__version__


def test_hooks_and_mcp_name_nothing_absolute() -> None:
    hooks = load(PLUGIN / "hooks" / "hooks.json")["hooks"]
    assert set(hooks) == {"UserPromptSubmit", "PreToolUse", "SessionStart"}
    assert hooks["PreToolUse"][0]["matcher"] == "Read|Edit|MultiEdit|Write|NotebookEdit"
    modes = {}
    for event, groups in hooks.items():
        [handler] = [h for g in groups for h in g["hooks"]]
        assert handler["type"] == "command" and handler["timeout"] <= 10
        assert ROOT_VAR in handler["command"]
        assert_not_absolute(handler["command"])
        modes[event] = handler["command"].split()[-1]
    assert modes == {"UserPromptSubmit": "prompt", "PreToolUse": "file", "SessionStart": "session"}
    servers = load(PLUGIN / ".mcp.json")["mcpServers"]
    assert servers["precedents"]["command"] == "precedents"
    assert servers["precedents"]["args"] == ["mcp"]
    for server in servers.values():
        assert_not_absolute(" ".join([server["command"], *server.get("args", [])]))
    for text in (PLUGIN / "commands").glob("*.md"):
        assert_not_absolute(text.read_text(encoding="utf-8").split("---")[1])


def test_commands_have_front_matter() -> None:
    for name, command in (("remember", "precedents remember"), ("why", "precedents why")):
        text = (PLUGIN / "commands" / f"{name}.md").read_text(encoding="utf-8")
        head, body = text.split("---\n", 2)[1:]
        fields = dict(line.split(": ", 1) for line in head.strip().splitlines())
        assert fields["description"]
        assert fields["allowed-tools"] == f"Bash({command}:*)"
        assert command in body
    assert "$ARGUMENTS" in (PLUGIN / "commands" / "remember.md").read_text(encoding="utf-8")


# -- (b) the wrapper -------------------------------------------------------------------------


def wrapper(*args: str, path: str, stdin: bytes = b"{}", cwd: Path) -> Any:
    return subprocess.run(
        ["/bin/sh", str(WRAPPER), *args],
        input=stdin,
        capture_output=True,
        env={"PATH": path, "HOME": str(cwd)},
        cwd=cwd,
        timeout=30,
    )


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell wrapper")
def test_wrapper_is_silent_without_the_package(tmp_path: Path) -> None:
    for path in ("", str(tmp_path)):
        proc = wrapper("prompt", path=path, cwd=tmp_path)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell wrapper")
def test_wrapper_passes_stdin_and_mode_through(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "precedents-hook"
    fake.write_text('#!/bin/sh\nprintf \'{"mode": "%s", "stdin": %s}\\n\' "$1" "$(cat)"\n')
    fake.chmod(0o755)
    stdin = json.dumps({"prompt": "how do I stash untracked files?", "cwd": "/x"}).encode()
    proc = wrapper("session", path=f"{bin_dir}:/usr/bin:/bin", stdin=stdin, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == b""
    assert json.loads(proc.stdout) == {"mode": "session", "stdin": json.loads(stdin)}


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell wrapper")
def test_wrapper_hides_a_failing_hook(tmp_path: Path) -> None:
    """Exit 2 would block the prompt in Claude Code: the wrapper always exits 0."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "precedents-hook"
    fake.write_text("#!/bin/sh\necho broken >&2\nexit 2\n")
    fake.chmod(0o755)
    proc = wrapper("prompt", path=f"{bin_dir}:/usr/bin:/bin", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell wrapper")
def test_wrapper_runs_the_installed_hook(tmp_path: Path) -> None:
    """The venv's real ``precedents-hook`` through the wrapper: no daemon, so nothing, exit 0."""
    if not (VENV_BIN / "precedents-hook").exists():
        pytest.skip(f"precedents-hook is not installed in {VENV_BIN}")
    proc = subprocess.run(
        ["/bin/sh", str(WRAPPER), "prompt"],
        input=b'{"prompt": "hello there, anything?"}',
        capture_output=True,
        env={
            "PATH": f"{VENV_BIN}:/usr/bin:/bin",
            "PRECEDENTS_HOME": str(no_daemon_start(tmp_path / "state")),
        },
        cwd=tmp_path,
        timeout=60,
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")


# -- (c) Claude Code's own checks ------------------------------------------------------------


def claude_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A private HOME and Claude folder; no traffic but to the stand-in API."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRECEDENTS_", "CLAUDE"))}
    env.update(
        HOME=str(tmp_path / "home"),
        CLAUDE_CONFIG_DIR=str(tmp_path / "claude-config"),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
        DISABLE_ERROR_REPORTING="1",
        CLAUDE_CODE_ENABLE_TELEMETRY="0",
        PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    env.update(extra)
    return env


def claude(exe: Path, *args: str, env: dict[str, str], cwd: Path, timeout: float = 120) -> Any:
    return subprocess.run(
        [str(exe), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.slow
def test_claude_validates_the_plugin_and_the_marketplace(tmp_path: Path, claude_bin: Path) -> None:  # noqa: F811
    env = claude_env(tmp_path)
    proc = claude(claude_bin, "plugin", "validate", "--strict", str(PLUGIN), env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Validation passed" in proc.stdout
    report = json.loads(
        claude(claude_bin, "plugin", "validate", "--json", str(PLUGIN), env=env, cwd=REPO).stdout
    )
    assert report["success"] and not report["manifest"]["errors"]
    provides = report["provides"]
    assert {h["event"] for h in provides["hooks"]} == {
        "UserPromptSubmit",
        "PreToolUse",
        "SessionStart",
    }
    assert [s["name"] for s in provides["mcpServers"]] == ["precedents"]
    assert sorted(provides["commands"]) == ["precedents:remember", "precedents:why"]
    proc = claude(claude_bin, "plugin", "validate", "--strict", str(REPO), env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "marketplace" in proc.stdout and "Validation passed" in proc.stdout


@pytest.mark.slow
def test_the_marketplace_installs_the_plugin(tmp_path: Path, claude_bin: Path) -> None:  # noqa: F811
    """`plugin marketplace add <repo>`, `plugin install precedents@precedents`, `mcp list`."""
    env = claude_env(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    steps = [
        ("plugin", "marketplace", "add", str(REPO)),
        ("plugin", "install", "precedents@precedents"),
        ("plugin", "list"),
    ]
    outs = []
    for args in steps:
        proc = claude(claude_bin, *args, env=env, cwd=project)
        assert proc.returncode == 0, f"{args}: {proc.stdout}{proc.stderr}"
        outs.append(proc.stdout)
    assert "precedents@precedents" in outs[-1] and "enabled" in outs[-1]
    assert f"Version: {precedents.__version__}" in outs[-1]
    settings = load(tmp_path / "claude-config" / "settings.json")
    assert settings["enabledPlugins"] == {"precedents@precedents": True}
    proc = claude(claude_bin, "mcp", "list", env=env, cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "plugin:precedents:precedents: precedents mcp" in proc.stdout
    # Nothing was written into the project.
    assert list(project.iterdir()) == []


# -- (d) the real client with the plugin -----------------------------------------------------


@pytest.mark.slow
def test_claude_with_the_plugin_sends_the_injected_note(
    tmp_path: Path,
    claude_bin: Path,  # noqa: F811
    fake_api: tuple[str, list[str]],  # noqa: F811
    dev_state: DevState,
    dev_daemon: Any,
) -> None:
    if not (VENV_BIN / "precedents-hook").exists():
        pytest.skip(f"precedents-hook is not installed in {VENV_BIN}")
    url, bodies = fake_api
    project = dev_state.project
    before = sorted(p.name for p in project.iterdir())
    env = hook_env(
        dev_state.home,
        **claude_env(
            tmp_path,
            ANTHROPIC_BASE_URL=url,
            ANTHROPIC_API_KEY="sk-ant-test-dummy",
            # Wiring, not speed, is tested here: the CI box may be busy.
            PRECEDENTS_HOOK_BUDGET_MS="5000",
        ),
    )
    proc = claude(
        claude_bin,
        "--plugin-dir",
        str(PLUGIN),
        "-p",
        RELATED,
        "--max-turns",
        "1",
        env=env,
        cwd=project,
        timeout=180,
    )
    messages = [b for b in bodies if CONTEXT_MARK in b]
    assert messages, (
        f"no request carried the hook's context; exit {proc.returncode}, "
        f"stdout {proc.stdout[-500:]!r}, stderr {proc.stderr[-1500:]!r}, {len(bodies)} requests"
    )
    body = messages[-1]
    assert RELATED_HEADLINE in body and RELATED_NOTE in body
    assert proc.returncode == 0, proc.stderr[-1500:]
    # The plugin wrote nothing into the project (no settings, no absolute paths).
    assert sorted(p.name for p in project.iterdir()) == before


@pytest.mark.slow
def test_the_slash_commands_and_the_mcp_tools_reach_the_model(
    tmp_path: Path,
    claude_bin: Path,  # noqa: F811
    fake_api: tuple[str, list[str]],  # noqa: F811
) -> None:
    """/precedents:why runs `precedents why` first; /precedents:remember passes its text on."""
    url, bodies = fake_api
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    env = claude_env(
        tmp_path,
        ANTHROPIC_BASE_URL=url,
        ANTHROPIC_API_KEY="sk-ant-test-dummy",
        PRECEDENTS_HOME=str(no_daemon_start(tmp_path / "state")),
    )
    note = 'Stash untracked files with `git stash -u`; it\'s "safe".'
    sent = {}
    for prompt in ("/precedents:why", f"/precedents:remember {note}"):
        # With every CPU busy (make test-loaded), `claude -p` now and then sends its one
        # request before the plugin's MCP server has listed its tools (1 run in 3 seen,
        # with the server answering `tools/list` in 50 ms when idle; 3 in 3 on a slower
        # CPU): print mode takes its tool snapshot while a stdio server is still
        # starting (anthropics/claude-code#74926). A run without them is tried again, up
        # to six times; the tools must reach the model once.
        for _ in range(6):
            bodies.clear()
            proc = claude(
                claude_bin,
                "--plugin-dir",
                str(PLUGIN),
                "-p",
                prompt,
                "--max-turns",
                "1",
                env=env,
                cwd=project,
                timeout=180,
            )
            assert proc.returncode == 0, proc.stdout[-500:] + proc.stderr[-1500:]
            sent[prompt.split()[0]] = "\n".join(bodies)
            if "mcp__plugin_precedents_precedents__" in sent[prompt.split()[0]]:
                break
    why = sent["/precedents:why"]
    # The `!` line ran `precedents why` here; its answer (no prompt answered yet) was sent.
    assert "no prompt of this project answered yet" in why
    assert "mcp__plugin_precedents_precedents__" in why  # the plugin's MCP server's tools
    remember = sent["/precedents:remember"]
    assert "Save the text below as a precedents note" in remember
    assert json.dumps(note)[1:-1] in remember
