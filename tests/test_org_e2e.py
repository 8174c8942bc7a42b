"""The organisation's index end to end (issue #30): every part real, nothing in-process.

A real `precedents org build` subprocess reads two real git repositories
(``payments``: an ADR superseded by another; ``platform``: a `scope: org` rule
and a team note) into a real S3-compatible server process (moto's). A real
daemon subprocess, told only ``PRECEDENTS_ORG_URI`` and the storage's standard
chain, pulls it in the background; then the hook, run as Claude Code runs it,
in a project that never cloned either repository, is handed the payments ADR
marked with its status and its repository — by the prompt hook and by the
file hook for a path the ADR names — and `precedents query` (the ranking path
MCP's recall tool shares) lists the same records. A second build after one ADR
changed reaches the running daemon without a restart.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import conftest_org
from tests.conftest_daemon import (
    file_json,
    hook_context,
    hook_env,
    prompt_json,
    stop_daemon,
    wait_ready,
)
from tests.conftest_org import git
from tests.mcp_client import session_calls, text_of
from tests.org_fixture import PAYMENTS_ADRS, default_repos, index_project, write_repo

s3_server = conftest_org.s3_server
s3_env = conftest_org.s3_env
bucket = conftest_org.bucket

SUPERSEDED = "docs/adr/0001-charge-cards-synchronously.md"
LIVE = "docs/adr/0002-charge-cards-through-the-outbox.md"
CHARGE = "should checkout charge the card synchronously with the card processor?"


def _repo(folder: Path, files: dict[str, str]) -> Path:
    """A real git repository holding ``files``, committed."""
    folder.mkdir(parents=True)
    git(folder, "init", "-q")
    for rel, text in files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", "decisions")
    return folder


def _org_build(home: Path, listing: Path, uri: str, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "precedents.cli",
            "org",
            "build",
            "--repos-from",
            str(listing),
            "--to",
            uri,
            "--workers",
            "1",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=hook_env(home, **env),
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def _query(home: Path, project: Path) -> subprocess.CompletedProcess[str]:
    """`precedents query CHARGE --json` in ``project``: the daemon's ranking, as MCP's."""
    return subprocess.run(
        [sys.executable, "-m", "precedents.cli", "query", CHARGE, "--json"],
        capture_output=True,
        text=True,
        cwd=project,
        env=hook_env(home),
        timeout=300,
        check=False,
    )


def _served_version(home: Path) -> int:
    status = home / "org" / "status.json"
    try:
        return int(json.loads(status.read_text()).get("version") or 0)
    except (OSError, ValueError):
        return 0


def _until(what: str, check: Any, limit: float = 180) -> Any:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"not within {limit:.0f} s: {what}")


@pytest.fixture
def org(
    tmp_path: Path, bucket: str, s3_env: conftest_org.S3Server, embedder: Any
) -> Iterator[dict[str, Any]]:
    """Two org repositories built to the bucket; a project that cloned neither, indexed;
    a real daemon pulling the org index (its pull interval short for the rebuild)."""
    files = default_repos()
    payments = _repo(tmp_path / "repos" / "payments", files["payments"])
    platform = _repo(tmp_path / "repos" / "platform", files["platform"])
    listing = tmp_path / "repos.txt"
    listing.write_text(f"{payments}\n{platform}\n", encoding="utf-8")
    home = tmp_path / "state"
    checkout = write_repo(
        tmp_path / "checkout",
        {".precedents/notes/dev.md": "Run `make dev` to start the checkout service locally.\n"},
    )
    index_project(home, embedder, checkout)
    storage = s3_env.env()
    built = _org_build(home, listing, bucket, storage)
    daemon_env = hook_env(home, PRECEDENTS_ORG_URI=bucket, PRECEDENTS_ORG_PULL_S="2", **storage)
    proc = subprocess.Popen(
        [sys.executable, "-m", "precedents.query_daemon"],
        env=daemon_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_ready(home, proc)
        yield {
            "home": home,
            "checkout": checkout,
            "payments": payments,
            "listing": listing,
            "uri": bucket,
            "env": storage,
            "built": built,
        }
    finally:
        stop_daemon(proc)


def test_an_adr_of_a_repository_never_cloned_reaches_the_agent(org: dict[str, Any]) -> None:
    home, checkout = org["home"], org["checkout"]
    assert "AWS_SECRET_ACCESS_KEY" not in os.environ.get("PRECEDENTS_ORG_URI", "")
    _until("the daemon's first pull", lambda: _served_version(home))

    def prompt() -> str:
        context = hook_context(home, prompt_json(CHARGE, checkout))
        return context if f"org://payments/{SUPERSEDED}" in context else ""

    context = _until("the org ADR in the prompt hook's answer", prompt, 60)
    old = next(line for line in context.splitlines() if SUPERSEDED in line)
    assert old.startswith("⚠️superseded → ADR-0002 adr (org, payments)"), context
    assert any(
        line.startswith("adr (org, payments)") and LIVE in line for line in context.splitlines()
    ), context

    # The file hook: a path of this project that the payments ADR names.
    touched = checkout / "src" / "payments" / "client.py"
    on_file = hook_context(home, file_json(touched, checkout, f"org-{uuid.uuid4()}"), "file")
    assert f"org://payments/{SUPERSEDED}" in on_file, on_file

    # `query` ranks through the same path as the hook and MCP's search.
    done = _query(home, checkout)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["results"]
    assert any(row.get("org") and row.get("repo") == "payments" for row in rows), done.stdout

    # MCP's recall tool, through the MCP SDK's real client and `precedents mcp`.
    calls = [("recall", {"query": CHARGE, "project": str(checkout)})]
    answer = text_of(asyncio.run(session_calls(hook_env(home), checkout, calls))[1][0])
    found = [r for r in answer["records"] if r.get("org") and r.get("repo") == "payments"]
    assert any(SUPERSEDED in r["path"] and "superseded" in r.get("mark", "") for r in found), answer

    # One ADR changed upstream: a second build, pulled by the running daemon.
    changed = org["payments"] / LIVE
    changed.write_text(
        PAYMENTS_ADRS[LIVE].replace("by a worker.", "by the ledger worker every second."),
        encoding="utf-8",
    )
    git(org["payments"], "commit", "-qam", "amended")
    first = _served_version(home)
    again = _org_build(home, org["listing"], org["uri"], org["env"])
    assert again != org["built"]
    _until("the daemon's pull of the second build", lambda: _served_version(home) > first)

    status = json.loads((home / "org" / "status.json").read_text())
    assert status["records"] > 0 and not status.get("last_error"), status

    # The hook's lines are headlines: the amended text is seen through `query`'s rows.
    def amended() -> bool:
        done = _query(home, checkout)
        return "ledger worker" in done.stdout

    _until("the amended ADR served without a restart", amended, 60)
