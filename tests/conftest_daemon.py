"""Helpers and session fixtures for the daemon, hook and Claude Code tests.

Imported by those test modules (``from tests.conftest_daemon import ...``), so
the real index of the dev notes and the real daemon over it are built once per
test session and shared.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from precedents import protocol

REPO = Path(__file__).resolve().parents[1]
EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval"
LAUNCHER = REPO / "src" / "precedents" / "hook" / "launch.py"

# A question one dev note answers (eval/dev q02), and the note.
RELATED = (
    "git stash left my brand-new files sitting in the working tree — how do I shelve those too?"
)
RELATED_NOTE = "git__stashing-untracked-files.md"
RELATED_HEADLINE = "note  Stashing Untracked Files"
UNRELATED = "good morning! how was your weekend?"

ADRS = {
    "0001-store-login-sessions-in-mysql.md": """# 1. Store user login sessions in a MySQL table

Date: 2021-03-02

## Status

Superseded by [2. Keep user login sessions in Redis](0002-keep-login-sessions-in-redis.md)

## Context

User login sessions need to survive a restart of the web servers.

## Decision

Store user login sessions in a MySQL table named `sessions`, one row per session.
""",
    "0002-keep-login-sessions-in-redis.md": """# 2. Keep user login sessions in Redis

Date: 2022-06-14

## Status

Accepted

Supersedes [1. Store user login sessions in a MySQL table](0001-store-login-sessions-in-mysql.md)

## Context

The MySQL sessions table became a hot spot under load.

## Decision

Keep user login sessions in Redis with a TTL equal to the session lifetime.
""",
    "0003-deploy-with-blue-green.md": """# 3. Deploy the web tier blue-green

Date: 2022-09-01

## Status

Accepted

## Decision

Deploy the web tier with two identical environments and switch the load balancer.
""",
}
ADR_PROMPT = "should user login sessions be stored in a MySQL table?"


@dataclass(frozen=True)
class DevState:
    """A state folder whose index holds the dev notes and three ADRs of ``project``."""

    home: Path
    project: Path
    notes: Path
    adrs: Path


def dev_notes() -> Path:
    """The dev notes folder, or skip with the reason."""
    notes = EVAL / "dev" / "notes"
    if not notes.is_dir():
        pytest.skip(f"{notes} is missing (the shared eval folder is not beside the repo)")
    return notes


@contextlib.contextmanager
def env(**values: str) -> Iterator[None]:
    """Set environment variables for the duration of a block."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def settings_for(home: Path) -> Any:
    """Settings of a state folder, with Claude Code discovery off."""
    from precedents.config import load_settings

    with env(PRECEDENTS_HOME=str(home)):
        return load_settings(discover_claude=False)


def build_index(home: Path, embedder: Any, project: Path, notes: Path, adrs: Path | None) -> None:
    """Index ``notes`` (and ``adrs``) for ``project`` into ``home`` with the given model."""
    from precedents.ingest.indexer import Indexer
    from precedents.ingest.sources import Sources, configured_sources, walk
    from precedents.store import Store

    settings = settings_for(home)
    store = Store(settings.index_dir, embedder.model_id, embedder.dimension)
    sources = configured_sources(
        settings, Sources(notes=[notes], adrs=[adrs] if adrs else [], project=str(project))
    )
    Indexer(settings, store, embedder).sync(walk(sources))


def hook_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment a hook or daemon subprocess runs with."""
    out = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
    out.update(PRECEDENTS_HOME=str(home), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    out.update(extra)
    return out


def run_hook(
    home: Path,
    stdin: bytes,
    *args: str,
    cwd: Path | None = None,
    budget_ms: float | None = 10_000,
    timeout: float = 30,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run the hook the way Claude Code does (``python -I -S launch.py``).

    Tests check behaviour, not speed (benchmarks do that), so the budget is
    raised unless a test is about the budget itself.
    """
    extra = {"PRECEDENTS_HOOK_BUDGET_MS": str(budget_ms)} if budget_ms else {}
    extra.update(env or {})
    return subprocess.run(
        [sys.executable, "-I", "-S", str(LAUNCHER), *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        env=hook_env(home, **extra),
        timeout=timeout,
        check=False,
    )


def hook_context(home: Path, stdin: bytes, *args: str) -> str:
    """The hook's ``additionalContext`` for ``stdin`` (empty when it stays silent); the
    hook must exit 0."""
    done = run_hook(home, stdin, *args)
    assert done.returncode == 0, done.stderr.decode()
    if not done.stdout.strip():
        return ""
    out = json.loads(done.stdout)["hookSpecificOutput"]
    return str(out.get("additionalContext") or "")


def run_cli(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m precedents.cli ARGS` in ``cwd`` with the hooks' environment for ``home``."""
    return subprocess.run(
        [sys.executable, "-m", "precedents.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=hook_env(home),
        timeout=300,
        check=False,
    )


def prompt_json(prompt: str, cwd: Path, session: str | None = None) -> bytes:
    """Claude Code's UserPromptSubmit stdin; each call is a session of its own unless
    ``session`` names one (a record is given once per session)."""
    session = session or f"test-session-{uuid.uuid4()}"
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": str(cwd / f"{session}.jsonl"),
            "cwd": str(cwd),
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
    ).encode()


def start_daemon(home: Path, *extra: str) -> subprocess.Popen[bytes]:
    """The daemon as a real subprocess (as the hook starts it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "precedents.query_daemon", *extra],
        env=hook_env(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def wait_ready(home: Path, proc: subprocess.Popen[bytes] | None = None, limit: float = 180) -> None:
    """Poll the daemon until its model and index are loaded."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise AssertionError(f"daemon exited with {proc.returncode}: {err}")
        with contextlib.suppress(protocol.Unavailable):
            if protocol.ask({"op": "ping"}, 2.0, home / "run").get("ready"):
                return
        time.sleep(0.1)
    raise AssertionError("the daemon did not become ready")


def stop_daemon(proc: subprocess.Popen[bytes], timeout: float = 20) -> int:
    """SIGTERM the daemon and wait for it; returns its exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(5)


def copy_state(dev_state: DevState, folder: Path) -> Path:
    """A state folder of its own holding a copy of the session's index (its config,
    mute list and logs are the test's), so the session's daemon is never disturbed."""
    home = folder / "state"
    shutil.copytree(dev_state.home / "index", home / "index")
    return home


@contextlib.contextmanager
def running_daemon(home: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A real daemon subprocess over ``home``, ready for the block, stopped after it."""
    proc = start_daemon(home)
    try:
        wait_ready(home, proc)
        yield proc
    finally:
        stop_daemon(proc)


class FakeRecall:
    """Answers without a model: for lifecycle and protocol tests.

    The context it answers, ``ctx <characters received> <cwd>``, tells a test
    how much of the prompt reached the daemon.
    """

    embedder = type("E", (), {"model_id": "fake"})()

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.calls = 0

    def context(self, text: str, cwd: str, **_: Any) -> Any:
        from precedents.recall.core import Answer

        self.calls += 1
        time.sleep(self.delay)
        return Answer(f"ctx {len(text)} {cwd}")

    def session_context(self, cwd: str, **_: Any) -> str:
        return f"session {cwd}"

    def session_answer(self, cwd: str, **_: Any) -> Any:
        from precedents.recall.core import Answer

        return Answer(self.session_context(cwd))

    def refresh(self) -> bool:
        return False

    def close(self) -> None:
        pass


def run_in_thread(daemon: Any) -> tuple[threading.Thread, list[Any]]:
    """Serve ``daemon`` on a thread; returns once it is bound and loaded."""
    ready = threading.Event()
    result: list[Any] = []

    def target() -> None:
        try:
            result.append(daemon.serve(ready))
        except BaseException as exc:  # handed to the test
            result.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    assert ready.wait(10), result
    deadline = time.monotonic() + 10
    while daemon.recall is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return thread, result


def start_fake_daemon(home: Path) -> subprocess.Popen[bytes]:
    """A daemon process answering with :class:`FakeRecall` (no model); waits for its socket."""
    script = (
        "import sys; from pathlib import Path; "
        "from tests.conftest_daemon import FakeRecall, settings_for; "
        "from precedents.query_daemon.server import Daemon, configure_logging; "
        "s = settings_for(Path(sys.argv[1])); configure_logging(s); "
        "Daemon(s, recall_factory=lambda _: FakeRecall()).serve()"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(home)],
        cwd=REPO,
        env=hook_env(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while not (home / "run" / protocol.SOCKET_NAME).exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            err = proc.stderr.read().decode() if proc.stderr and proc.poll() is not None else ""
            stop_daemon(proc)
            raise AssertionError(f"the fake daemon did not bind its socket: {err}")
        time.sleep(0.05)
    return proc


def daemon_answers(home: Path) -> list[dict[str, Any]]:
    """The ``answer`` lines of ``logs/daemon.log``, parsed."""
    path = home / "logs" / "daemon.log"
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line.split(" answer ", 1)[1]) for line in lines if " answer {" in line]


def write_adrs(folder: Path) -> Path:
    """The three ADRs above, in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in ADRS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def fake_daemon(home: Path) -> Iterator[Any]:
    """A daemon on a thread of this process, answering with :class:`FakeRecall`."""
    from precedents.query_daemon.server import Daemon

    daemon = Daemon(settings_for(home), recall_factory=lambda s: FakeRecall())
    thread, _ = run_in_thread(daemon)
    yield daemon
    daemon.stop()
    thread.join(10)


@pytest.fixture(scope="session")
def dev_state(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> DevState:
    """The dev notes and three ADRs indexed with the real model, once per session."""
    notes = dev_notes()
    root = tmp_path_factory.mktemp("dev-state")
    project = root / "project"
    (project / ".git").mkdir(parents=True)  # the project root is found by its .git
    adrs = write_adrs(project / "docs" / "adr")
    home = root / "state"
    build_index(home, embedder, project, notes, adrs)
    return DevState(home, project, notes, adrs)


@pytest.fixture(scope="session")
def dev_daemon(dev_state: DevState) -> Iterator[subprocess.Popen[bytes]]:
    """A real daemon subprocess serving :func:`dev_state`, ready."""
    proc = start_daemon(dev_state.home)
    try:
        wait_ready(dev_state.home, proc)
        yield proc
    finally:
        stop_daemon(proc)


@dataclass(frozen=True)
class ShopState:
    """The rule-format monorepo of tests/shop_project.py, indexed with the real model."""

    shop: Any  # tests.shop_project.Shop
    home: Path

    def settings(self) -> Any:
        """Its settings, with Claude Code's folder the shop's own."""
        from precedents.config import load_settings

        with env(PRECEDENTS_HOME=str(self.home), PRECEDENTS_CLAUDE_DIR=str(self.shop.claude)):
            return load_settings()

    def reindex(self, embedder: Any) -> Any:
        """Index the project (its rules, ADRs, note and log) as `reindex --project` does."""
        from precedents.ingest.indexer import Indexer
        from precedents.ingest.sources import Sources, configured_sources, walk
        from precedents.store import Store

        settings = self.settings()
        store = Store(settings.index_dir, embedder.model_id, embedder.dimension)
        found = configured_sources(settings, Sources(project=str(self.shop.repo)))
        return Indexer(settings, store, embedder).sync(walk(found))


def file_json(path: Path | str, cwd: Path, session: str, tool: str = "Read") -> bytes:
    """Claude Code's PreToolUse stdin for a file tool (docs/claude-code-hooks-probe.md)."""
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": str(cwd / f"{session}.jsonl"),
            "cwd": str(cwd),
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": {key: str(path)},
            "tool_use_id": f"toolu_{uuid.uuid4().hex[:12]}",
        }
    ).encode()


@pytest.fixture(scope="session")
def shop_state(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> ShopState:
    """The shop monorepo indexed with the real model, once per session."""
    from tests.shop_project import build_shop

    root = tmp_path_factory.mktemp("shop")
    state = ShopState(build_shop(root), root / "state")
    report = state.reindex(embedder)
    assert report.files_indexed >= 15, report.to_json()
    return state


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (a zombie, not reaped yet, is not)."""
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    return True
