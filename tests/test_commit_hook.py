"""A decision commit through the real model, the real daemon and the real hook subprocess.

The repository is made with the real git CLI (tests/test_commit_index.py's
``shop``: a decision on retry.py, renamed since, then changed by a commit
without rationale); the index is built by the real indexer with the bundled
model; the hook runs as Claude Code runs it, with a PreToolUse stdin.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import env, file_json, run_hook, running_daemon  # noqa: E402

from .test_commit_index import LATER, shop  # noqa: E402
from .test_commits import git  # noqa: E402

pytest_plugins = ["tests.conftest_daemon"]


def test_the_real_hook_gives_the_decision_commit_on_read_after_a_rename(
    tmp_path: Path, embedder: Any
) -> None:
    from precedents.config import load_settings
    from precedents.ingest.indexer import Indexer
    from precedents.ingest.sources import configured_sources, walk
    from precedents.recall.core import Recall
    from precedents.store import Store

    repo, decided = shop(tmp_path)
    home = tmp_path / "state"
    with env(PRECEDENTS_HOME=str(home)):
        settings = load_settings(repos=[repo], discover_claude=False)
    store = Store(settings.index_dir, embedder.model_id, embedder.dimension)
    report = Indexer(settings, store, embedder).sync(walk(configured_sources(settings)))
    assert report.commits_indexed == 1 and report.chunks_embedded == 1
    # The prompt side ranks it with the real model like any record.
    recall = Recall(settings, embedder)
    try:
        hits = recall.rank("why does retry make three attempts?", str(repo), k=5)
        assert [h.record.kind for h in hits][:1] == ["commit"]
    finally:
        recall.close()
    with running_daemon(home):
        done = run_hook(home, file_json(repo / "src/net_retry.py", repo, "sess-a", "Read"), "file")
        assert done.returncode == 0 and done.stderr == b""
        context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        (line,) = [x for x in context.splitlines() if x.startswith("commit  ")]
        assert line.startswith(f"commit  {decided[:7]} ") and "rate-limits" in line
        later = git(repo, "rev-parse", "--short=7", "HEAD")
        assert line.endswith(f'({repo}@{decided[:12]}) · later changed by {later} "{LATER}"')
        again = run_hook(home, file_json(repo / "src/net_retry.py", repo, "sess-a", "Edit"), "file")
        assert again.returncode == 0 and again.stdout == b""  # given once per session
        other = run_hook(home, file_json(repo / "README.md", repo, "sess-b", "Read"), "file")
        assert b"commit  " not in other.stdout
