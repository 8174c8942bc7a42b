"""Rule globs cost what they may, and never on a hook's path (issue #28, glob bombs).

A 16 KB `globs:` took 5-60 s to compile, on the first file hook after the daemon
started; 10,000 rules were compiled again on the first file hook after every
index change. Now a rule over a cap is refused where it is read (`reindex`,
`check`), a stored one is compiled to nothing, and the daemon's refresh thread
compiles each snapshot's globs (reusing the previous snapshot's) while the
previous set serves. Real parts: LanceDB in a temporary folder, the real
daemon with the real model, the hook as Claude Code runs it; the 10,000 rules'
vectors are random (the file hook reads no vector), as in bench/file_hook.py.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("tests.conftest_daemon")
from precedents.rules.globs import (  # noqa: E402
    MAX_PATTERN_CHARS,
    MAX_PATTERNS,
    GlobCache,
    over_budget,
)
from precedents.rules.scope import FILES, MANUAL, TOO_LARGE, Scope, rule_scope  # noqa: E402
from tests.conftest_daemon import (  # noqa: E402
    file_json,
    run_hook,
    settings_for,
    start_daemon,
    stop_daemon,
    wait_ready,
)

pytest_plugins = ["tests.conftest_daemon"]

# 16 KB of `{a,b}/*x`: 5.5 s to compile on an idle machine before the caps.
BOMB = "{a,b}/*x" * 2000
RULES = 10_000
HOOK_S = 5.0  # generous: a few ms of matching, plus a hook process on a loaded machine


def test_a_scope_over_a_cap_is_refused_in_one_line() -> None:
    started = time.perf_counter()
    for value in (BOMB, ",".join(f"src/m{i}/**" for i in range(1000)), "{a,b}*" * 150):
        scope = rule_scope("cursor", "", {"globs": value, "description": "d"})
        assert scope.mode == MANUAL and scope.globs == () and not scope.attaches
        [warning] = scope.warnings
        assert TOO_LARGE in warning and "attached to no file" in warning
    assert time.perf_counter() - started < 1.0
    assert over_budget([BOMB]) == f"a pattern of 16,000 characters (at most {MAX_PATTERN_CHARS:,})"
    assert over_budget(["x"] * (MAX_PATTERNS + 1)) is not None
    assert "once braces are expanded" in (over_budget(["{a,b}*" * 150]) or "")
    # An always-apply Cursor rule ignores its globs, however large.
    assert rule_scope("cursor", "", {"globs": BOMB, "alwaysApply": True}).always
    # The largest real scope (tests/fixtures/rules-wild) is far inside every cap.
    assert rule_scope("claude", "", {"paths": ["src/**/*.java"] * 8}).attaches


def test_a_stored_scope_over_a_cap_compiles_to_nothing_fast() -> None:
    """An index written before the caps may hold one: matching it costs nothing."""
    scope = Scope("cursor", FILES, (BOMB, "src/api/**"))
    started = time.perf_counter()
    assert not scope.applies_to("src/api/a.ts") and not scope.could_name("a.ts")
    cache = GlobCache()
    assert Scope("cursor", FILES, (BOMB,)).compile(cache)
    assert time.perf_counter() - started < 1.0


def test_the_snapshot_budget_and_reuse() -> None:
    scopes = [Scope("cursor", FILES, (f"src/m{i}/**/*.ts",)) for i in range(100)]
    cache = GlobCache(budget=30 * 40)
    done = [s.compile(cache) for s in scopes]
    assert 20 <= sum(done) < 100 and cache.refused == 100 - sum(done)
    assert scopes[0].applies_to("src/m0/a/b.ts") and not scopes[-1].compiled
    again = GlobCache(cache)
    fresh = Scope("cursor", FILES, ("src/m0/**/*.ts",))
    assert fresh.compile(again) and again.compiled == 0  # reused, not compiled again
    assert fresh.applies_to("src/m0/x.ts")


def test_check_reports_a_glob_bomb_in_one_line(tmp_path: Path) -> None:
    from tests.check_repo import cli, new_repo

    repo = new_repo(tmp_path / "repo")
    rules = repo / ".cursor" / "rules"
    rules.mkdir(parents=True)
    (rules / "bomb.mdc").write_text(f'---\ndescription: d\nglobs: "{BOMB}"\n---\nbody\n')
    started = time.perf_counter()
    done = cli(repo, "check", ".cursor")
    took = time.perf_counter() - started
    assert done.returncode == 1 and "Traceback" not in done.stderr
    [line] = [line for line in done.stdout.splitlines() if "bomb.mdc" in line]
    assert TOO_LARGE in line and "attaches the rule to no file" in line
    assert took < 10, f"check took {took:.1f}s"  # before the caps: the bomb compiled, 5-60 s


# -- the real daemon and the file hook ---------------------------------------------


def _rule(repo: Path, name: str, scope: Scope, vec: Any) -> tuple[Any, ...]:
    from precedents.store import DocumentRecord, FileRecord

    path = f"{repo}/.cursor/rules/{name}.mdc"
    doc = DocumentRecord("rule", str(repo), path, name, f"rule {name}", scope=scope.to_json())
    file = FileRecord(path, "rule", str(repo), f"{abs(hash(path)):064x}", 10, 1, time.time())
    return file, doc, [f"rule {name}"], vec


@pytest.fixture
def many_rules(tmp_path: Path, embedder: Any) -> Iterator[tuple[Path, Path, Any]]:
    """A state folder whose index holds 10,000 rules, one stored 16 KB glob, `src/api/**`."""
    import numpy as np

    from precedents.store import Store

    home, repo = tmp_path / "state", tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    store = Store(settings_for(home).index_dir, embedder.model_id, embedder.dimension)
    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((RULES + 2, 1, embedder.dimension)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=2, keepdims=True)
    items = [
        _rule(repo, f"m{i:05d}", Scope("cursor", FILES, (f"src/m{i}/**/*.ts",)), vecs[i])
        for i in range(RULES)
    ]
    items.append(_rule(repo, "api", Scope("cursor", FILES, ("src/api/**",)), vecs[-2]))
    # As an index written before the caps holds it (rule_scope now refuses it).
    items.append(_rule(repo, "bomb", Scope("cursor", FILES, (BOMB,)), vecs[-1]))
    store.replace_documents(items)
    store.maybe_compact(force=True)
    yield home, repo, store


def _hook(home: Path, repo: Path, rel: str, session: str) -> tuple[float, bytes]:
    started = time.perf_counter()
    done = run_hook(home, file_json(repo / rel, repo, session), "file", timeout=60)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    return time.perf_counter() - started, done.stdout


def _until_given(home: Path, repo: Path, rel: str, rule: str, limit: float = 120) -> list[float]:
    """Ask the file hook about ``rel`` until it gives ``rule``; every call's seconds."""
    took: list[float] = []
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        seconds, out = _hook(home, repo, rel, f"s-{len(took)}-{time.monotonic()}")
        took.append(seconds)
        assert seconds < HOOK_S, f"the file hook took {seconds:.1f}s (calls: {took})"
        if f"/.cursor/rules/{rule}.mdc".encode() in out:
            return took
        time.sleep(0.2)
    raise AssertionError(f"{rule} was never given for {rel} ({len(took)} calls)")


@pytest.mark.slow
def test_the_file_hook_never_waits_on_compilation(
    many_rules: tuple[Path, Path, Any], embedder: Any
) -> None:
    home, repo, store = many_rules
    proc = start_daemon(home)
    try:
        wait_ready(home, proc)
        # Right after the start: quick answers, and the rule in scope once compiled.
        _until_given(home, repo, "src/api/users.ts", "api")
        _until_given(home, repo, "src/m1234/x/y.ts", "m01234")
        # An index change: a new rule; the old set serves while the new one compiles.
        store.replace_documents(
            [_rule(repo, "new", Scope("cursor", FILES, ("lib/**",)), _unit(embedder))]
        )
        _until_given(home, repo, "lib/a.ts", "new")
        _until_given(home, repo, "src/m77/z.ts", "m00077")
        seconds, out = _hook(home, repo, "a/b.ts", "bomb")
        assert seconds < HOOK_S and b"bomb.mdc" not in out
    finally:
        stop_daemon(proc)
    log = settings_for(home).log_dir / "daemon.log"
    assert "Traceback" not in (log.read_text() if log.exists() else "")


def _unit(embedder: Any) -> Any:
    import numpy as np

    vec = np.ones((1, embedder.dimension), dtype=np.float32)
    return vec / np.linalg.norm(vec)


def test_the_benchmark_runs() -> None:
    """bench/globs.py on a few rules: its figures are the ones docs/benchmarks.md quotes."""
    bench = Path(__file__).resolve().parents[1] / "bench" / "globs.py"
    import precedents

    env = {**os.environ, "PYTHONPATH": str(Path(precedents.__file__).parents[1])}
    done = subprocess.run(
        [sys.executable, str(bench), "--rules", "300", "--calls", "20"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert figures["rules"] == 300 and figures["hook_ms"]["p95"] >= figures["hook_ms"]["p50"]


def _row(i: int, scope: Scope, project: str = "/p") -> dict[str, Any]:
    return {
        "path": f"/p/.rules/r{i}.md",
        "kind": "rule",
        "project": project,
        "name": f"r{i}",
        "description": "",
        "date": "",
        "adr_id": "",
        "scope": scope.to_json(),
        "source_hash": str(i),
    }


def test_the_file_hooks_prefix_index_misses_no_rule() -> None:
    """Rules are looked up by their literal leading folders (Scope.prefixes): on random
    patterns and paths, exactly the rules a match against every rule finds."""
    from precedents.recall.files import FileScopes

    rng = random.Random(28)
    parts = ["src", "lib", "a", "b.ts", "*", "**", "*.ts", "{a,b}", "{a/b,c}", "[ab]", "."]
    parts += ["", "x?", "\\*", "\\/", "..", "a b", "src{,/a}"]
    rows, scopes = [], []
    for i in range(600):
        globs = tuple(
            ("!" if rng.random() < 0.15 else "")
            + ("/" if rng.random() < 0.1 else "")
            + "/".join(rng.choice(parts) for _ in range(rng.randint(1, 4)))
            + ("/" if rng.random() < 0.1 else "")
            for _ in range(rng.randint(1, 3))
        )
        base = rng.choice(["", "", "src", "src/a", "lib/x/y"])
        scope = Scope(rng.choice(["cursor", "claude", "windsurf"]), FILES, globs, base)
        rows.append(_row(i, scope))
        scopes.append(scope)
    files = FileScopes(rows)
    files.compile()
    names = ["src", "lib", "a", "b.ts", "c.ts", "x", "y", "ab", ".", "", "..", "a b"]
    for _ in range(3000):
        rel = "/".join(rng.choice(names) for _ in range(rng.randint(1, 6)))
        want = {r["path"] for r, s in zip(rows, scopes, strict=True) if s.applies_to(rel)}
        assert {s.record.path for s in files.attached(("/p",), rel)} == want, rel


def test_the_prefix_index_on_the_real_rules() -> None:
    """Every rules-wild project's rules, matched to its traced and tree files: the index
    finds what matching every rule finds."""
    from precedents.ingest.chunking import parse_note
    from precedents.recall.files import FileScopes
    from precedents.rules import formats

    wild = Path(__file__).resolve().parent / "fixtures" / "rules-wild"
    checked = 0
    for project in sorted(p for p in wild.iterdir() if (p / "tree").is_dir()):
        tree = project / "tree"
        rows, scopes = [], []
        for path in sorted(p for p in tree.rglob("*") if p.is_file()):
            placed = formats.classify(path, tree)
            if placed is None:
                continue
            front = parse_note(path.read_text(errors="replace"), path.stem).front
            scope = rule_scope(placed.format, placed.base, front)
            if scope.attaches:
                rows.append(_row(len(rows), scope))
                scopes.append(scope)
        files = FileScopes(rows)
        files.compile()
        rels = [str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file()]
        rels += ["src/a/b.ts", "web/src/App.tsx", "docs/x.md", "README.md"]
        for rel in rels:
            want = {r["path"] for r, s in zip(rows, scopes, strict=True) if s.applies_to(rel)}
            assert {s.record.path for s in files.attached(("/p",), rel)} == want, (project, rel)
            checked += bool(want)
    assert checked > 100


def test_a_prompt_decides_its_rules_fast_with_10000_rules() -> None:
    """Which rules a message must not rank: 10,000 rules scoped to files and a session
    that touched 256 files were 2.5 million glob matches (2.2 s per prompt)."""
    from precedents.recall.files import FileScopes

    rows = [_row(i, Scope("cursor", FILES, (f"src/m{i}/**/*.ts",))) for i in range(RULES)]
    files = FileScopes(rows)
    files.compile()
    touched = [f"src/m{i * 7}/x/{i}.ts" for i in range(256)]
    hidden: set[str] = set()

    def run() -> None:
        hidden.update(files.unranked(("/p",), touched, "and src/m9999/a.ts?", "/p"))

    assert _seconds(run) < 0.5
    shown = {f"/p/.rules/r{i * 7}.md" for i in range(256)} | {"/p/.rules/r9999.md"}
    assert hidden == {r["path"] for r in rows} - shown


def _seconds(action: Any) -> float:
    """CPU seconds of this process (a wall clock on a busy machine measures the others)."""
    start = time.process_time()
    action()
    return time.process_time() - start


def test_a_repository_of_many_rules_spends_the_budget_on_its_own() -> None:
    """Projects take turns: 3,000 rules of a hostile repository do not leave another
    project's rule uncompiled, whatever their paths sort as."""
    from precedents.recall.files import FileScopes

    hostile = [
        {**_row(i, Scope("cursor", FILES, (f"{'x' * 40}/m{i}/**",)), "/a"), "path": f"/a/r{i}"}
        for i in range(3_000)
    ]
    mine = {**_row(0, Scope("claude", FILES, ("src/**",)), "/z"), "path": "/z/rule.md"}
    files = FileScopes([*hostile, mine])
    cache = files.compile(budget=20_000)  # a few hundred of the hostile rules
    assert cache.refused > 2_000
    assert [s.record.path for s in files.attached(("/z",), "src/a.py")] == ["/z/rule.md"]


def test_reindex_reports_a_glob_bomb_in_one_line(tmp_path: Path) -> None:
    from precedents.ingest.indexer import Indexer
    from precedents.ingest.sources import Sources, configured_sources, walk
    from precedents.store import Store
    from tests.conftest import FakeEmbedder

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".cursor" / "rules").mkdir(parents=True)
    bomb = repo / ".cursor" / "rules" / "bomb.mdc"
    bomb.write_text(f'---\ndescription: d\nglobs: "{BOMB}"\n---\nUse tabs.\n')
    settings = settings_for(tmp_path / "state")
    emb = FakeEmbedder()
    store = Store(settings.index_dir, emb.model_id, emb.dimension)
    found = configured_sources(settings, Sources(project=str(repo)))
    report = Indexer(settings, store, emb).sync(walk(found))
    assert report.files_indexed == 1  # the rule is indexed, its scope is not
    [problem] = [p for p in report.problems if p.path == str(bomb)]
    assert TOO_LARGE in problem.reason and "\n" not in problem.reason
    assert len(problem.reason) < 200


def test_check_bounds_its_search_for_scopes_that_match_no_file(tmp_path: Path) -> None:
    """400 rules that may match anywhere, matched to 20,000 tracked files, were 8 million
    glob matches; a scope under a folder is matched to that folder's files only."""
    from precedents.check.runner import run
    from tests.check_repo import git, new_repo

    repo = new_repo(tmp_path / "repo")
    rules = repo / ".cursor" / "rules"
    rules.mkdir(parents=True)
    for i in range(400):
        (rules / f"r{i:03d}.mdc").write_text(f'---\ndescription: d\nglobs: "**/*.x{i}"\n---\nb\n')
    (rules / "zz-folder.mdc").write_text('---\ndescription: d\nglobs: "docs/gone/**"\n---\nb\n')
    for d in range(200):
        folder = repo / "src" / f"d{d}"
        folder.mkdir(parents=True)
        for f in range(100):
            (folder / f"f{f}.ts").touch()
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "many")
    report: list[Any] = []
    seconds = _seconds(lambda: report.append(run(all_files=True, cwd=repo)))
    assert seconds < 6.0, f"{seconds:.1f} s of CPU"  # ~2 s; 15 s before
    never = [f.path for f in report[0].findings if "matches no file" in f.message]
    assert ".cursor/rules/zz-folder.mdc" in never  # its folder's files: none, at no cost
    assert 40 <= len(never) < 401  # as many as the budget allowed
