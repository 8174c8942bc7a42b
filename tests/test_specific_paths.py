"""A note's named paths attach it to a file only when they are specific (issue #28).

A note that names 28 common paths (README.md, src/, tests/ ...) must not ride
along on every file the agent touches. Real parts: a git repository made here,
the real indexer and store, the real bundled model, the file hook's ranking path
in-process (:class:`Recall`), which the daemon serves (tests/test_file_hook.py
runs the same path through the real daemon and hook).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from precedents.config import load_settings
from precedents.ingest.indexer import Indexer
from precedents.ingest.sources import Sources, configured_sources, walk
from precedents.ingest.specific import Tree, Trees, specific
from precedents.recall.core import Recall
from precedents.rules.scope import Scope, named_scope
from precedents.store import Store
from tests.team_repos import GIT_ENV

COMMON = [
    "README.md", "src/shop/", "src/payments/", "tests/conftest.py", "docs/README.md",
    "package.json", "Makefile", ".gitignore", "setup.py", "pyproject.toml", "LICENSE",
    "CONTRIBUTING.md", "CHANGELOG.md", "lib/utils/", "scripts/build.sh", "bin/run", "index.js",
    "main.py", "app.py", "requirements.txt", "Dockerfile", "docker-compose.yml",
    ".github/workflows/", "tsconfig.json", "__init__.py", "conftest.py", "utils.py", "setup.cfg",
]  # fmt: skip
TREE = [
    "README.md", "Makefile", "setup.py", "pyproject.toml", "LICENSE", "Dockerfile",
    *[f"src/shop/mod{i}.py" for i in range(30)], *[f"src/shop/{n}/__init__.py" for n in "abcde"],
    "src/payments/refund.py", "src/payments/capture.py", "src/payments/__init__.py",
    *[f"tests/test_{i}.py" for i in range(20)], "tests/conftest.py",
    *[f"docs/page{i}.md" for i in range(8)], "docs/README.md",
]  # fmt: skip


def repo_with(tmp_path: Path, notes: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    for rel in TREE:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("x = 1\n")
    for name, text in notes.items():
        path = repo / ".precedents" / "notes" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    env = {**os.environ, **GIT_ENV}
    who = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]
    for args in (["init", "-q"], ["add", "-A"], [*who, "commit", "-qm", "tree"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env)
    return repo


def test_a_tree_counts_files_by_tail_and_folders_by_run() -> None:
    tree = Tree.of(TREE)
    assert tree.files == len(TREE)
    assert tree.count("README.md") == 2  # the root's and docs/'s: a tail
    assert tree.count("src/") == 38 and tree.count("shop/") == 35
    assert tree.count("src/payments/refund.py") == 1
    assert tree.count("/home/me/repo/src/payments/refund.py") == 1  # absolute, ending in it
    assert tree.count("src/payments") == 3  # a folder named as a path of two parts
    assert tree.count("nothing/here.py") == 0


def test_broad_paths_are_dropped_and_a_record_naming_everything_keeps_none() -> None:
    tree = Tree.of(TREE)
    scope = named_scope("Refunds go through src/payments/refund.py; see tests/ and README.md.")
    kept = specific(scope, tree)
    assert set(kept.mentions) == {"src/payments/refund.py", "README.md"}  # tests/ is 21 of 71
    sweeping = specific(Scope(mentions=tuple(COMMON)), tree)
    assert "src/shop/" not in sweeping.mentions and "README.md" in sweeping.mentions
    many = tuple(f"src/shop/mod{i}.py" for i in range(30))  # each specific, together 40%
    assert specific(Scope(mentions=many), tree).mentions == ()
    assert specific(Scope(mentions=many[:10]), tree).mentions == many[:10]
    assert specific(scope, None) == scope  # nothing to count against: left as it is
    assert specific(Scope(mentions=("new/file.py",)), tree).mentions == ("new/file.py",)


def test_a_note_naming_every_common_path_is_not_given_on_every_touch(
    home: Path, tmp_path: Path, embedder: Any
) -> None:
    sweeping = "# Project conventions\nRead " + ", ".join(COMMON) + " before changing anything.\n"
    refund = (
        "# Refunds are idempotent\nsrc/payments/refund.py must check the refund key first; "
        "the rest of src/shop/ never calls it.\n"
    )
    repo = repo_with(tmp_path, {"sweeping.md": sweeping, "refund.md": refund})
    settings = load_settings()
    store = Store(settings.index_dir, embedder.model_id, embedder.dimension)
    sources = configured_sources(settings, Sources(project=str(repo)))
    Indexer(settings, store, embedder).sync(walk(sources))
    engine = Recall(settings, embedder)
    try:
        # `src/shop/` names half the tree; `tests/test_4.py` and `docs/page2.md` it never named.
        for rel in ["src/shop/mod3.py", "docs/page2.md", "tests/test_4.py"]:
            answer = engine.file_context(str(repo), str(repo / rel))
            assert not any(p.endswith("sweeping.md") for p in answer.shown), rel
        answer = engine.file_context(str(repo), str(repo / "src/payments/refund.py"))
        assert any(p.endswith("refund.md") for p in answer.shown)
        shop = engine.file_context(str(repo), str(repo / "src/shop/mod7.py"))
        assert not shop.shown  # `src/shop/` names half the tree: no evidence
    finally:
        engine.close()


def test_the_tree_is_read_again_when_git_index_changes(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {})
    trees = Trees()
    first = trees.of(str(repo))
    assert first is not None and first.files == len(TREE)
    assert trees.of(str(repo)) is first  # unchanged: not read again
    (repo / "src" / "new.py").write_text("y = 2\n")
    subprocess.run(["git", "-C", str(repo), "add", "src/new.py"], check=True)
    again = trees.of(str(repo))
    assert again is not None and again.files == len(TREE) + 1
    assert trees.of("*") is None and trees.of(str(tmp_path / "missing")) is None
