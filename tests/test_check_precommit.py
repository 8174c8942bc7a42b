"""The shipped pre-commit hook, run by real pre-commit (issue #23, item 3).

A `repo: <url>` hook makes pre-commit build its own environment from the package
(every dependency, minutes); here a `repo: local` hook is made from the shipped
.pre-commit-hooks.yaml itself (its id, name, files, types, args, require_serial:
the manifest is what runs), with only its entry resolved to this environment's
`precedents` and its language `system` (nothing to build). The manifest is also
validated by `pre-commit validate-manifest`.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.check_repo import REPO, Planted, git, git_env, new_repo

MANIFEST = REPO / ".pre-commit-hooks.yaml"
BIN = Path(sys.executable).parent
PRE_COMMIT = shutil.which("pre-commit", path=str(BIN)) or shutil.which("pre-commit")
pytestmark = pytest.mark.skipif(
    PRE_COMMIT is None, reason="pre-commit is not installed (dev extra)"
)


def _pre_commit(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert PRE_COMMIT is not None
    return subprocess.run(
        [PRE_COMMIT, *args], cwd=cwd, capture_output=True, text=True, env=_env(cwd), timeout=300
    )


def _env(repo: Path) -> dict[str, str]:
    env = git_env(repo.parent)
    env["PRE_COMMIT_HOME"] = str(repo.parent / "pre-commit-home")
    env["PATH"] = f"{BIN}:{env.get('PATH', '')}"
    return env


def _commit(repo: Path, message: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(repo), "commit", "-m", message],
        capture_output=True,
        text=True,
        env=_env(repo),
        timeout=300,
    )


def _local_hook() -> dict[str, Any]:
    """The manifest's hook as a `repo: local` hook running this environment's precedents."""
    hooks = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    (hook,) = [h for h in hooks if h["id"] == "precedents-check"]
    command = shlex.split(hook["entry"])
    assert command[:2] == ["precedents", "check"] and hook["language"] == "python"
    local = dict(hook)
    local["entry"] = shlex.join([str(BIN / "precedents"), *command[1:]])
    local["language"] = "system"
    return local


def test_the_shipped_manifest_is_valid() -> None:
    done = _pre_commit(REPO, "validate-manifest", str(MANIFEST))
    assert done.returncode == 0, done.stdout + done.stderr
    hook = _local_hook()
    assert hook["require_serial"] is True and hook["types"] == ["text"]


def test_the_hook_blocks_a_commit_with_a_staged_secret(tmp_path: Path, home: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    config = {"repos": [{"repo": "local", "hooks": [_local_hook()]}]}
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    installed = _pre_commit(repo, "install")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    token = "ghp_" + Planted().token(36)
    notes = repo / ".precedents" / "notes"
    notes.mkdir(parents=True)
    note = notes / "release-bot.md"
    note.write_text(f"# Release bot\n\nThe release bot pushes with {token}.\n", encoding="utf-8")
    (repo / "README.md").write_text("# Project\n\nNothing secret here.\n", encoding="utf-8")
    git(repo, "add", "-A")

    blocked = _commit(repo, "add the release bot note")
    output = blocked.stdout + blocked.stderr
    assert blocked.returncode != 0, output
    assert "precedents check" in output and "Failed" in output
    assert ".precedents/notes/release-bot.md:3: error: secret (github-pat)" in output
    assert token not in output
    no_head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", "-q", "HEAD"],
        capture_output=True,
        env=_env(repo),
    )
    assert no_head.returncode != 0  # nothing was committed

    note.write_text("# Release bot\n\nThe release bot pushes with the vault's token.\n")
    git(repo, "add", "-A")
    passed = _commit(repo, "add the release bot note")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "precedents check" in passed.stdout + passed.stderr
