"""`precedents why` shows what the hook decided (from the daemon's log, never the prompt),
and `precedents mute PATH` stops a record from being injected (issue #11, item 4).

Real parts: the dev notes indexed with the bundled model, the daemon as a
subprocess, the hook as Claude Code runs it, the CLI as a subprocess.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import (  # noqa: E402 - after the rewrite registration
    RELATED,
    RELATED_NOTE,
    UNRELATED,
    DevState,
    copy_state,
    prompt_json,
    run_cli,
    run_hook,
    running_daemon,
)

pytest_plugins = ["tests.conftest_daemon"]


def injected(home: Path, project: Path, prompt: str) -> str:
    out = run_hook(home, prompt_json(prompt, project), cwd=project)
    assert out.returncode == 0
    return out.stdout.decode()


@pytest.mark.slow
def test_why_and_mute_with_a_real_daemon(dev_state: DevState, tmp_path: Path) -> None:
    home = copy_state(dev_state, tmp_path)
    project = dev_state.project
    note = str(dev_state.notes / RELATED_NOTE)
    with running_daemon(home):
        assert RELATED_NOTE in injected(home, project, RELATED)
        assert injected(home, project, UNRELATED) == ""

        why = run_cli(home, project, "why", "--json", "-n", "5")
        assert why.returncode == 0, why.stderr
        answers = json.loads(why.stdout)
        assert [a["decision"] for a in answers][:2] == [answers[0]["decision"], "injected"]
        assert answers[0]["decision"] != "injected"  # the unrelated one, newest first
        assert note in answers[1]["shown"] and isinstance(answers[1]["top"], float)
        assert "git stash" not in why.stdout and "weekend" not in why.stdout  # never the text

        muted = run_cli(home, project, "mute", note)
        assert muted.returncode == 0 and "muted:" in muted.stdout, muted.stderr
        assert RELATED_NOTE not in injected(home, project, RELATED)  # the next message already
        ranked = run_cli(home, project, "query", RELATED, "--json", "-k", "3")
        assert note in [r["path"] for r in json.loads(ranked.stdout)["results"]]  # still ranks

        assert run_cli(home, project, "unmute", note).returncode == 0
        assert RELATED_NOTE in injected(home, project, RELATED)


def test_why_with_no_daemon_log_says_so(home: Path, tmp_path: Path) -> None:
    from precedents import api
    from precedents.config import load_settings

    assert api.why(load_settings(), str(tmp_path)) == []
    out = run_cli(home, tmp_path, "why")
    assert out.returncode == 0 and "no prompt of this project answered yet" in out.stdout


def test_a_damaged_mute_list_mutes_nothing(home: Path) -> None:
    from precedents.recall.mute import MuteList

    home.mkdir(parents=True, exist_ok=True)
    (home / "muted.json").write_text("{not json")
    assert MuteList(home).paths() == frozenset()
    target, changed = MuteList(home).mute("x.md")
    assert changed and MuteList(home).paths() == {target}
