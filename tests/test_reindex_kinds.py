"""`reindex` with folders never removes records of another kind or another source
(issue #29, item 2).

Found: `reindex --notes REPO --project REPO` removed the repository's Cursor rules
and team notes ("3 unchanged, 3 removed"): what a pass found gone was decided by path
prefix alone. A record's source is (kind, root folder, path): a pass removes only the
records its own sources would have produced, and a rule file or an ADR under a notes
folder stays a rule or an ADR (ingest/removal.py, ingest/sources.py `yields_to`).

The real store in a temp folder, the real bundled model, the CLI in real subprocesses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from precedents import api
from precedents.config import Settings, load_settings
from precedents.errors import NotAFolder
from precedents.ingest.indexer import CHUNKER_VERSION, Indexer, IndexReport
from precedents.ingest.removal import gone_paths
from precedents.ingest.sources import SourceDir, SourceFile, Sources, configured_sources, walk
from precedents.store import FileRecord, Store, open_store
from precedents.watcher import Watcher, WatchTiming
from precedents.watcher.watches import route

RULE = "---\ndescription: {what}\nglobs: src/**/*.ts\n---\n\n# {what}\n\nAlways {what}.\n"
ADR = "# {n}. {what}\n\n## Status\n\nAccepted\n\n## Decision\n\nWe {what}.\n"
NOTE = "---\nname: {what}\ndescription: {what}\n---\n\n{what}: remember this one.\n"


def make_repo(tmp_path: Path) -> Path:
    """A repository with Cursor rules, an AGENTS.md, ADRs, team notes and plain notes."""
    repo = tmp_path / "shop"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    write(repo / ".cursor/rules/typescript.mdc", RULE.format(what="use strict TypeScript"))
    write(repo / ".cursor/rules/tests.mdc", RULE.format(what="write a test for each fix"))
    write(repo / "AGENTS.md", "# Agents\n\nRun `make lint` before every commit.\n")
    write(repo / "docs/adr/0001-postgres.md", ADR.format(n=1, what="use Postgres for orders"))
    write(repo / "docs/adr/0002-queues.md", ADR.format(n=2, what="send mail through a queue"))
    write(repo / ".precedents/notes/deploy.md", NOTE.format(what="deploys happen on Tuesday"))
    write(repo / "docs/notes/cache.md", NOTE.format(what="the cache key holds the locale"))
    write(repo / "docs/notes/retries.md", NOTE.format(what="retries back off to 30 s"))
    return repo


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m precedents.cli ...` in a subprocess, with the test's state folder."""
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": src, "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "precedents.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def stored(settings: Settings) -> dict[str, FileRecord]:
    """The file records of the state folder's store (read without loading a model)."""
    model = Store.stored_model(settings.index_dir)
    assert model is not None
    return Store(settings.index_dir, model[0], model[1], reader=True, create=False).files()


def kinds(records: dict[str, FileRecord], repo: Path) -> dict[str, str]:
    """Kind of every stored file of ``repo``, by path relative to it (commits left out)."""
    return {
        str(Path(p).relative_to(repo)): r.kind
        for p, r in records.items()
        if r.kind != "commit" and Path(p).is_relative_to(repo)
    }


PROJECT_KINDS = {
    ".cursor/rules/typescript.mdc": "rule",
    ".cursor/rules/tests.mdc": "rule",
    "AGENTS.md": "rule",
    "docs/adr/0001-postgres.md": "adr",
    "docs/adr/0002-queues.md": "adr",
    ".precedents/notes/deploy.md": "note",
}


def sync(settings: Settings, embedder: object, sources: Sources) -> IndexReport:
    """One pass as `reindex` makes it: the sources, walked, synced into the store."""
    store = open_store(settings.index_dir, embedder)  # type: ignore[arg-type]
    found = walk(configured_sources(settings, sources))
    return Indexer(settings, store, embedder).sync(found)  # type: ignore[arg-type]


@pytest.mark.slow
def test_reindex_notes_over_the_repository_keeps_its_rules_and_adrs(
    home: Path, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path)
    settings = load_settings()
    # The project as the watcher and `reindex --project` index it.
    done = cli("reindex", "--project", str(repo), "--json")
    assert done.returncode == 0, done.stderr
    before = kinds(stored(settings), repo)
    assert before == PROJECT_KINDS
    # The reported command: the repository's root named as a notes folder.
    done = cli("reindex", "--notes", str(repo), "--project", str(repo), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["files_deleted"] == 0, report
    after = kinds(stored(settings), repo)
    # Every rule, ADR and team note is still there, and still what it was...
    assert {p: k for p, k in after.items() if p in PROJECT_KINDS} == PROJECT_KINDS
    # ...and only the files no other reader owns became notes.
    assert {p: k for p, k in after.items() if p not in PROJECT_KINDS} == {
        "docs/notes/cache.md": "note",
        "docs/notes/retries.md": "note",
    }
    # A folder of notes inside it: a note deleted there is removed, nothing outside it.
    (repo / "docs/notes/retries.md").unlink()
    done = cli("reindex", "--notes", str(repo / "docs/notes"), "--project", str(repo), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["files_deleted"] == 1
    last = kinds(stored(settings), repo)
    assert last == {**PROJECT_KINDS, "docs/notes/cache.md": "note"}


@pytest.mark.slow
def test_a_project_that_is_no_folder_is_refused_and_changes_nothing(
    home: Path, tmp_path: Path, embedder: object
) -> None:
    repo = make_repo(tmp_path)
    settings = load_settings()
    sync(settings, embedder, Sources(project=str(repo)))
    before = stored(settings)
    missing = str(tmp_path / "nonexistent")
    with pytest.raises(NotAFolder, match="nonexistent"):
        api.reindex(settings, sources=Sources(notes=(repo,), project=missing))
    with pytest.raises(NotAFolder):
        api.reindex(settings, sources=Sources(project=str(repo / "AGENTS.md")))
    done = cli("reindex", "--notes", str(repo), "--project", missing)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    after = stored(settings)
    assert {p: (r.kind, r.project) for p, r in after.items()} == {
        p: (r.kind, r.project) for p, r in before.items()
    }


@pytest.mark.slow
def test_a_first_pass_over_notes_leaves_rules_and_adrs_to_their_readers(
    home: Path, tmp_path: Path, embedder: object
) -> None:
    repo = make_repo(tmp_path)
    settings = load_settings()
    report = sync(settings, embedder, Sources(notes=(repo,), project=str(repo)))
    assert report.files_indexed == 2
    assert kinds(stored(settings), repo) == {
        "docs/notes/cache.md": "note",
        "docs/notes/retries.md": "note",
    }
    # Their readers then index them as what they are; the notes stay notes.
    report = sync(settings, embedder, Sources(project=str(repo)))
    assert report.files_deleted == 0
    assert kinds(stored(settings), repo) == {
        **PROJECT_KINDS,
        "docs/notes/cache.md": "note",
        "docs/notes/retries.md": "note",
    }


@pytest.mark.slow
def test_a_record_stored_as_another_kind_is_read_again_as_its_own(
    home: Path, tmp_path: Path, embedder: object
) -> None:
    # What the old bug left (`reindex --notes REPO` on a fresh store): AGENTS.md and an
    # ADR stored as notes of the project, bytes and project unchanged since.
    repo = make_repo(tmp_path)
    settings = load_settings()
    store = open_store(settings.index_dir, embedder)  # type: ignore[arg-type]
    wrong = [
        SourceFile(repo / "AGENTS.md", "note", str(repo), repo),
        SourceFile(repo / "docs/adr/0001-postgres.md", "note", str(repo), repo),
    ]
    Indexer(settings, store, embedder).index_files(wrong)  # type: ignore[arg-type]
    store.stamp(chunker=CHUNKER_VERSION)  # read by this parser: nothing re-read for that
    assert kinds(stored(settings), repo) == {
        "AGENTS.md": "note",
        "docs/adr/0001-postgres.md": "note",
    }
    # Same bytes, but the project's own pass reads them as a rule and an ADR again.
    sync(settings, embedder, Sources(project=str(repo)))
    assert kinds(stored(settings), repo) == PROJECT_KINDS


# -- the removal plan and the routing, without a model ---------------------------------


def record(path: Path, kind: str) -> FileRecord:
    return FileRecord(str(path), kind, "/p", "0" * 64, 1, 1, 0.0)  # type: ignore[arg-type]


def test_only_records_a_walked_source_would_produce_are_gone(home: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    found = walk(configured_sources(load_settings(), Sources(notes=(repo,), project=str(repo))))
    listed = {str(f.path) for f in found.files}
    assert (
        str(repo / "AGENTS.md") not in listed
        and str(repo / "docs/adr/0001-postgres.md") not in listed
    )
    known = {
        # Another kind under the notes folder: a rule, an ADR (listed or not).
        str(repo / ".cursor/rules/tests.mdc"): record(repo / ".cursor/rules/tests.mdc", "rule"),
        str(repo / "AGENTS.md"): record(repo / "AGENTS.md", "rule"),
        str(repo / "docs/adr/gone.md"): record(repo / "docs/adr/gone.md", "adr"),
        # A note in a hidden folder the walk never lists (the team's notes).
        str(repo / ".precedents/notes/x.md"): record(repo / ".precedents/notes/x.md", "note"),
        # A note of another folder, and a note of this one whose file is gone.
        str(tmp_path / "elsewhere/a.md"): record(tmp_path / "elsewhere/a.md", "note"),
        str(repo / "docs/notes/gone.md"): record(repo / "docs/notes/gone.md", "note"),
        # A file that became unreadable but is listed: kept (the pass reads it again).
        str(repo / "docs/notes/cache.md"): record(repo / "docs/notes/cache.md", "note"),
    }
    assert gone_paths(known, found) == [str(repo / "docs/notes/gone.md")]
    # A folder the pass owns outright (an eval set): everything under it not found goes.
    found.own(repo / "docs/adr")
    assert sorted(gone_paths(known, found)) == [
        str(repo / "docs/adr/gone.md"),
        str(repo / "docs/notes/gone.md"),
    ]


def test_a_rules_folder_left_out_loses_its_records_of_its_kind_only(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    refused = SourceDir("rule", rules, "/p", (), refused=True)
    found = walk([refused])
    known = {
        str(rules / "a.md"): record(rules / "a.md", "rule"),
        str(rules / "b.md"): record(rules / "b.md", "note"),
    }
    assert gone_paths(known, found) == [str(rules / "a.md")]


def test_the_watcher_routes_a_rule_under_a_notes_folder_to_its_rule_reader(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path)
    notes = SourceDir("note", repo, str(repo), (".md", ".mdc"), recursive=True)
    agents = SourceDir("rule", repo, str(repo), names=("AGENTS.md",))
    adrs = SourceDir("adr", repo / "docs/adr", str(repo), recursive=True)
    sources = [notes, agents, adrs]  # the notes folder first: order must not matter
    routed = route(sources, str(repo / "AGENTS.md"))
    assert routed is not None and routed.kind == "rule"
    routed = route(sources, str(repo / "docs/adr/0002-queues.md"))
    assert routed is not None and routed.kind == "adr"
    routed = route(sources, str(repo / "docs/notes/cache.md"))
    assert routed is not None and routed.kind == "note"
    # The walk agrees: each file once, as its own reader's.
    by_path = {str(f.path.relative_to(repo)): f.kind for f in walk(sources).files}
    assert by_path == {
        "AGENTS.md": "rule",
        "docs/adr/0001-postgres.md": "adr",
        "docs/adr/0002-queues.md": "adr",
        "docs/notes/cache.md": "note",
        "docs/notes/retries.md": "note",
    }


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Callback with id")  # watchdog, on a folder moved back
def test_a_watcher_of_the_notes_folder_leaves_other_readers_records(
    home: Path, tmp_path: Path, embedder: object
) -> None:
    # `precedents watch --notes REPO`: an edit to a rule, an ADR or a hidden team note
    # under it, a folder of ADRs moved, neither relabel nor remove their records (they
    # are other readers'; watches.route and Watcher._gone).
    repo = make_repo(tmp_path)
    settings = load_settings()
    sync(settings, embedder, Sources(project=str(repo)))
    store = open_store(settings.index_dir, embedder)  # type: ignore[arg-type]
    folders = Sources(notes=(repo,), project=str(repo))
    timing = WatchTiming(quiet_s=0.1, max_wait_s=2.0, rescan_s=3600.0)
    watcher = Watcher(settings, folders=folders, store=store, embedder=embedder, timing=timing)  # type: ignore[arg-type]
    with watcher:
        assert watcher.wait_ready(120)
        assert kinds(stored(settings), repo) == {
            **PROJECT_KINDS,
            "docs/notes/cache.md": "note",
            "docs/notes/retries.md": "note",
        }
        (repo / "AGENTS.md").write_text("# Agents\n\nRun `make check` before a commit.\n")
        (repo / "docs/adr/0002-queues.md").write_text(ADR.format(n=2, what="queue all mail"))
        (repo / ".precedents/notes/deploy.md").write_text(NOTE.format(what="deploy Mondays"))
        # A folder of ADRs moved out and back: the watcher looks at every record under it.
        (repo / "docs/adr").rename(tmp_path / "adr-away")
        (tmp_path / "adr-away").rename(repo / "docs/adr")
        write(repo / "docs/notes/new.md", NOTE.format(what="the new note arrives last"))
        new = str(repo / "docs/notes/new.md")
        assert wait_for(lambda: new in stored(settings), 60)
        time.sleep(1.0)  # the earlier events went quiet first; let their group finish
        assert watcher.stats.failures == 0
    assert kinds(stored(settings), repo) == {
        **PROJECT_KINDS,
        "docs/notes/cache.md": "note",
        "docs/notes/retries.md": "note",
        "docs/notes/new.md": "note",
    }


def wait_for(check: Callable[[], bool], timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.1)
    return check()


def test_a_notes_folder_named_through_a_symlink_still_leaves_the_adrs(
    home: Path, tmp_path: Path
) -> None:
    # ADR folders are found resolved; the notes folder lists files under its own spelling
    # (macOS's /tmp is a link to /private/tmp, a user's ~/code may be one).
    real = tmp_path / "real"
    real.mkdir()
    make_repo(real)
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    repo = tmp_path / "link" / "shop"
    found = walk(configured_sources(load_settings(), Sources(notes=(repo,), project=str(repo))))
    assert sorted(str(f.path.relative_to(repo)) for f in found.files) == [
        "docs/notes/cache.md",
        "docs/notes/retries.md",
    ]
