"""The real client: Claude Code runs the installed hook, and the note reaches the model's request.

Claude Code is installed from npm once into ~/.cache/precedents-test (or
``PRECEDENTS_TEST_CACHE``), pointed at a small fake Messages API on 127.0.0.1
(tests/claude_api_stub.py) that records request bodies and streams a one-word
reply. Skipped only where node/npm are missing.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from precedents.hook.install import install
from tests import claude_api_stub
from tests.claude_api_stub import CACHE, CLAUDE_CODE_VERSION, StubApi, ToolUse, hook_context

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import (  # noqa: E402 - after the rewrite registration
    RELATED,
    RELATED_HEADLINE,
    RELATED_NOTE,
    DevState,
    ShopState,
    hook_env,
)

# The session index of the dev notes and the daemon over it (shared with the other modules).
pytest_plugins = ["tests.conftest_daemon"]

CONTEXT_MARK = "UserPromptSubmit hook additional context:"
# Lets the file tools run in `-p` mode, as root too (docs/claude-code-hooks-probe.md).
TOOLS = ("--allowedTools", "Read,Edit,Write")


@pytest.fixture(scope="module")
def claude_bin() -> Path:
    npm = shutil.which("npm")
    if not shutil.which("node") or not npm:
        pytest.skip("node/npm are not installed: cannot install Claude Code")
    folder = CACHE / f"claude-code-{CLAUDE_CODE_VERSION}"
    exe = folder / "node_modules" / ".bin" / "claude"
    if not exe.exists():
        folder.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [
                npm,
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefix",
                str(folder),
                f"@anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert proc.returncode == 0 and exe.exists(), f"npm install failed: {proc.stderr[-2000:]}"
    return exe


@pytest.fixture
def fake_api() -> Iterator[tuple[str, list[str]]]:
    with StubApi() as api:
        yield api.url, api.bodies


def claude_env(home: Path, tmp_path: Path, api_url: str, **extra: str) -> dict[str, str]:
    """Claude Code's environment in a test: a private home and config folder, the
    stand-in Messages API, no telemetry or updates, the hook pointed at ``home``."""
    return claude_api_stub.claude_env(
        tmp_path,
        api_url,
        base=hook_env(home),
        # Wiring, not speed, is tested here: the CI box may be busy.
        PRECEDENTS_HOOK_BUDGET_MS="5000",
        **extra,
    )


def run_claude(exe: Path, project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``claude -p RELATED`` in ``project``, one turn."""
    return subprocess.run(
        [str(exe), "-p", RELATED, "--max-turns", "1"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


@pytest.mark.slow
def test_claude_code_sends_the_injected_note(
    tmp_path: Path,
    claude_bin: Path,
    fake_api: tuple[str, list[str]],
    dev_state: DevState,
    dev_daemon: Any,
) -> None:
    url, bodies = fake_api
    project = dev_state.project
    settings_file = project / ".claude" / "settings.json"
    report = install(settings_file, claude=str(claude_bin))
    try:
        assert report.exec_form  # this Claude Code takes `args`
        proc = run_claude(claude_bin, project, claude_env(dev_state.home, tmp_path, url))
    finally:
        install(settings_file, uninstall=True)
    messages = [b for b in bodies if CONTEXT_MARK in b]
    assert messages, (
        f"no request carried the hook's context; exit {proc.returncode}, "
        f"stdout {proc.stdout[-500:]!r}, stderr {proc.stderr[-1500:]!r}, {len(bodies)} requests"
    )
    body = messages[-1]
    assert RELATED_HEADLINE in body and RELATED_NOTE in body
    assert proc.returncode == 0, proc.stderr[-1500:]


@pytest.mark.slow
def test_claude_code_sends_the_rules_of_the_file_a_tool_touches(
    tmp_path: Path, claude_bin: Path, shop_state: ShopState
) -> None:
    """PreToolUse on a Write of a NEW file and on a Read: each tool's next request carries
    the rule scoped to that file; the same rule is not sent twice in the session."""
    from tests.conftest_daemon import copy_state, running_daemon

    home = copy_state(shop_state, tmp_path)  # type: ignore[arg-type]
    repo = shop_state.shop.repo
    new_file = repo / "src" / "api" / "refunds.ts"
    turns = [
        ToolUse("Write", {"file_path": str(new_file), "content": "export {};\n"}),
        ToolUse("Read", {"file_path": str(repo / "src" / "db" / "orders.ts")}),
        ToolUse("Read", {"file_path": str(repo / "src" / "api" / "users.ts")}),
    ]
    settings_file = repo / ".claude" / "settings.local.json"
    report = install(settings_file, claude=str(claude_bin))
    assert "PreToolUse" in report.added
    try:
        with running_daemon(home), StubApi(turns) as api:
            proc = subprocess.run(
                [str(claude_bin), "-p", "add a refunds endpoint", "--max-turns", "5", *TOOLS],
                cwd=repo,
                env=claude_env(home, tmp_path, api.url),
                capture_output=True,
                text=True,
                timeout=180,
                check=False,
            )
            bodies = [r.body for r in api.main_requests()]
    finally:
        install(settings_file, uninstall=True)
        new_file.unlink(missing_ok=True)
    assert proc.returncode == 0, proc.stderr[-1500:]
    last = bodies[-1]
    write = hook_context(last, "PreToolUse", "Write")
    assert write and write[0].startswith("Possibly related past records"), bodies[-1][-3000:]
    assert shop_state.shop.rule(".cursor/rules/api-handlers.mdc") in write[0]
    read = hook_context(last, "PreToolUse", "Read")
    assert any(shop_state.shop.rule(".claude/rules/database.md") in r for r in read)
    # The third tool touched another file under src/api/: its rule was given already.
    assert sum(shop_state.shop.rule(".cursor/rules/api-handlers.mdc") in t for t in read) == 0


@pytest.mark.slow
def test_claude_code_sends_a_teammates_team_note(
    tmp_path: Path, claude_bin: Path, fake_api: tuple[str, list[str]], embedder: Any
) -> None:
    """Alice writes a team note (`remember --team`'s library call), commits and pushes; Bob
    pulls, his index takes it in, and the context Claude Code sends the model from Bob's
    clone carries it with its `team` mark: the prompt hook's headline, and SessionStart's
    count of the repository's team notes."""
    import time

    from precedents.ingest.indexer import Indexer
    from precedents.ingest.promote import save_team
    from precedents.ingest.sources import Sources, configured_sources, walk
    from precedents.store import Store
    from tests.conftest_daemon import running_daemon, settings_for
    from tests.team_repos import commit_and_push, git, team_repos
    from tests.test_team_notes import FREEZE, FREEZE_PROMPT

    url, bodies = fake_api
    _, alice, bob = team_repos(tmp_path)
    home = tmp_path / "bob-state"
    settings = settings_for(home)
    saved = save_team(settings, FREEZE, "Release freeze on Fridays", str(alice))
    commit_and_push(alice, str(saved.to_json(cwd=alice)["git_add"]), "Team note")
    git(bob, "pull", "-q", "--ff-only", "origin", "main")
    store = Store(settings.index_dir, embedder.model_id, embedder.dimension)
    found = configured_sources(settings, Sources(project=str(bob)))
    assert Indexer(settings, store, embedder).sync(walk(found)).files_indexed == 1
    settings_file = bob / ".claude" / "settings.local.json"
    install(settings_file, claude=str(claude_bin))
    try:
        with running_daemon(home):
            proc = subprocess.run(
                [str(claude_bin), "-p", FREEZE_PROMPT, "--max-turns", "1"],
                cwd=bob,
                env=claude_env(home, tmp_path, url),
                capture_output=True,
                text=True,
                timeout=180,
                check=False,
            )
    finally:
        install(settings_file, uninstall=True)
    assert proc.returncode == 0, proc.stderr[-1500:]
    messages = [b for b in bodies if CONTEXT_MARK in b]
    assert messages, f"no request carried the hook's context; {len(bodies)} requests"
    [prompt] = hook_context(messages[-1], "UserPromptSubmit")
    note = bob / ".precedents" / "notes" / "release_freeze_on_fridays.md"
    mark = f"note (team, Alice Example, {time.strftime('%Y-%m-%d')})  Release freeze on Fridays"
    assert mark in prompt and f"({note})" in prompt, prompt[:1500]
    [start] = hook_context(messages[-1], "SessionStart")
    assert start.startswith("This repository shares 1 team note (reference"), start[:500]
