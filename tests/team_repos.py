"""Real git repositories for the team-notes tests (issue #23): a bare "origin" and clones.

Git runs with the user's and the system's config shut out (``GIT_ENV``), so a
test's author is the one its clone sets, never the machine's.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}


def git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd`` (isolated from the machine's config); its stdout."""
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout


def init_repo(path: Path, user: str | None = "Alice Example") -> Path:
    """A fresh repository at ``path`` (branch main), its ``user.name`` set unless None."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "dev@example.invalid")
    if user is not None:
        git(path, "config", "user.name", user)
    return path


def clone(origin: Path, path: Path, user: str) -> Path:
    """A clone of ``origin`` at ``path`` whose commits are ``user``'s."""
    git(origin.parent, "clone", "-q", str(origin), str(path))
    git(path, "config", "user.name", user)
    git(path, "config", "user.email", f"{user.split()[0].lower()}@example.invalid")
    return path


def team_repos(root: Path) -> tuple[Path, Path, Path]:
    """A bare origin with one commit (a README), and two clones of it: Alice's and Bob's."""
    origin = root / "origin.git"
    git(root, "init", "-q", "--bare", "-b", "main", str(origin))
    alice = clone(origin, root / "alice", "Alice Example")
    (alice / "README.md").write_text("# Shop\n", encoding="utf-8")
    git(alice, "add", "README.md")
    git(alice, "commit", "-q", "-m", "start")
    git(alice, "push", "-q", "origin", "main")
    bob = clone(origin, root / "bob", "Bob Builder")
    return origin, alice, bob


def commit_and_push(repo: Path, add_command: str, message: str) -> None:
    """Stage with the exact command `remember --team` printed, commit, push."""
    words = shlex.split(add_command)
    assert words[:2] in (["git", "add"], ["git", "-C"]), add_command
    git(repo, *words[1:])
    git(repo, "commit", "-q", "-m", message)
    git(repo, "push", "-q", "origin", "main")


def precedents(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m precedents.cli ARGS` in ``cwd`` with exactly ``env``."""
    return subprocess.run(
        [sys.executable, "-m", "precedents.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
