"""`mute` holds in every channel and every route, and `why` lists what was withheld
for it (issue #29, item 3).

A project with an ADR chain (0010 superseded by 0011) whose successor 0011 is
muted, a rule scoped to ``src/db/**`` and a rule that always applies, both
muted, and two team notes, one muted. Through each route — the prompt hook's
selection, the successor line, the file hook, SessionStart's lists, team news,
`query`, the MCP tools — nothing muted is delivered, and what each hook answer
withheld is named with its route.

Real parts: a git repository indexed by the real indexer with the bundled
model into a store in a temp dir; the daemon as a subprocess, the hook as
Claude Code runs it (``python -I -S launch.py``), the CLI as a subprocess, the
MCP server through the SDK's stdio client.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from precedents.config import Thresholds

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import (  # noqa: E402 - after the rewrite registration
    env,
    file_json,
    hook_env,
    prompt_json,
    run_cli,
    run_hook,
    running_daemon,
)

pytest_plugins = ["tests.conftest_daemon"]

ADR_DIR = "docs/adr"
OLD_ADR = "0010-store-user-sessions-in-mysql.md"
NEW_ADR = "0011-keep-user-sessions-in-redis.md"
ADRS = {
    OLD_ADR: (
        "# 10. Store user sessions in a MySQL table\n\nDate: 2021-03-02\n\n## Status\n\n"
        f"Superseded by [11. Keep user sessions in Redis]({NEW_ADR})\n\n## Decision\n\n"
        "Store user login sessions in a MySQL table, written by `src/db/sessions.py`.\n"
    ),
    NEW_ADR: (
        "# 11. Keep user sessions in Redis\n\nDate: 2022-06-14\n\n## Status\n\nAccepted\n\n"
        f"Supersedes [10. Store user sessions in a MySQL table]({OLD_ADR})\n\n## Decision\n\n"
        "Keep user login sessions in Redis with a TTL equal to the session lifetime.\n"
    ),
    "0012-deploy-the-web-tier-blue-green.md": (
        "# 12. Deploy the web tier blue-green\n\nDate: 2022-09-01\n\n## Status\n\nAccepted\n\n"
        "## Decision\n\nDeploy with two identical environments and switch the load balancer.\n"
    ),
}
DB_RULE = ".cursor/rules/db-access.mdc"
ALWAYS_RULE = ".cursor/rules/house-style.mdc"
KEPT_RULE = ".cursor/rules/commit-messages.mdc"
RULES = {
    DB_RULE: (
        "---\ndescription: Database access goes through the repository layer\n"
        "globs: src/db/**\nalwaysApply: false\n---\n# Database access\n\n"
        "All queries go through the repository layer; no raw SQL in handlers.\n"
    ),
    ALWAYS_RULE: (
        "---\ndescription: House style of every file\nalwaysApply: true\n---\n"
        "# House style\n\nTwo-space indentation everywhere.\n"
    ),
    KEPT_RULE: (
        "---\ndescription: Commit subjects in the imperative\nalwaysApply: true\n---\n"
        "# Commit messages\n\nWrite commit subjects in the imperative mood.\n"
    ),
}
MUTED_NOTE = ".precedents/notes/release-freeze-on-fridays.md"
KEPT_NOTE = ".precedents/notes/cache-warm-up.md"
NOTES = {
    MUTED_NOTE: (
        "---\nname: Release freeze on Fridays\ndescription: No deploys from Friday noon\n"
        "author: Alice Example\ncreated: 2026-11-20\n---\n"
        "Deploys freeze from Friday noon to Monday morning; hotfixes need two approvals.\n"
    ),
    KEPT_NOTE: (
        "---\nname: Cache warm-up\ndescription: Warm the product cache after a deploy\n"
        "author: Bob Example\ncreated: 2026-11-21\n---\n"
        "Run the cache warm-up job after every deploy before switching traffic.\n"
    ),
}
# Words of the muted records' text: none may reach the agent by any route.
MUTED_WORDS = ("Redis", "Release freeze", "repository layer", "House style")
ADR_PROMPT = "should user login sessions be stored in a MySQL table?"
NOTE_PROMPT = "can we deploy on a Friday afternoon, is there a release freeze?"
# Every record shown: the routes are what is tested, not the thresholds.
WIDE_OPEN = Thresholds(-1.0, -1.0, 9.0, 0.05)
WIDE_OPEN_TOML = """
[thresholds."sentence-transformers/all-MiniLM-L6-v2"]
min_top = -1.0
min_gap = -1.0
wide_gap = 9.0
near_top = 0.05
min_relevance = -1000.0
"""


@dataclass(frozen=True)
class Muted:
    """The project, its indexed state folder and the muted paths."""

    repo: Path
    home: Path
    claude: Path

    def path(self, rel: str) -> str:
        return str(self.repo / rel)

    @property
    def muted(self) -> dict[str, str]:
        """Each muted record's path, by what it is."""
        return {
            "successor": self.path(f"{ADR_DIR}/{NEW_ADR}"),
            "rule": self.path(DB_RULE),
            "always": self.path(ALWAYS_RULE),
            "team": self.path(MUTED_NOTE),
        }

    def settings(self) -> Any:
        from precedents.config import load_settings

        with env(PRECEDENTS_HOME=str(self.home), PRECEDENTS_CLAUDE_DIR=str(self.claude)):
            return load_settings()


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Muted:
    from precedents.ingest.indexer import Indexer
    from precedents.ingest.sources import Sources, configured_sources, walk
    from precedents.recall.mute import MuteList
    from precedents.store import Store

    root = tmp_path_factory.mktemp("mute")
    repo = root / "shop"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "dev@example.invalid")
    _git(repo, "config", "user.name", "Carol Example")
    for name, text in ADRS.items():
        _write(repo / ADR_DIR / name, text)
    for files in (RULES, NOTES):
        for rel, text in files.items():
            _write(repo / rel, text)
    _write(repo / "src/db/sessions.py", "def save(session):\n    return session\n")
    claude = root / "claude"
    claude.mkdir()
    made = Muted(repo, root / "state", claude)
    settings = made.settings()
    store = Store(settings.index_dir, embedder.model_id, embedder.dimension)  # type: ignore[attr-defined]
    report = Indexer(settings, store, embedder).sync(  # type: ignore[arg-type]
        walk(configured_sources(settings, Sources(project=str(repo))))
    )
    assert report.files_indexed >= 8, report.to_json()
    for path in made.muted.values():
        MuteList(made.home).mute(path)
    return made


@pytest.fixture
def recall(state: Muted, embedder: Any) -> Iterator[Any]:
    """The daemon's code path in-process, every record above the thresholds."""
    from precedents.recall import Recall

    settings = replace(state.settings(), thresholds={embedder.model_id: WIDE_OPEN})  # type: ignore[attr-defined]
    found = Recall(settings, embedder)  # type: ignore[arg-type]
    try:
        yield found
    finally:
        found.close()


def routes(answer: Any) -> dict[str, str]:
    return dict(answer.muted)


def assert_nothing_muted(state: Muted, text: str | None) -> None:
    """No muted record's path or words in ``text``."""
    text = text or ""
    for path in state.muted.values():
        assert path not in text, text
    for words in MUTED_WORDS:
        assert words not in text, text


def line_of(text: str, path: str) -> str:
    return next(line for line in text.splitlines() if line.endswith(f"({path})"))


def test_the_prompt_hook_gives_nothing_muted_and_says_what_it_withheld(
    state: Muted, recall: Any
) -> None:
    answer = recall.context(ADR_PROMPT, str(state.repo), session="s1")
    assert answer.context is not None
    assert_nothing_muted(state, answer.context)
    # The replaced ADR keeps its mark, which names the muted successor by id only.
    old = line_of(answer.context, state.path(f"{ADR_DIR}/{OLD_ADR}"))
    assert old.startswith("⚠️superseded → ADR-0011 (muted) adr"), old
    withheld = routes(answer)
    assert withheld.get(state.muted["successor"]) in ("prompt", "successor"), withheld
    logged = answer.log_fields()["muted"]
    assert {"path": state.muted["successor"], "route": withheld[state.muted["successor"]]} in logged

    note = recall.context(NOTE_PROMPT, str(state.repo), session="s2")
    assert_nothing_muted(state, note.context)
    assert routes(note).get(state.muted["team"]) == "prompt", note.muted
    assert note.context is not None and state.path(KEPT_NOTE) in note.context


def test_the_file_hook_gives_nothing_muted_and_names_the_route(state: Muted, recall: Any) -> None:
    answer = recall.file_context(str(state.repo), "src/db/sessions.py", session="f1")
    assert answer.context is not None
    assert_nothing_muted(state, answer.context)
    old = line_of(answer.context, state.path(f"{ADR_DIR}/{OLD_ADR}"))
    assert "ADR-0011 (muted)" in old
    # The scoped rule by the file route; the ADR that replaced the one naming the file
    # would have come as its successor's line.
    assert routes(answer) == {
        state.muted["rule"]: "file",
        state.muted["successor"]: "successor",
    }


def test_session_start_lists_nothing_muted(state: Muted, recall: Any) -> None:
    from precedents.ingest.sources import project_root

    # The project's last session saw no team note: both are news now.
    root = project_root(str(state.repo))
    (state.home / "team-seen.json").write_text(json.dumps({root: {}}))
    answer = recall.session_answer(str(state.repo), session="st1")
    text = answer.context
    assert text is not None
    assert_nothing_muted(state, text)
    assert "Commit subjects" in text  # the rule that always applies and is not muted
    assert "Cache warm-up" in text and "1 team note changed" in text  # the other news
    assert "- 0012 Deploy the web tier blue-green" in text  # the live ADR not muted
    assert "Keep user sessions" not in text
    assert routes(answer) == {
        state.muted["always"]: "always-rule",
        state.muted["successor"]: "live-adr",
        state.muted["team"]: "team-news",
    }
    assert recall.session_context(str(state.repo), session="st2") is not None


def test_query_ranks_a_muted_record_as_its_path_only(state: Muted, recall: Any) -> None:
    rows = recall.query(ADR_PROMPT, str(state.repo), 10)["results"]
    by_path = {r["path"]: r for r in rows}
    muted = by_path[state.muted["successor"]]  # it still ranks
    assert muted["muted"] is True and muted["kind"] == "adr"
    assert muted["name"] == muted["description"] == muted["adr_id"] == ""
    old = by_path[state.path(f"{ADR_DIR}/{OLD_ADR}")]
    assert old["mark"] == "⚠️superseded → ADR-0011 (muted)" and "muted" not in old
    assert "Redis" not in json.dumps(rows)


async def _mcp(state: Muted, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    from tests.test_mcp import session_calls, text_of

    environment = hook_env(state.home, PRECEDENTS_CLAUDE_DIR=str(state.claude))
    out = await session_calls(environment, state.repo, calls)
    results = [r for r, _ in out[1:]]
    for result in results:
        assert not result.is_error, result
    return [text_of(r) for r in results]


@pytest.mark.slow
def test_through_the_real_daemon_hooks_cli_and_mcp(state: Muted, tmp_path: Path) -> None:
    home = tmp_path / "state"
    shutil.copytree(state.home / "index", home / "index")
    shutil.copy(state.home / "muted.json", home / "muted.json")
    (home / "config.toml").write_text(WIDE_OPEN_TOML)
    mine = Muted(state.repo, home, state.claude)
    repo = state.repo
    adr_dir = str(repo / ADR_DIR)
    with running_daemon(home):
        prompt = run_hook(home, prompt_json(ADR_PROMPT, repo), "prompt", cwd=repo)
        assert prompt.returncode == 0 and prompt.stdout, prompt.stderr
        context = json.loads(prompt.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "ADR-0011 (muted)" in context
        assert_nothing_muted(mine, context)

        session = f"mute-{uuid.uuid4()}"
        touched = run_hook(
            home, file_json(repo / "src/db/sessions.py", repo, session), "file", cwd=repo
        )
        assert touched.returncode == 0 and touched.stdout, touched.stderr
        assert_nothing_muted(mine, touched.stdout.decode())

        why = run_cli(home, repo, "why", "--json", "-n", "5")
        assert why.returncode == 0, why.stderr
        answers = json.loads(why.stdout)
        by_event = {a["event"]: a for a in answers}
        file_routes = {m["path"]: m["route"] for m in by_event["file"]["muted"]}
        assert file_routes == {mine.muted["rule"]: "file", mine.muted["successor"]: "successor"}
        prompt_routes = {m["path"]: m["route"] for m in by_event["prompt"]["muted"]}
        assert prompt_routes.get(mine.muted["successor"]) in ("prompt", "successor")
        text = run_cli(home, repo, "why", "-n", "2").stdout
        assert f"{mine.muted['rule']}  (muted: would have come by file; " in text, text
        assert "(muted: would have come by successor; `precedents unmute`" in text, text

        listed = run_cli(home, repo, "query", ADR_PROMPT, "-k", "5")
        assert listed.returncode == 0, listed.stderr
        line = next(x for x in listed.stdout.splitlines() if NEW_ADR in x)
        assert "(muted)" in line and "Redis" not in listed.stdout

        recalled, status, chain, found = asyncio.run(
            _mcp(
                mine,
                [
                    ("recall", {"query": ADR_PROMPT, "project": str(repo), "k": 5}),
                    ("adr_status", {"id": "11", "dir": adr_dir}),
                    ("adr_chain", {"id": "10", "dir": adr_dir}),
                    ("adr_find", {"words": "sessions", "dir": adr_dir}),
                ],
            )
        )
    assert recalled["via"] == "daemon"
    assert_nothing_muted(mine, recalled["injected"])
    assert "Redis" not in json.dumps(recalled["records"])
    assert status["muted"] is True and status["status"] == "live" and status["title"] == ""
    current = chain["sources"][chain["current"]]
    assert current["muted"] is True and current["lines"] == [] and current["title"] == ""
    # Only the muted record's own words are withheld: 0010's text names its successor.
    assert "Redis" not in json.dumps(current) and chain["sources"][chain["history"][0]]["lines"]
    old = next(r for r in found if r["path"] == OLD_ADR)
    assert old["mark"] == "⚠️superseded → ADR-0011 (muted)" and old["title"]
    new = next(r for r in found if r["path"] == NEW_ADR)
    assert new["muted"] is True and "Redis" not in json.dumps(new)


def test_unmuted_the_successor_comes_back_with_its_line(state: Muted, recall: Any) -> None:
    from precedents.recall.mute import MuteList

    successor = state.muted["successor"]
    MuteList(state.home).unmute(successor)
    try:
        answer = recall.file_context(str(state.repo), "src/db/sessions.py", session="u1")
    finally:
        MuteList(state.home).mute(successor)
    assert answer.context is not None and successor in answer.context  # its own line again
    old = line_of(answer.context, state.path(f"{ADR_DIR}/{OLD_ADR}"))
    assert old.startswith("⚠️superseded → ADR-0011 adr"), old
    assert routes(answer) == {state.muted["rule"]: "file"}


def test_a_mark_names_a_muted_successor_by_its_id_only() -> None:
    from precedents.recall.mute import name_muted

    mark = "⚠️superseded → ADR-0011, ADR-0012; ⚠️duplicate id → also docs/x/0010.md"
    assert name_muted(mark, ["ADR-0012"]) == (
        "⚠️superseded → ADR-0011, ADR-0012 (muted); ⚠️duplicate id → also docs/x/0010.md"
    )
    assert name_muted("⚠️superseded → ADR-0011", ["ADR-001"]) == "⚠️superseded → ADR-0011"
    assert name_muted("△partially superseded → auth", ["auth"]) == (
        "△partially superseded → auth (muted)"
    )


def test_a_muted_chat_that_amended_a_record_is_neither_shown_nor_named() -> None:
    from precedents.recall.amendments import Amended, Amendments
    from precedents.recall.marks import AdrMarks
    from precedents.store import DocumentRecord

    note = DocumentRecord("note", "/p", "/p/notes/cap.md", "Upload cap", "10 MB")
    chat = DocumentRecord("conversation", "/p", "/p/logs/s.jsonl", "Raise the upload cap to 50 MB")
    marks = AdrMarks(None)
    marks.amendments = Amendments({note.path: Amended(chat, "2026-04-12")})
    assert marks.mark_for(note) == "⚠️amended 2026-04-12 → Raise the upload cap to 50 MB"
    assert marks.successors_for(note) == [chat] and marks.muted_successors(note) == []
    marks.muted = lambda: frozenset({chat.path})
    assert marks.mark_for(note) == "⚠️amended 2026-04-12 → a muted conversation"
    assert marks.successors_for(note) == [] and marks.muted_successors(note) == [chat.path]
