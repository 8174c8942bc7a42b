"""Helpers for the `precedents check` tests: real git repositories in temporary folders,
and the secrets planted in tests/fixtures/check/secrets (generated here, never committed)."""

from __future__ import annotations

import base64
import os
import random
import re
import shutil
import string
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "check"
SLOT = re.compile(r"\{\{(\w+)\}\}")

_ALNUM = string.ascii_letters + string.digits
_UPPER = string.ascii_uppercase + string.digits


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``precedents ARGS`` as a user runs it, in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "precedents.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=git_env(cwd.parent),
        timeout=300,
    )


def git_env(home: Path) -> dict[str, str]:
    """git with no user or system config of this machine, and a committer."""
    env = dict(os.environ)
    env.update(
        GIT_CONFIG_GLOBAL=str(home / "gitconfig"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="Check Test",
        GIT_AUTHOR_EMAIL="check@example.invalid",
        GIT_COMMITTER_NAME="Check Test",
        GIT_COMMITTER_EMAIL="check@example.invalid",
    )
    return env


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        env=git_env(repo.parent),
        check=True,
    )
    return done.stdout


def new_repo(path: Path, tree: Path | None = None) -> Path:
    """A git repository at ``path`` (with ``tree`` copied in, nothing staged)."""
    if tree is not None:
        shutil.copytree(tree, path)
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    return path


class Planted:
    """Secret values by slot, generated from a seed: the same run to run."""

    def __init__(self, seed: int = 2323) -> None:
        self.rng = random.Random(seed)
        self.values: dict[str, str] = {}

    def token(self, n: int, alphabet: str = _ALNUM, mixed: bool = True) -> str:
        while True:
            t = "".join(self.rng.choice(alphabet) for _ in range(n))
            if any(c.isdigit() for c in t) and (not mixed or t.lower() != t != t.upper()):
                return t

    def digits(self, n: int) -> str:
        return "".join(self.rng.choice(string.digits) for _ in range(n))

    def _jwt(self) -> str:
        def enc(s: str) -> str:
            return base64.urlsafe_b64encode(s.encode()).decode().rstrip("=")

        claims = f'{{"sub":"{self.digits(10)}","name":"svc-search","iat":{self.digits(10)}}}'
        head = enc('{"alg":"HS256","typ":"JWT"}')
        return f"{head}.{enc(claims)}.{self.token(43, _ALNUM + '-_')}"

    def _pem(self) -> str:
        body = "\n".join(self.token(64, _ALNUM + "+/") for _ in range(6))
        return f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"

    def generators(self) -> dict[str, Callable[[], str]]:
        t, d = self.token, self.digits
        return {
            "aws_key_id": lambda: "AKIA" + t(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", False),
            "aws_secret": lambda: t(40, _ALNUM + "+/"),
            "github_pat": lambda: "ghp_" + t(36),
            "url_password": lambda: f"Wolf-Summer-{d(4)}x",
            "ado_password": lambda: f"Quartz Meadow {d(4)}",
            "prose_password": lambda: f"Maple-Orbit-{d(4)}-q",
            "slack_token": lambda: f"xoxb-{d(12)}-{d(13)}-{t(24)}",
            "gitlab_token": lambda: "glpat-" + t(20),
            "passphrase": lambda: "velvet thunder orchard lamp",
            "bearer": lambda: t(48),
            "stripe_key": lambda: "sk_" + "live_" + t(24),
            "anthropic_key": lambda: "sk-ant-api03-" + t(80, _ALNUM + "-_"),
            "openai_key": lambda: "sk-proj-" + t(60, _ALNUM + "-_"),
            "private_key": self._pem,
            "jwt": self._jwt,
            "redis_password": lambda: f"Lunar-Basket-{d(4)}",
            "mongo_password": lambda: f"Granite-Pepper-{d(4)}",
            "hf_token": lambda: "hf_" + t(34),
            "npm_token": lambda: "npm_" + t(36),
            "google_key": lambda: "AIza" + t(35, _ALNUM + "-_"),
            "slack_webhook": lambda: (
                f"https://hooks.slack.com/services/T{t(8, _UPPER, False)}"
                f"/B{t(10, _UPPER, False)}/{t(24)}"
            ),
            "mysql_password": lambda: f"River-Stone-{d(4)}",
        }

    def fill(self, text: str) -> str:
        makers = self.generators()

        def value(m: re.Match[str]) -> str:
            slot = m.group(1)
            if slot not in self.values:
                self.values[slot] = makers[slot]()
            return self.values[slot]

        return SLOT.sub(value, text)


def plant(tree: Path, target: Path, planted: Planted) -> dict[str, tuple[str, int]]:
    """Copy ``tree`` to ``target`` with every slot filled: slot -> (path, line) where
    its value starts."""
    where: dict[str, tuple[str, int]] = {}
    for src in sorted(tree.rglob("*")):
        if not src.is_file() or src.name == "README.txt":
            continue
        rel = src.relative_to(tree).as_posix()
        raw = src.read_text(encoding="utf-8")
        text = planted.fill(raw)
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
        for slot in SLOT.findall(raw):
            value = planted.values[slot]
            where[slot] = (rel, text.count("\n", 0, text.index(value)) + 1)
    return where
