"""A hostile repository (issue #28, items 1, 2 and 5): nothing from outside it through a
symlink, only regular files under the size cap read without blocking, and a file name
that is not UTF-8 skipped with one line, never failing the rest.

Real parts: real symlinks, a real FIFO (``os.mkfifo``), ``/dev/zero``, a sparse 2 GB
file (``truncate``: no disk), names of raw bytes (``os.fsencode``), the real LanceDB
and the bundled model for indexing, the CLI as a subprocess with a timeout (a
regression fails instead of hanging the suite), a real MCP client session, a real
watcher.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from precedents import files
from precedents.config import load_settings
from precedents.files import LINKED_OUT, MAX_BYTES, NOT_UTF8_NAME, OUTSIDE, Refused
from precedents.ingest.indexer import Indexer
from precedents.ingest.sources import Sources, configured_sources, walk
from precedents.store import Store

from .team_repos import init_repo

SECRET = "OUTSIDE-SECRET-7f3a"  # in every outside file: never stored nor shown
BAD = b"bad\xff\xfe"
# Where a call used to hang for ever (a FIFO) or run out of memory (/dev/zero): a
# generous bound, so a loaded machine passes and a regression fails.
STALL_S = 60
SRC = str(Path(__file__).resolve().parents[1] / "src")
T = TypeVar("T")


# Runs the CLI and writes its own peak RSS (KiB) last on stderr, whatever its exit. VmHWM,
# not ru_maxrss: the latter keeps the forking parent's peak across exec (pytest's, over
# a gigabyte late in the suite), VmHWM belongs to this process's own memory.
MEASURED = (
    "import runpy, sys\n"
    "sys.argv = ['precedents', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('precedents.cli', run_name='__main__')\n"
    "finally:\n"
    "    hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
    "    print('rss_kib', hwm[0], file=sys.stderr)\n"
)


def peak_kib(done: subprocess.CompletedProcess[str]) -> int:
    last = done.stderr.strip().splitlines()[-1].split()
    assert last[0] == "rss_kib", done.stderr
    return int(last[1])


def cli(
    *args: str, cwd: Path, home: Path, timeout: float = STALL_S
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": SRC,
        "PRECEDENTS_HOME": str(home / "state"),
        "PRECEDENTS_CLAUDE_DIR": str(home / "claude"),
        "HF_HUB_OFFLINE": "1",
    }
    return subprocess.run(
        [sys.executable, "-c", MEASURED, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
        check=False,
    )


def in_time(call: Callable[[], T], seconds: float = STALL_S) -> T:
    """``call()`` in a daemon thread: a call that hangs (a FIFO opened for reading) fails
    the test after ``seconds`` instead of hanging the suite."""
    out: list[T] = []
    thread = threading.Thread(target=lambda: out.append(call()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert out, f"still running (or failed) after {seconds} s"
    return out[0]


def outside(tmp: Path) -> Path:
    """A folder beside the repository, as ``~/private-notes`` or ``/etc`` would be."""
    out = tmp / "outside"
    for rel, text in {
        "notes/private.md": f"# Private\n\nMy bank PIN note {SECRET}.\n",
        "rules/evil.mdc": f"---\nalwaysApply: true\n---\nRule from outside {SECRET}.\n",
        "adr/0001-outside.md": f"# 1. Outside\n\n## Status\n\nAccepted\n\n{SECRET}\n",
        "claude/rules/x.md": f"# Outside Claude rule\n\n{SECRET}\n",
        "claude/CLAUDE.md": f"# Outside memory\n\n{SECRET}\n",
        "passwd": f"root:x:0:0:{SECRET}:/root:/bin/bash\n",
    }.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return out


def linked_repo(tmp: Path) -> tuple[Path, Path]:
    """A repository whose team notes, Cursor rules, ADR folder and a nested `.claude`
    are symlinks out of it, beside one rule of its own."""
    out = outside(tmp)
    repo = init_repo(tmp / "repo")
    (repo / ".precedents").mkdir()
    (repo / ".precedents" / "notes").symlink_to(out / "notes")
    (repo / ".cursor").mkdir()
    (repo / ".cursor" / "rules").symlink_to(out / "rules")
    (repo / "docs").mkdir()
    (repo / "docs" / "adr").symlink_to(out / "adr")
    (repo / "sub").mkdir()
    (repo / "sub" / ".claude").symlink_to(out / "claude")
    (repo / "AGENTS.md").write_text("# Agents\n\nRun the tests before pushing.\n")
    return repo, out


LINKED_DIRS = (".precedents/notes", ".cursor/rules", "docs/adr", "sub/.claude/rules")


def index(settings: Any, repo: Path, emb: Any) -> tuple[Any, Store]:
    store = Store(settings.index_dir, emb.model_id, emb.dimension)
    report = Indexer(settings, store, emb).sync(
        walk(configured_sources(settings, Sources(project=str(repo))))
    )
    return report, store


def stored_text(store: Store, project: str) -> str:
    rows = store.all_vectors([project])[0]
    return json.dumps([{k: v for k, v in r.items() if k != "vector"} for r in rows], default=str)


# -- the safe reader --------------------------------------------------------------------


def test_the_reader_refuses_what_is_not_a_small_regular_file_inside(tmp_path: Path) -> None:
    folder = tmp_path / "adr"
    folder.mkdir()
    (folder / "ok.md").write_text("fine")
    os.mkfifo(folder / "fifo.md")
    (folder / "zero.md").symlink_to("/dev/zero")
    (folder / "out.md").symlink_to(outside(tmp_path) / "passwd")
    (folder / "in.md").symlink_to(folder / "ok.md")
    (folder / "sub").mkdir()
    huge = folder / "huge.md"
    subprocess.run(["truncate", "-s", "2G", str(huge)], check=True)  # sparse: no disk
    assert files.read_regular(folder / "ok.md", within=folder) == b"fine"
    assert files.read_regular(folder / "in.md", within=folder) == b"fine"  # stays inside
    started = time.monotonic()
    reasons = {}
    for name in ("fifo.md", "zero.md", "out.md", "huge.md", "sub"):
        with pytest.raises(Refused) as caught:
            files.read_regular(folder / name, within=folder)
        reasons[name] = caught.value.reason
    # Named by the user (within=None): a link is followed, the type and size still count.
    for name in ("fifo.md", "zero.md"):
        with pytest.raises(Refused):
            files.read_regular(folder / name, within=None)
    assert time.monotonic() - started < STALL_S
    assert reasons["fifo.md"] == "not a regular file (a FIFO): skipped"
    assert reasons["zero.md"] == OUTSIDE
    assert reasons["out.md"] == OUTSIDE
    assert reasons["huge.md"] == "larger than 2 MiB: skipped"
    assert reasons["sub"] == "not a regular file (a folder): skipped"


def test_the_reader_never_trusts_the_size_a_file_reports() -> None:
    """/proc files say 0 bytes: at most limit + 1 bytes are read, then refused."""
    maps = Path("/proc/self/maps")
    if not maps.exists() or maps.stat().st_size != 0:
        pytest.skip("no /proc here")
    with pytest.raises(Refused) as caught:
        files.read_regular(maps, within=None, limit=64)
    assert caught.value.size == 65
    assert MAX_BYTES == 2 * 1024 * 1024


# -- item 1: nothing from outside through a symlink -------------------------------------


@pytest.mark.slow
def test_linked_out_folders_are_never_indexed(home: Path, tmp_path: Path, embedder: Any) -> None:
    """`.precedents/notes`, `.cursor/rules`, `docs/adr`, `sub/.claude`, each a link out:
    one line each, nothing of theirs stored; the repository's own rule still is."""
    repo, out = linked_repo(tmp_path)
    settings = load_settings(discover_claude=False)
    report, store = index(settings, repo, embedder)
    text = stored_text(store, str(repo))
    assert SECRET not in text and str(out) not in text
    assert str(repo / "AGENTS.md") in store.files()
    assert not [p for p in store.files() if p.startswith((str(out), str(repo / "docs")))]
    said = {(p.path, p.reason) for p in report.problems}
    for rel in LINKED_DIRS:
        assert (str(repo / rel), LINKED_OUT) in said, (rel, said)
    # `status` names each; the same through the CLI (each once).
    from precedents import api

    rows = api.status(settings.with_overrides(repos=(repo,)))["sources"]
    flagged = {r["root"] for r in rows if r.get("problem", "").endswith(LINKED_OUT)}
    assert flagged == {str(repo / r) for r in LINKED_DIRS}
    done = cli("reindex", "--project", str(repo), cwd=repo, home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout + done.stderr
    assert (done.stdout + done.stderr).count(f"docs/adr: {LINKED_OUT}") == 1


def test_an_adr_link_out_is_not_read_by_the_graph(tmp_path: Path) -> None:
    """`adr show 3 --dir doc/adr` once printed /etc/passwd; the default folder linked out
    is no ADR folder (the MCP tools use it too)."""
    repo = init_repo(tmp_path / "repo")
    out = outside(tmp_path)
    adr = repo / "doc" / "adr"
    adr.mkdir(parents=True)
    (adr / "0001-real.md").write_text("# 1. Real\n\n## Status\n\nAccepted\n\nOurs.\n")
    (adr / "0003-passwd.md").symlink_to(out / "passwd")
    shown = cli("adr", "show", "3", "--dir", "doc/adr", cwd=repo, home=tmp_path)
    listed = cli("adr", "list", "--dir", "doc/adr", cwd=repo, home=tmp_path)
    assert SECRET not in shown.stdout + shown.stderr + listed.stdout + listed.stderr
    assert f"0003-passwd.md  ({OUTSIDE})" in listed.stdout
    assert "Real" in listed.stdout
    # docs/adr (the first conventional name) links out: doc/adr is the default.
    (repo / "docs").mkdir()
    (repo / "docs" / "adr").symlink_to(out / "adr")
    default = cli("adr", "list", cwd=repo, home=tmp_path)
    assert default.returncode == 0, default.stderr
    assert "Real" in default.stdout and "Outside" not in default.stdout
    shutil.rmtree(adr)
    alone = cli("adr", "list", cwd=repo, home=tmp_path)
    assert alone.returncode == 2 and LINKED_OUT in alone.stderr and SECRET not in alone.stderr


def test_check_reads_nothing_through_a_link_out(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    out = outside(tmp_path)
    (repo / "docs").mkdir()
    (repo / "docs" / "adr").symlink_to(out / "adr")
    (repo / "notes.md").symlink_to(out / "passwd")
    done = cli("check", "docs", "notes.md", "--json", cwd=repo, home=tmp_path)
    assert SECRET not in done.stdout + done.stderr
    [finding] = json.loads(done.stdout)
    assert (finding["path"], finding["message"]) == ("notes.md", f"not checked: {LINKED_OUT}")


async def _mcp_calls(env: dict[str, str], cwd: Path, calls: list[tuple[str, Any]]) -> list[Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "precedents.cli", "mcp"], env=env, cwd=str(cwd)
    )
    out = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for name, args in calls:
            out.append(await session.call_tool(name, args))
    return out


@pytest.mark.slow
def test_mcp_adr_chain_default_folder_is_never_a_link_out(tmp_path: Path) -> None:
    repo, _out = linked_repo(tmp_path)
    (tmp_path / "claude").mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": SRC,
        "PRECEDENTS_HOME": str(tmp_path / "state"),
        "PRECEDENTS_CLAUDE_DIR": str(tmp_path / "claude"),
        "HF_HUB_OFFLINE": "1",
    }
    ours = repo / "doc" / "adr"  # the second conventional name: the default once docs/adr is out
    ours.mkdir(parents=True)
    (ours / "0001-ours.md").write_text("# 1. Ours\n\n## Status\n\nAccepted\n\nKept here.\n")
    calls = [("adr_chain", {"id": "1"}), ("adr_find", {"words": "outside"})]
    chain, found = asyncio.run(asyncio.wait_for(_mcp_calls(env, repo, calls), STALL_S))
    assert not chain.is_error and not found.is_error
    text = json.dumps([c.model_dump() for r in (chain, found) for c in r.content])
    assert SECRET not in text and "Kept here." in text and "0001-outside" not in text


# -- item 2: only regular files under the cap, never blocking ---------------------------


def hostile_adrs(repo: Path) -> Path:
    adr = repo / "docs" / "adr"
    adr.mkdir(parents=True)
    (adr / "0001-real.md").write_text("# 1. Real\n\n## Status\n\nAccepted\n\nKeep it.\n")
    (adr / "0009-zero.md").symlink_to("/dev/zero")
    os.mkfifo(adr / "0010-fifo.md")
    (adr / "0011-fifo-link.md").symlink_to(adr / "0010-fifo.md")
    subprocess.run(["truncate", "-s", "2G", str(adr / "0012-huge.md")], check=True)
    return adr


@pytest.mark.slow
def test_devices_fifos_and_huge_files_never_stall(
    home: Path, tmp_path: Path, embedder: Any
) -> None:
    repo = init_repo(tmp_path / "repo")
    hostile_adrs(repo)
    rules = repo / ".cursor" / "rules"
    rules.mkdir(parents=True)
    os.mkfifo(rules / "fifo.mdc")
    (rules / "zero.mdc").symlink_to("/dev/zero")
    started = time.monotonic()
    listed = cli("adr", "list", cwd=repo, home=tmp_path)
    shown = cli("adr", "show", "1", cwd=repo, home=tmp_path)
    checked = cli("check", "docs", "--json", cwd=repo, home=tmp_path)
    assert listed.returncode == 0 and shown.returncode == 0, listed.stderr + shown.stderr
    lines = listed.stdout
    assert "0010-fifo.md  (not a regular file (a FIFO): skipped)" in lines
    assert "0011-fifo-link.md  (not a regular file (a FIFO): skipped)" in lines
    assert "0012-huge.md  (larger than 2 MiB: skipped)" in lines
    assert "0009-zero.md  (symlink leads out of the source folder" in lines
    assert "Real" in lines
    found = {(f["path"], f["message"]) for f in json.loads(checked.stdout)}
    fifo = "not checked: not a regular file (a FIFO): skipped"
    assert ("docs/adr/0010-fifo.md", fifo) in found
    assert (
        "docs/adr/0012-huge.md",
        "not checked: too large to check (2048.0 MiB; at most 2 MiB)",
    ) in found
    # Each stayed small: the 2 GB file was never read whole (it once took 4.2 GB).
    assert max(map(peak_kib, (listed, shown, checked))) < 512 * 1024  # KiB: 512 MiB
    settings = load_settings(discover_claude=False)
    report, store = in_time(lambda: index(settings, repo, embedder))
    reasons = {Path(p.path).name: p.reason for p in report.problems}
    assert reasons["fifo.mdc"] == "not a regular file (a FIFO): skipped"
    assert reasons["zero.mdc"] == OUTSIDE
    assert reasons["0011-fifo-link.md"] == "not a regular file (a FIFO): skipped"
    assert "max_file_bytes" in reasons["0012-huge.md"]
    assert sorted(Path(p).name for p in store.files()) == ["0001-real.md"]
    done = cli("reindex", "--project", str(repo), cwd=repo, home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 4 * STALL_S


def test_a_team_config_that_is_a_fifo_does_not_hang(tmp_path: Path) -> None:
    from precedents.ingest.team import DEFAULT_NOTES, team_config

    repo = init_repo(tmp_path / "repo")
    (repo / ".precedents").mkdir()
    os.mkfifo(repo / ".precedents" / "config.toml")
    found = in_time(lambda: team_config(repo))
    assert found.notes == repo / DEFAULT_NOTES and "FIFO" in found.problem


def test_promote_passes_over_a_fifo_among_the_notes(home: Path, tmp_path: Path) -> None:
    """`promote NAME` reads every personal note's name: a FIFO there once hung it."""
    from precedents.ingest import promote
    from precedents.ingest.remember import memory_folder

    repo = init_repo(tmp_path / "repo")
    settings = load_settings()
    folder = memory_folder(settings.claude_dir, str(repo))
    folder.mkdir(parents=True)
    (folder / "freeze.md").write_text("---\nname: Friday freeze\n---\nNo Friday deploys.\n")
    os.mkfifo(folder / "a-fifo.md")
    saved = in_time(lambda: promote.promote(settings, "friday-freeze", str(repo)))
    assert saved.path == repo / ".precedents" / "notes" / "freeze.md"


# -- item 5: a file name that is not UTF-8 ---------------------------------------------


def bad_path(folder: Path, tail: bytes) -> bytes:
    return os.fsencode(folder) + b"/" + BAD + tail


@pytest.mark.slow
def test_a_name_that_is_not_utf8_is_one_line_and_the_rest_is_indexed(
    home: Path, tmp_path: Path, embedder: Any
) -> None:
    repo = init_repo(tmp_path / "repo")
    rules = repo / ".cursor" / "rules"
    rules.mkdir(parents=True)
    (rules / "good.mdc").write_text("---\nalwaysApply: true\n---\nUse tabs.\n")
    Path(os.fsdecode(bad_path(rules, b".mdc"))).write_text("---\nalwaysApply: true\n---\nX.\n")
    adr = repo / "docs" / "adr"
    adr.mkdir(parents=True)
    (adr / "0001-real.md").write_text("# 1. Real\n\n## Status\n\nAccepted\n")
    Path(os.fsdecode(bad_path(adr, b".md"))).write_text("# 2. Bad\n\n## Status\n\nAccepted\n")
    settings = load_settings(discover_claude=False)
    report, store = index(settings, repo, embedder)
    assert sorted(Path(p).name for p in store.files()) == ["0001-real.md", "good.mdc"]
    shown = {(p.path, p.reason) for p in report.problems}
    assert (f"{rules}/bad\\xff\\xfe.mdc", NOT_UTF8_NAME) in shown
    for args in (
        ("reindex", "--project", str(repo)),
        ("reindex", "--full", "--project", str(repo)),
    ):
        done = cli(*args, cwd=repo, home=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "bad\\xff\\xfe.mdc: file name is not UTF-8: skipped" in done.stdout + done.stderr
    listed = cli("adr", "list", cwd=repo, home=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert f"bad\\xff\\xfe.md  ({NOT_UTF8_NAME})" in listed.stdout and "Real" in listed.stdout
    checked = cli("check", "docs", ".cursor", "--json", cwd=repo, home=tmp_path)
    assert checked.returncode in (0, 1), checked.stderr
    assert NOT_UTF8_NAME in checked.stdout


# -- the watcher ----------------------------------------------------------------------


@pytest.mark.slow
def test_the_watcher_never_watches_a_linked_out_folder(
    home: Path, tmp_path: Path, embedder: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Nor reads anything written there later; a name that is not UTF-8 in a watched
    folder is one line of its log, and the file beside it is indexed."""
    from precedents.watcher import Watcher, WatchTiming

    repo, out = linked_repo(tmp_path)
    ours = repo / "doc" / "adr"
    ours.mkdir(parents=True)
    (ours / "0001-a.md").write_text("# 1. A\n\n## Status\n\nAccepted\n")
    settings = load_settings(discover_claude=False).with_overrides(repos=(repo,))
    store = Store(settings.index_dir, embedder.model_id, embedder.dimension)
    reader = Store(settings.index_dir, embedder.model_id, embedder.dimension, reader=True)
    timing = WatchTiming(quiet_s=0.1, conversation_quiet_s=0.3, max_wait_s=2.0, rescan_s=600)

    def indexed(path: Path) -> bool:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if str(path) in reader.files():
                return True
            time.sleep(0.05)
        return False

    with Watcher(settings, store=store, embedder=embedder, timing=timing) as watcher:
        assert watcher.wait_ready(60)
        watched = {folder for folder, _recursive in watcher._watches._watches}
        assert not [w for w in watched if w.startswith(str(out))]
        for rel in LINKED_DIRS:
            assert str(repo / rel) not in watched
        (out / "rules" / "later.mdc").write_text(f"Later rule {SECRET}\n")
        (out / "notes" / "later.md").write_text(f"# Later\n\n{SECRET}\n")
        (out / "adr" / "0002-later.md").write_text(f"# 2. Later\n\n{SECRET}\n")
        Path(os.fsdecode(bad_path(ours, b".md"))).write_text("# 3. Bad\n")
        (ours / "0002-b.md").write_text("# 2. B\n\n## Status\n\nAccepted\n")
        assert indexed(ours / "0002-b.md")  # the watcher works, and is past them
        time.sleep(1.0)  # what an event from outside would have had time to do
    paths = list(reader.files())
    assert not [p for p in paths if SECRET in p or p.startswith(str(out)) or "bad" in p]
    assert f"{ours}/bad\\xff\\xfe.md: {NOT_UTF8_NAME}" in caplog.text
    assert not [p for p in paths if "/.cursor/rules/" in p or "/.precedents/notes/" in p]
    assert SECRET not in stored_text(reader, str(repo))
