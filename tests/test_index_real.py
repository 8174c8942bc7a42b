"""The foundation with the real parts: bundled model, LanceDB on disk, real transcripts, the CLI."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from precedents.config import load_settings
from precedents.ingest.indexer import Indexer, IndexReport
from precedents.ingest.sources import (
    Sources,
    configured_sources,
    encode_project_path,
    project_keys,
    walk,
)
from precedents.models.embedding import canonical_model_id
from precedents.recall import search
from precedents.store import Store, open_store

from .conftest import REPO, shared_path

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
# Built at run time so no real-looking token sits in the source.
GH_TOKEN = "ghp_" + "".join("Xk9mQ2vL7pRt4wZ8yB3nC6dF1gH5jK0sA"[i % 33] for i in range(36))
PG_PASSWORD = "s3cr3t-Pa55w0rd-xyz"


def sync(embedder: object, project: str = "/proj", **dirs: list[Path]) -> tuple[IndexReport, Store]:
    settings = load_settings()
    store = open_store(settings.index_dir, embedder)  # type: ignore[arg-type]
    sources = configured_sources(settings, Sources(project=project, **dirs))  # type: ignore[arg-type]
    return Indexer(settings, store, embedder).sync(walk(sources)), store  # type: ignore[arg-type]


def dev_notes(tmp_path: Path, count: int = 40) -> Path:
    src = shared_path("eval", "dev", "notes")
    dst = tmp_path / "notes"
    dst.mkdir()
    for path in sorted(src.glob("*.md"))[:count]:
        shutil.copy(path, dst / path.name)
    return dst


def test_real_model_dedup_edit_delete(home: Path, tmp_path: Path, embedder: object) -> None:
    notes = dev_notes(tmp_path)
    first, store = sync(embedder, notes=[notes])
    assert first.files_indexed == 40 and first.chunks_embedded == store.count()

    again, _ = sync(embedder, notes=[notes])
    assert again.chunks_embedded == 0 and again.files_unchanged == 40

    target = notes / "git__stashing-untracked-files.md"
    target.write_text(target.read_text() + "\nAlso: `git stash -u` is the short form.\n")
    edited, store = sync(embedder, notes=[notes])
    assert edited.files_indexed == 1
    assert edited.chunks_embedded == store.files()[str(target)].chunks

    query = embedder.encode_queries(  # type: ignore[attr-defined]
        ["git stash left my brand-new files in the working tree, how do I shelve those too?"]
    )[0]
    hits = search(store, query, project_keys("/proj"), k=3)
    assert hits[0].record.path == str(target)

    target.unlink()
    _, store = sync(embedder, notes=[notes])
    hits = search(store, query, project_keys("/proj"), k=10)
    assert str(target) not in {h.record.path for h in hits}


def read_store_bytes(index_dir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in index_dir.rglob("*") if p.is_file())


def test_secrets_are_masked_before_storage(home: Path, tmp_path: Path, embedder: object) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "deploy.md").write_text(
        "---\nname: Deploy credentials\ndescription: where the deploy keys live\n---\n"
        f"Use the CI user. export AWS_ACCESS_KEY_ID={AWS_KEY}\n"
        f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n"
        + "filler text. "
        * 60
        + f"\nThe bot token is {GH_TOKEN} and the db is "
        f"postgres://app:{PG_PASSWORD}@db.internal:5432/shop\n"
        "Commit 4f9c2a1e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a39 fixed it (uuid "
        "123e4567-e89b-12d3-a456-426614174000).\n"
    )
    convs = tmp_path / "convs"
    convs.mkdir()
    lines = [
        {
            "type": "user",
            "entrypoint": "cli",
            "cwd": "/proj",
            "sessionId": "s1",
            "timestamp": "2026-11-01T10:00:00Z",
            "uuid": "u1",
            "message": {"role": "user", "content": f"my key is {AWS_KEY}, why does boto fail?"},
        },
        {
            "type": "assistant",
            "entrypoint": "cli",
            "sessionId": "s1",
            "uuid": "a1",
            "timestamp": "2026-11-01T10:00:05Z",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Set DB_PASSWORD={PG_PASSWORD} and token {GH_TOKEN}."}
                ],
            },
        },
    ]
    (convs / "s1.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    real = shared_path("claude-code", "claude-code_v2.1.197_cli_interactive.jsonl")
    shutil.copy(real, convs / real.name)

    report, store = sync(embedder, notes=[notes], conversations=[convs])
    assert report.files_indexed == 3
    store.maybe_compact(force=True)
    raw = read_store_bytes(load_settings().index_dir)
    for secret in (AWS_KEY, AWS_SECRET, GH_TOKEN, PG_PASSWORD):
        assert secret.encode() not in raw, secret
    texts = " ".join(r["text"] for r in store._chunks.to_arrow().to_pylist())
    assert "[MASKED:" in texts
    assert "4f9c2a1e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a39" in texts  # git hash untouched
    assert "123e4567-e89b-12d3-a456-426614174000" in texts  # uuid untouched


def test_automated_sessions_and_injected_context_are_not_stored(
    home: Path, tmp_path: Path, embedder: object
) -> None:
    convs = tmp_path / "convs"
    convs.mkdir()
    for path in shared_path("claude-code").glob("*.jsonl"):
        shutil.copy(path, convs / path.name)
    report, store = sync(embedder, conversations=[convs])
    files = store.files()
    for name in (
        "claude-code_v2.1.197_sdkcli_hook-context.jsonl",
        "rainforest-mind_v2.1.293_sdkcli_prompt-submit.jsonl",
        "rainforest-mind_v2.1.293_sdkcli_agente-pai.jsonl",
    ):
        assert files[str(convs / name)].chunks == 0, name
    assert report.skipped_sessions >= 3
    interactive = str(convs / "claude-code_v2.1.197_cli_interactive.jsonl")
    assert files[interactive].chunks > 0
    rows = store._chunks.to_arrow().to_pylist()
    texts = " ".join(r["text"] for r in rows)
    assert "hook additional context" not in texts.lower()
    assert "Possibly related past records" not in texts
    assert "stop git tracking" in texts  # the real prompt is there
    assert {r["path"] for r in rows if "sdkcli" in r["path"]} == set()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "precedents.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=300,
    )


def test_cli_reindex_status_query_and_state_modes(home: Path, tmp_path: Path) -> None:
    notes = dev_notes(tmp_path, count=20)
    (tmp_path / ".git").mkdir()  # a query from a subfolder searches the git root's project
    (notes / "empty.md").write_text("")
    (notes / "binary.md").write_bytes(b"\x00\x01\x02")
    out = run_cli("reindex", "--notes", str(notes), "--project", str(tmp_path), "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["files_indexed"] == 21 and report["chunks_embedded"] > 20
    assert sorted(Path(p["path"]).name for p in report["problems"]) == ["binary.md", "empty.md"]
    assert "Traceback" not in out.stderr

    assert mode(home) == 0o700
    for path in home.rglob("*"):
        assert mode(path) == (0o700 if path.is_dir() else 0o600), path

    out = run_cli(
        "query",
        "I accidentally committed a secrets file, make git forget it but keep it",
        "--project",
        str(tmp_path / "sub"),
        "--json",
        "-k",
        "3",
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["results"][0]["kind"] == "note"
    assert set(data["results"][0]) >= {"kind", "project", "path", "name", "description", "score"}

    out = run_cli("status", "--json")
    info = json.loads(out.stdout)
    assert info["kinds"]["note"]["documents"] == 20  # the empty file has no document
    assert info["indexed_model"] == canonical_model_id("sentence-transformers/all-MiniLM-L6-v2")
    assert info["device"] == "cpu" and info["last_indexed"]
    assert info["model_load_seconds"] > 0 and info["dimension"] == 384


def test_cli_user_mistakes_exit_2_with_one_line(home: Path, tmp_path: Path) -> None:
    out = run_cli("reindex", "--notes", str(tmp_path / "nope"))
    assert out.returncode == 2 and "no such folder" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1

    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("model = [unclosed\n")
    out = run_cli("status")
    assert out.returncode == 2 and "not valid TOML" in out.stderr and "Traceback" not in out.stderr
    (home / "config.toml").unlink()

    notes = tmp_path / "n"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nnote")
    out = run_cli("reindex", "--notes", str(notes), "--model", "no-such-org/no-such-model")
    assert out.returncode == 2 and "precedents setup" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1

    out = run_cli("query", "anything at all")
    assert out.returncode == 1 and "reindex" in out.stderr


def test_claude_code_folders_are_discovered(home: Path, tmp_path: Path, embedder: object) -> None:
    repo = tmp_path / "work" / "shop"
    (repo / ".git").mkdir(parents=True)
    claude = Path(os.environ["PRECEDENTS_CLAUDE_DIR"])
    folder = claude / "projects" / encode_project_path(str(repo))
    (folder / "memory").mkdir(parents=True)
    (folder / "memory" / "money.md").write_text(
        "---\nname: Money is integer cents\ndescription: never floats for prices\n---\nUse ints."
    )
    (folder / "memory" / "MEMORY.md").write_text("- [money](money.md)\n")
    line = {
        "type": "user",
        "entrypoint": "cli",
        "cwd": str(repo / "src"),
        "sessionId": "s",
        "message": {"role": "user", "content": "hello there, refactor the cart"},
    }
    (folder / "s.jsonl").write_text(json.dumps(line) + "\n")
    settings = load_settings()
    sources = configured_sources(settings)
    kinds = {(s.kind, s.project) for s in sources}
    assert ("note", str(repo)) in kinds and ("conversation", str(repo)) in kinds
    store = open_store(settings.index_dir, embedder)  # type: ignore[arg-type]
    Indexer(settings, store, embedder).sync(walk(sources))  # type: ignore[arg-type]
    assert str(folder / "memory" / "MEMORY.md") not in store.files()
    vec = embedder.encode_queries(["can I store prices as floats?"])[0]  # type: ignore[attr-defined]
    hits = search(store, vec, project_keys(str(repo)), k=2)
    assert hits[0].record.name == "Money is integer cents"


def test_make_run_demo_corpus_paths_exist() -> None:
    for sub in ("notes", "rules", "adr"):
        assert any((REPO / "examples" / sub).glob("*.md")), sub


def test_setup_says_clearly_when_it_cannot_download(home: Path) -> None:
    # A closed local port stands in for the missing network: fails fast, same path.
    env = {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_ETAG_TIMEOUT": "2"}
    out = run_cli("setup", "--model", "BAAI/bge-m3", env=env)
    assert out.returncode == 1
    assert "could not download 'BAAI/bge-m3'" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    out = run_cli("setup", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["dimension"] == 384


def test_query_all_projects_and_the_shared_rules_hint(home: Path, tmp_path: Path) -> None:
    notes = dev_notes(tmp_path, count=10)
    (tmp_path / "repo").mkdir()  # a project that is no folder is refused (issue #29)
    out = run_cli("reindex", "--notes", str(notes), "--project", str(tmp_path / "repo"))
    assert out.returncode == 0, out.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = run_cli("query", "git stash", "--json", cwd=elsewhere)
    assert json.loads(out.stdout)["results"] == []
    out = run_cli("query", "git stash", "--all", "--json", "-k", "2", cwd=elsewhere)
    results = json.loads(out.stdout)["results"]
    assert len(results) == 2 and results[0]["project"] == str(tmp_path / "repo")
    out = run_cli("query", "git stash", "--all", "--project", str(elsewhere))
    assert out.returncode == 2 and "--all" in out.stderr


def test_a_damaged_store_is_reported_then_rebuilt(home: Path, tmp_path: Path) -> None:
    notes = dev_notes(tmp_path, count=5)
    args = ("reindex", "--notes", str(notes), "--project", str(tmp_path))
    assert run_cli(*args).returncode == 0
    index = home / "index"
    for data in index.glob("*.lance/data/*.lance"):
        data.write_bytes(b"not a lance file")  # a disk error or a crash mid-write
    for cmd in (("status",), ("query", "git stash", "--project", str(tmp_path))):
        out = run_cli(*cmd)
        assert out.returncode == 1 and "damaged" in out.stderr, out.stderr
        assert len(out.stderr.strip().splitlines()) == 1
    out = run_cli(*args, "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["files_indexed"] == 5
    assert any("rebuilt" in p["reason"] for p in report["problems"])
    out = run_cli("query", "git stash", "--project", str(tmp_path), "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["results"]
