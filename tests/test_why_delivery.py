"""`precedents why` tells what reached the agent, not only what the daemon decided
(issue #21, item 2): a decision whose hook had given up is ``late: not delivered``,
a record the mute list kept out is ``muted``, and a prompt the daemon never saw is
listed too. Joined by the request id both logs carry; neither holds the prompt.

Real parts: the daemon (real model over the dev notes, or a recall that answers
slowly on a thread), the hook as Claude Code runs it, the CLI as a subprocess.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from precedents import protocol

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import (  # noqa: E402 - after the rewrite registration
    RELATED,
    DevState,
    FakeRecall,
    copy_state,
    prompt_json,
    run_cli,
    run_hook,
    run_in_thread,
    running_daemon,
    settings_for,
)

pytest_plugins = ["tests.conftest_daemon"]


def why_json(home: Path, project: Path, n: int = 10) -> list[dict[str, Any]]:
    out = run_cli(home, project, "why", "--json", "-n", str(n))
    assert out.returncode == 0, out.stderr
    answers: list[dict[str, Any]] = json.loads(out.stdout)
    return answers


def last_hook_line(home: Path) -> dict[str, Any]:
    lines = (home / "logs" / "hook.log").read_text().splitlines()
    entry: dict[str, Any] = json.loads(lines[-1].split(": ", 1)[1])
    return entry


@pytest.mark.slow
def test_why_says_what_was_delivered(dev_state: DevState, tmp_path: Path) -> None:
    home = copy_state(dev_state, tmp_path)
    project = dev_state.project
    with running_daemon(home):
        # A hook with a 1 ms budget gives up before any answer can come: the daemon
        # still decides to inject, and `why` must not say it was injected.
        late = run_hook(home, prompt_json(RELATED, project), cwd=project, budget_ms=1)
        assert late.returncode == 0 and late.stdout == b""
        gave_up = last_hook_line(home)
        assert gave_up["outcome"] == "timeout"
        on_time = run_hook(home, prompt_json(RELATED, project), cwd=project)
        assert on_time.stdout  # the same question with time to answer: injected
        session = json.dumps(
            {"session_id": "w", "cwd": str(project), "hook_event_name": "SessionStart"}
        ).encode()
        assert run_hook(home, session, "session", cwd=project).stdout

        answers = why_json(home, project)
        by_rid = {a["rid"]: a for a in answers}
        assert by_rid[gave_up["rid"]]["decision"] == "late: not delivered"
        assert by_rid[gave_up["rid"]]["hook"] == "timeout"
        assert by_rid[gave_up["rid"]]["shown"]  # what the agent never got
        assert [a["decision"] for a in answers[:2]] == ["injected", "injected"]
        assert [a["event"] for a in answers[:2]] == ["session", "prompt"]
        assert all(a["hook"] == "injected" for a in answers[:2])

        text = run_cli(home, project, "why", "-n", "3").stdout
        assert "late: not delivered" in text and "(never reached the agent)" in text
        assert "git stash" not in text and "git stash" not in json.dumps(answers)


@pytest.mark.slow
def test_a_muted_record_is_muted_not_below_top(dev_state: DevState, tmp_path: Path) -> None:
    from precedents.recall.mute import MuteList

    home = copy_state(dev_state, tmp_path)
    project = dev_state.project
    notes = sorted(str(p) for p in dev_state.notes.glob("*.md"))
    for path in notes:  # every note: what the question would be given is muted
        MuteList(home).mute(path)
    with running_daemon(home):
        out = run_hook(home, prompt_json(RELATED, project), cwd=project)
        assert out.returncode == 0 and out.stdout == b""
        [latest] = why_json(home, project, 1)
    assert latest["decision"] == "muted", latest  # the ranking alone says "below-top"
    assert latest["muted"] and {m["path"] for m in latest["muted"]} <= set(notes)
    assert {m["route"] for m in latest["muted"]} <= {"prompt", "successor"}
    assert latest["bytes"] == 0 and latest["hook"] == "none"
    text = run_cli(home, project, "why", "-n", "1").stdout
    assert text.split()[3] == "muted" and "(muted: would have come by " in text


def test_why_lists_prompts_the_daemon_never_saw(tmp_path: Path) -> None:
    home = tmp_path / "state"
    project = tmp_path / "project"
    project.mkdir()
    run = home / "run"
    run.mkdir(parents=True)
    # A daemon was started a moment ago by another hook and never came up.
    (run / "daemon.spawned").touch()
    out = run_hook(home, prompt_json(RELATED, project), cwd=project, budget_ms=None)
    assert out.returncode == 0 and out.stdout == b""
    assert last_hook_line(home)["outcome"] == "down"
    text = run_cli(home, project, "why").stdout
    assert "no prompt of this project answered yet" in text
    assert "hook calls the daemon never answered" in text
    assert text.rstrip().endswith("prompt down")


class GivingRecall(FakeRecall):
    """Gives one record per answer, slowly, remembering it for the session as the real
    recall does (precedents.recall.sessions)."""

    def __init__(self) -> None:
        from precedents.recall.sessions import SessionLog

        super().__init__()
        self.sessions = SessionLog()
        self.answered = threading.Event()

    def context(self, text: str, cwd: str, **kw: Any) -> Any:
        from precedents.recall.core import Answer

        time.sleep(0.5)
        self.sessions.give(kw.get("session", ""), [("/notes/a.md", "")])
        self.answered.set()
        return Answer("ctx a", shown=("/notes/a.md",))


def test_an_answer_the_hook_gave_up_on_is_taken_back_from_the_session(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from precedents.query_daemon.server import Daemon

    recall = GivingRecall()
    daemon = Daemon(settings_for(home), recall_factory=lambda _: recall)
    thread, _ = run_in_thread(daemon)
    request = {"op": "context", "prompt": RELATED, "cwd": str(home), "session_id": "S"}
    given = [("/notes/a.md", "")]
    try:
        with caplog.at_level(logging.INFO, logger="precedents.daemon"):
            with pytest.raises(protocol.Unavailable):
                protocol.ask({**request, "rid": "late1"}, 0.05, home / "run")
            assert recall.answered.wait(30)
            deadline = time.monotonic() + 30

            def logged() -> bool:
                return any('undelivered {"rid": "late1"' in r.getMessage() for r in caplog.records)

            # The take-back comes first and its log line just after, in the daemon's thread.
            while (
                recall.sessions.withheld("S", given) or not logged()
            ) and time.monotonic() < deadline:
                time.sleep(0.02)
            # Never delivered: the session may be given it by its next prompt.
            assert recall.sessions.withheld("S", given) == set()
            assert logged()
            # Delivered: remembered, not given twice.
            assert protocol.ask({**request, "rid": "ok1"}, 30, home / "run")["context"] == "ctx a"
            assert recall.sessions.withheld("S", given) == {"/notes/a.md"}
    finally:
        daemon.stop()
        thread.join(10)
