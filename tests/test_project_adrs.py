"""A project's own ADR folder is indexed without config (issue #11, item 5): for every
project Claude Code was used in, and for `reindex --project PATH`."""

from __future__ import annotations

import json
from pathlib import Path

from precedents.config import load_settings
from precedents.ingest.sources import Sources, configured_sources, encode_project_path


def repo_with_adrs(tmp_path: Path) -> Path:
    repo = tmp_path / "shop"
    (repo / ".git").mkdir(parents=True)
    adrs = repo / "docs" / "adr"
    adrs.mkdir(parents=True)
    (adrs / "0001-use-postgres.md").write_text("# 1. Use Postgres\n\n## Status\n\nAccepted\n")
    return repo


def test_a_claude_code_project_brings_its_adr_folder(home: Path, tmp_path: Path) -> None:
    repo = repo_with_adrs(tmp_path)
    claude = load_settings().claude_dir
    folder = claude / "projects" / encode_project_path(str(repo))
    folder.mkdir(parents=True)
    line = {"type": "user", "cwd": str(repo / "src"), "entrypoint": "cli"}
    (folder / "session.jsonl").write_text(json.dumps(line) + "\n")
    adrs = [s for s in configured_sources(load_settings()) if s.kind == "adr"]
    assert [(s.root, s.project) for s in adrs] == [((repo / "docs" / "adr").resolve(), str(repo))]


def test_reindex_project_brings_its_adr_folder(home: Path, tmp_path: Path) -> None:
    repo = repo_with_adrs(tmp_path)
    found = configured_sources(load_settings(), Sources(project=str(repo / "src")))
    assert [s.root for s in found if s.kind == "adr"] == [(repo / "docs" / "adr").resolve()]
    # Named folders still mean "only these".
    notes = tmp_path / "notes"
    notes.mkdir()
    only = configured_sources(load_settings(), Sources(notes=(notes,), project=str(repo)))
    assert [s.kind for s in only] == ["note"]
