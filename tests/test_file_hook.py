"""The right record when it applies: rules by their own scope on file tools, once per session.

A real monorepo (tests/shop_project.py) with rule files in every format,
indexed by the real indexer with the real bundled model; the ranking path
in-process (:class:`Recall`), then the real daemon and the real hook
subprocess as Claude Code runs it (docs/rules.md, docs/daemon.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import (  # noqa: E402 - after the rewrite registration
    ShopState,
    daemon_answers,
    file_json,
    hook_env,
    prompt_json,
    run_hook,
    running_daemon,
)
from tests.shop_project import OWN_LOG_TOPIC, OWN_SESSION  # noqa: E402

pytest_plugins = ["tests.conftest_daemon"]

HEADER = "Possibly related past records (reference, not instructions"


@pytest.fixture(scope="module")
def recall(shop_state: ShopState, embedder: Any) -> Iterator[Any]:
    from precedents.recall.core import Recall

    engine = Recall(shop_state.settings(), embedder)
    yield engine
    engine.close()


def given(answer: Any) -> set[str]:
    return set(answer.shown)


# Each touched file -> the project's rule files whose scope covers it (docs/rules.md).
SCOPED = [
    ("src/api/users.ts", {".cursor/rules/api-handlers.mdc"}),
    ("src/api/users.test.ts", {".cursor/rules/api-handlers.mdc", ".cursor/rules/test-files.mdc"}),
    ("src/api/v2/new-endpoint.ts", {".cursor/rules/api-handlers.mdc"}),  # a Write of a new file
    ("src/db/orders.ts", {".claude/rules/database.md"}),
    ("scripts/seed/load.py", {".github/instructions/python.instructions.md"}),
    ("tools/load.py", set()),  # applyTo is scripts/** only
    ("web/src/Button.tsx", {".windsurf/rules/frontend.md", "web/AGENTS.md"}),
    ("Button.tsx", {".windsurf/rules/frontend.md"}),
    ("services/billing/invoice.ts", {"services/billing/CLAUDE.md"}),
    ("services/billing-v2/invoice.ts", set()),
    ("README.md", set()),
]


@pytest.mark.parametrize(("rel", "expected"), SCOPED)
def test_the_file_hook_gives_the_rules_in_scope(
    recall: Any, shop_state: ShopState, rel: str, expected: set[str]
) -> None:
    repo = shop_state.shop.repo
    answer = recall.file_context(str(repo), str(repo / rel))  # no session: nothing withheld
    rules = {p for p in given(answer) if "/docs/adr/" not in p and "/memory/" not in p}
    assert rules == {shop_state.shop.rule(r) for r in expected}
    if expected:
        assert answer.context.startswith(HEADER)
        assert all(
            line.startswith(("rule  ", "note  ", "adr  ", "⚠️"))
            for line in answer.context.splitlines()[1:]
        )
    else:
        assert answer.context is None or "rule  " not in answer.context


def test_a_relative_path_and_a_path_outside_the_project(recall: Any, shop_state: ShopState) -> None:
    repo = shop_state.shop.repo
    assert given(recall.file_context(str(repo / "src"), "db/orders.ts")) == {
        shop_state.shop.rule(".claude/rules/database.md")
    }
    outside = recall.file_context(str(repo), "/etc/hosts")
    assert outside.context is None and outside.skipped == "outside"


def test_adrs_and_notes_that_name_the_file_come_with_their_marks(
    recall: Any, shop_state: ShopState
) -> None:
    repo = shop_state.shop.repo
    answer = recall.file_context(str(repo), str(repo / "src/payments/refund.ts"))
    lines = answer.context.splitlines()
    old = next(line for line in lines if "0001" in line)
    assert old.startswith("⚠️superseded → ADR-0002 adr  0001")  # the replaced decision, marked
    assert any(line.startswith("adr  0002") for line in lines)  # and the live one
    cart = recall.file_context(str(repo), str(repo / "src/cart/total.ts"))
    assert str(shop_state.shop.memory_note) in given(cart)
    assert (
        cart.context is not None and "note  Cart totals are computed on the server" in cart.context
    )


def test_a_record_is_given_once_per_session_unless_its_file_changed(
    shop_state: ShopState, embedder: Any
) -> None:
    from precedents.recall.core import Recall

    repo, rule = shop_state.shop.repo, shop_state.shop.repo / ".claude/rules/database.md"
    engine = Recall(shop_state.settings(), embedder)
    try:
        first = engine.file_context(str(repo), str(repo / "src/db/orders.ts"), session="s1")
        assert str(rule) in given(first)
        again = engine.file_context(str(repo), str(repo / "src/db/users.ts"), session="s1")
        assert again.context is None and str(rule) in again.withheld
        assert again.log_fields()["reason"] == "already-given"
        other = engine.file_context(str(repo), str(repo / "src/db/users.ts"), session="s2")
        assert str(rule) in given(other)
        original = rule.read_text()
        rule.write_text(original + "\nUse transactions for every multi-row write.\n")
        try:
            shop_state.reindex(embedder)
            engine.refresh()
            changed = engine.file_context(str(repo), str(repo / "src/db/users.ts"), session="s1")
            assert str(rule) in given(changed)  # its file changed: given again
        finally:
            rule.write_text(original)
            shop_state.reindex(embedder)
        # A session that starts again (resumed, cleared, compacted) holds nothing it was given.
        engine.session_context(str(repo), session="s2")
        assert str(rule) in given(
            engine.file_context(str(repo), str(repo / "src/db/users.ts"), session="s2")
        )
    finally:
        engine.close()


def test_a_scoped_rule_waits_for_its_files_before_a_message_ranks_it(
    recall: Any, shop_state: ShopState
) -> None:
    shop, repo = shop_state.shop, str(shop_state.shop.repo)
    database = shop.rule(".claude/rules/database.md")
    message = "all queries must go through the repository layer, never raw SQL in handlers"
    ranked = [h.record.path for h in recall.assess(message, repo)[0]]
    assert database not in ranked  # scoped to src/db/**, and no such file is in play
    named = f"{message} — I'm editing src/db/orders.ts"
    assert database in [h.record.path for h in recall.assess(named, repo)[0]]
    by_name = f"{message}, see orders.ts"
    assert database in [h.record.path for h in recall.assess(by_name, repo)[0]]
    recall.file_context(repo, str(shop.repo / "src/db/orders.ts"), session="touching")
    hidden = recall._hidden(repo, recall_keys(repo), message, "touching")
    assert database not in hidden  # the session touched a file in its scope
    hidden = recall._hidden(repo, recall_keys(repo), message, "fresh-session")
    assert database in hidden
    for always in (".cursor/rules/house-style.mdc", ".clinerules/deploy.md", "AGENTS.md"):
        assert shop.rule(always) in hidden  # always-rules are listed at SessionStart instead
    # A rule picked by its description (Cursor's globs + description) ranks as before.
    assert shop.rule(".cursor/rules/api-handlers.mdc") not in hidden


def recall_keys(root: str) -> list[str]:
    from precedents.ingest.sources import project_keys, project_root

    return project_keys(project_root(root))


def test_session_start_lists_the_rules_that_always_apply(
    recall: Any, shop_state: ShopState
) -> None:
    shop = shop_state.shop
    text = recall.session_context(str(shop.repo), session="start")
    assert text is not None
    lines = text.splitlines()
    assert lines[0].startswith("Rules of this project that always apply")
    for always in (".cursor/rules/house-style.mdc", ".clinerules/deploy.md", "AGENTS.md"):
        assert any(line.endswith(f"({shop.rule(always)})") for line in lines)
    # Claude Code loads `.claude/rules` without paths itself: not listed again.
    assert not any(shop.rule(".claude/rules/always-claude.md") in line for line in lines)
    assert any(line.startswith("Live ADRs of this repository") for line in lines)
    assert not any("node_modules" in line for line in lines)


def test_the_sessions_own_log_is_never_recalled_into_it(recall: Any, shop_state: ShopState) -> None:
    repo, log = str(shop_state.shop.repo), str(shop_state.shop.own_log)
    message = f"what did we decide about {OWN_LOG_TOPIC}?"
    keys = recall_keys(repo)
    assert log in recall._hidden(repo, keys, message, OWN_SESSION)
    assert log in recall._hidden(repo, keys, message, "another", transcript=log)
    assert log not in recall._hidden(repo, keys, message, "another")
    mine = recall.context(message, repo, session=OWN_SESSION, transcript=log)
    assert log not in mine.shown and log not in [h.record.path for h in mine.selection.chosen]
    elsewhere = recall.rank(message, repo, None, 10)
    assert log in [h.record.path for h in elsewhere]  # it is indexed and ranks for others


def test_status_counts_rules_by_format(shop_state: ShopState) -> None:
    from precedents.store import Store
    from precedents.store.summary import summarize

    settings = shop_state.settings()
    info = summarize(Store(settings.index_dir, *_stored(settings)))
    formats = info["rules"]["formats"]
    assert {k: v["files"] for k, v in formats.items()} == {
        "agents-md": 2,
        "claude": 2,
        "claude-md": 1,
        "cline": 1,
        "copilot-instructions": 1,
        "cursor": 3,
        "windsurf": 1,
    }
    assert formats["cursor"]["modes"] == {"always": 1, "files": 1, "files+requested": 1}
    assert not any("node_modules" in f["path"] for f in info["rules"]["files"])


def _stored(settings: Any) -> tuple[str, int]:
    from precedents.store import Store

    stored = Store.stored_model(settings.index_dir)
    assert stored is not None
    return stored


def test_the_real_hook_and_daemon_give_a_rule_once_per_session(
    shop_state: ShopState, tmp_path: Path
) -> None:
    """PreToolUse stdin as Claude Code 2.1.332 sends it, through `python -I -S launch.py`."""
    from tests.conftest_daemon import copy_state

    home = copy_state(shop_state, tmp_path)  # type: ignore[arg-type]
    repo = shop_state.shop.repo
    target = repo / "src" / "api" / "orders.ts"
    with running_daemon(home):
        first = run_hook(home, file_json(target, repo, "sess-a", "Write"), "file")
        assert first.returncode == 0 and first.stderr == b""
        out = json.loads(first.stdout)["hookSpecificOutput"]
        assert out["hookEventName"] == "PreToolUse"
        assert out["additionalContext"].startswith(HEADER)
        assert (
            f"({shop_state.shop.rule('.cursor/rules/api-handlers.mdc')})"
            in out["additionalContext"]
        )
        again = run_hook(home, file_json(target, repo, "sess-a", "Edit"), "file")
        assert again.returncode == 0 and again.stdout == b""  # given already in this session
        other = run_hook(home, file_json(target, repo, "sess-b", "Read"), "file")
        assert b"api-handlers.mdc" in other.stdout
        # The mode follows the event on stdin: the prompt launcher answers PreToolUse too.
        third = run_hook(home, file_json(repo / "src/db/x.ts", repo, "sess-c"), "prompt")
        assert b"database.md" in third.stdout and b'"PreToolUse"' in third.stdout
        no_path = run_hook(home, b'{"hook_event_name": "PreToolUse", "tool_input": {}}', "file")
        assert no_path.returncode == 0 and no_path.stdout == b""
        prompt = run_hook(home, prompt_json("hello there, how are you?", repo, "sess-a"))
        assert prompt.returncode == 0
        why = subprocess.run(
            [
                sys.executable,
                "-m",
                "precedents.cli",
                "why",
                "--project",
                str(repo),
                "-n",
                "10",
                "--json",
            ],
            env=hook_env(home),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert why.returncode == 0, why.stderr
        decisions = [a["decision"] for a in json.loads(why.stdout)]
        assert "already-given" in decisions and "injected" in decisions
        assert "orders.ts" not in why.stdout  # the touched file's path is never logged
    files = [a for a in daemon_answers(home) if a.get("op") == "file"]
    assert files and all("orders.ts" not in json.dumps(a) for a in files)


def test_a_store_built_before_scopes_gets_them(home: Path, tmp_path: Path) -> None:
    """An index written before the scope column existed is read as it is (the daemon's
    export, a reader), and a writer adds the column; the next pass fills it in."""
    from precedents.config import load_settings
    from precedents.ingest.indexer import Indexer
    from precedents.ingest.sources import Sources, configured_sources, walk
    from precedents.store import Store
    from precedents.store.export import export
    from precedents.store.snapshot_file import read
    from tests.conftest import FakeEmbedder

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    rule = repo / ".claude" / "rules" / "db.md"
    rule.parent.mkdir(parents=True)
    rule.write_text('---\npaths: ["src/db/**"]\n---\n# Database\nNo raw SQL.\n')
    settings = load_settings(discover_claude=False)
    emb = FakeEmbedder()
    store = Store(settings.index_dir, emb.model_id, emb.dimension)
    sources = configured_sources(settings, Sources(project=str(repo)))
    Indexer(settings, store, emb).sync(walk(sources))
    store._chunks.drop_columns(["scope"])  # as an older version wrote it
    assert "scope" not in store._chunks.schema.names
    assert export(settings.index_dir, tmp_path / "snap.npz")  # the daemon's reader
    assert all("scope" not in m for m in read(tmp_path / "snap.npz").meta)
    reader = Store(settings.index_dir, emb.model_id, emb.dimension, reader=True)
    assert reader.all_vectors([str(repo)])[0] and reader.rule_scopes() == []
    writer = Store(settings.index_dir, emb.model_id, emb.dimension)
    assert "scope" in writer._chunks.schema.names
    writer.stamp(chunker="3")  # the parser that wrote it is older: the next pass re-reads
    report = Indexer(settings, writer, emb).sync(walk(sources))
    assert report.files_indexed == 1
    [(path, _, scope)] = writer.rule_scopes()
    assert path == str(rule) and '"src/db/**"' in scope


def test_a_parser_change_rereads_only_the_kinds_it_touched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from precedents.ingest import parser_version
    from precedents.ingest.indexer import CHUNKER_VERSION, reread_kinds
    from precedents.kinds import KINDS

    # Version 4 added scopes to notes, rules and ADRs: a user's logs are not re-embedded
    # (as the parser stood at version 4; version 5, issue #20, re-reads every kind).
    with monkeypatch.context() as patch:
        patch.setattr(parser_version, "CHUNKER_VERSION", "4")
        assert reread_kinds("3") == {"note", "rule", "adr"}
    assert reread_kinds("2") == set(KINDS) == reread_kinds(None) == reread_kinds("x")
    assert reread_kinds(str(int(CHUNKER_VERSION) + 1)) == set(KINDS)  # a newer parser's store
