"""A teammate's note, pulled not pushed (issue #23): real git, the real watcher, daemon,
hook, CLI and MCP server, the real bundled model.

A bare origin and two clones. Alice runs `precedents remember --team` in hers, stages
it with the exact `git add` it printed, commits and pushes. Bob's watcher and daemon
run over his clone, which Claude Code was used in (its folder in Bob's
``~/.claude/projects``) and which had no ``.precedents/`` at all. Bob pulls; the time
from the pull returning to the note coming back through Bob's prompt hook is measured
(goal: 5 s; asserted with a generous bound). Then every channel shows the note with
its `team` mark; a second note, pulled into the folder that now exists, is measured
too and SessionStart names it as changed since the last session.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from precedents.ingest.sources import encode_project_path
from tests.team_repos import GIT_ENV, commit_and_push, git, team_repos
from tests.team_repos import precedents as run
from tests.test_team_notes import FREEZE, FREEZE_PROMPT

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import (  # noqa: E402 - after the rewrite registration
    file_json,
    hook_env,
    prompt_json,
    run_hook,
    start_daemon,
    stop_daemon,
    wait_ready,
)

pytestmark = pytest.mark.slow

GOAL_S = 5.0  # the goal, from the pull returning to the note being recallable
BOUND_S = 45.0  # what is asserted: a busy 2-core box must not fail the suite
CACHE_NOTE = "Warm the product cache before every release: the first hour is slow otherwise."
CACHE_PROMPT = "should the product cache be warmed before a release?"


def env_for(home: Path, claude: Path) -> dict[str, str]:
    return hook_env(home, PRECEDENTS_CLAUDE_DIR=str(claude), **GIT_ENV)


@contextlib.contextmanager
def watcher(env: dict[str, str]) -> Iterator[list[str]]:
    """`precedents watch` as a subprocess, its log lines collected; ready (reconciled,
    model loaded) when the block starts."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "precedents.cli", "watch"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    assert proc.stderr is not None
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr or ()), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 240
        while not (any("reconciled" in x for x in lines) and any(" loaded " in x for x in lines)):
            assert proc.poll() is None, "".join(lines)[-3000:]
            assert time.monotonic() < deadline, "".join(lines)[-3000:]
            time.sleep(0.1)
        yield lines
    finally:
        proc.terminate()  # SIGTERM: the watcher stops cleanly
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        reader.join(10)


def recalled_after_pull(home: Path, bob: Path, prompt: str, wanted: str) -> tuple[float, str]:
    """Pull, then ask Bob's prompt hook until its context holds ``wanted``: the seconds
    from the pull returning, and the context."""
    git(bob, "pull", "-q", "--ff-only", "origin", "main")
    pulled = time.monotonic()
    while time.monotonic() - pulled < BOUND_S:
        proc = run_hook(home, prompt_json(prompt, bob), cwd=bob)
        if proc.stdout:
            context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
            if wanted in context:
                return time.monotonic() - pulled, context
        time.sleep(0.1)
    raise AssertionError(f"not recalled within {BOUND_S:.0f} s of the pull")


def session_start(home: Path, bob: Path, session: str) -> str:
    stdin = {"session_id": session, "cwd": str(bob), "hook_event_name": "SessionStart"}
    proc = run_hook(home, json.dumps({**stdin, "source": "startup"}).encode(), "session")
    assert proc.returncode == 0
    return (
        str(json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"])
        if (proc.stdout)
        else ""
    )


def test_a_pulled_team_note_is_recalled_and_marked_everywhere(tmp_path: Path) -> None:
    _, alice, bob = team_repos(tmp_path)
    alice_env = env_for(tmp_path / "alice-state", tmp_path / "alice-claude")
    home, claude = tmp_path / "bob-state", tmp_path / "bob-claude"
    # Bob has used Claude Code in his clone: its folder and a session log naming it.
    folder = claude / "projects" / encode_project_path(str(bob))
    folder.mkdir(parents=True)
    (folder / "s0.jsonl").write_text(json.dumps({"type": "summary", "cwd": str(bob)}) + "\n")
    env = env_for(home, claude)
    day = time.strftime("%Y-%m-%d")
    mark = f"note (team, Alice Example, {day})"
    with watcher(env) as log:
        daemon = start_daemon(home)
        try:
            wait_ready(home, daemon)
            title = "Release freeze on Fridays"
            wrote = run(alice, alice_env, "remember", "--team", FREEZE, "--title", title)
            assert wrote.returncode == 0, wrote.stderr
            add = wrote.stdout.splitlines()[-1].split(": ", 1)[1]
            assert add == "git add .precedents/notes/release_freeze_on_fridays.md"
            commit_and_push(alice, add, "Team note: the Friday freeze")
            assert not (bob / ".precedents").exists()

            first_s, context = recalled_after_pull(home, bob, FREEZE_PROMPT, mark)
            print(f"\npull -> recalled (team folder created by the pull): {first_s:.2f} s")
            note = bob / ".precedents" / "notes" / "release_freeze_on_fridays.md"
            assert f"{mark}  Release freeze on Fridays — " in context and f"({note})" in context
            _check_channels(home, bob, env, note, mark)

            assert "This repository shares 1 team note" in session_start(home, bob, "s1")
            wrote = run(
                alice, alice_env, "remember", "--team", CACHE_NOTE, "--title", "Cache warm-up"
            )
            assert wrote.returncode == 0, wrote.stderr
            commit_and_push(alice, wrote.stdout.splitlines()[-1].split(": ", 1)[1], "cache")
            second_s, context = recalled_after_pull(home, bob, CACHE_PROMPT, "Cache warm-up")
            print(f"pull -> recalled (team folder already watched): {second_s:.2f} s")
            assert f"{mark}  Cache warm-up" in context
            news = session_start(home, bob, "s2")
            assert news.startswith("1 team note changed since your last session (reference")
            assert f"\n- {mark}  Cache warm-up — " in news and "Release freeze" not in news
            assert session_start(home, bob, "s3") == ""  # nothing changed since s2
            _check_mcp(home, bob, env, mark)
        finally:
            stop_daemon(daemon)
            # Alice's `remember` started her own daemon (it does with none up): stopped
            # here, not left idling for hours after the suite.
            run(alice, alice_env, "serve", "--stop")
    assert first_s < BOUND_S and second_s < BOUND_S
    if max(first_s, second_s) > GOAL_S:  # said, not failed: the bound is for busy machines
        print(f"over the {GOAL_S:.0f} s goal on this machine")
    assert not [x for x in log if "Traceback" in x or " ERROR " in x], "".join(log)[-3000:]


def _check_channels(home: Path, bob: Path, env: dict[str, str], note: Path, mark: str) -> None:
    """The file hook, `query` and `why`, text and JSON: each shows the mark."""
    proc = run_hook(home, file_json(bob / "deploy" / "release.sh", bob, "files-1"), "file")
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert f"{mark}  Release freeze on Fridays" in context and f"({note})" in context

    text = run(bob, env, "query", FREEZE_PROMPT, "-k", "1")
    assert text.returncode == 0, text.stderr
    assert f"{mark} Release freeze on Fridays — " in text.stdout and str(note) in text.stdout
    data = json.loads(run(bob, env, "query", FREEZE_PROMPT, "-k", "1", "--json").stdout)
    [row] = data["results"]
    assert data["via"] == "daemon" and row["path"] == str(note)
    assert (row["team"], row["author"]) == (True, "Alice Example")

    label = mark.removeprefix("note ")
    answers = json.loads(run(bob, env, "why", "-n", "20", "--json").stdout)
    assert any(a["team"] == {str(note): label} for a in answers if a["event"] == "prompt")
    assert any(a["team"] == {str(note): label} for a in answers if a["event"] == "file")
    why = run(bob, env, "why", "-n", "20")
    assert f"    {note}  {mark}" in why.stdout, why.stdout


def _check_mcp(home: Path, bob: Path, env: dict[str, str], mark: str) -> None:
    """MCP `recall` marks the note; MCP `remember` with scope team writes Bob's team folder."""
    from tests.test_mcp import session_calls, text_of

    calls: list[tuple[str, dict[str, Any]]] = [
        ("recall", {"query": FREEZE_PROMPT, "project": str(bob), "k": 2}),
        ("remember", {"text": "Tag releases vYYYY.MM.N.", "title": "Tags", "scope": "team"}),
        ("remember", {"text": "x", "scope": "everyone"}),
    ]
    out = asyncio.run(session_calls(env, bob, calls))
    recalled: dict[str, Any] = text_of(out[1][0])
    assert mark in recalled["injected"] and recalled["via"] == "daemon"
    top = recalled["records"][0]
    assert top["team"] is True and top["author"] == "Alice Example"
    saved = text_of(out[2][0])
    assert saved["path"] == str(bob / ".precedents" / "notes" / "tags.md") and saved["team"]
    assert saved["git_add"] == "git add .precedents/notes/tags.md"
    assert "Bob Builder" in (bob / ".precedents" / "notes" / "tags.md").read_text()
    assert out[3][0].is_error
