"""Front matter from a hostile repository (issue #28): aliases, floods and depth refused.

A 400-byte block of eight nested YAML aliases expands to 43 million items for
whoever walks the value (`str(created)` in a date warning): it stalled the
watcher 15 s and `check` 10 s. Every front matter reader goes through
:func:`precedents.text.split_front_matter`; these tests reach it through the
real CLI (`reindex` with the real model, `check`) and directly with both loaders.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from precedents.text import (
    FAST_LOADER,
    MAX_FRONT_MATTER_CHARS,
    MAX_FRONT_MATTER_DEPTH,
    MAX_FRONT_MATTER_VALUES,
    SAFE_LOADER,
    split_front_matter,
)
from tests.team_repos import GIT_ENV, git, init_repo

LOADERS = [pytest.param(SAFE_LOADER, id="pure"), pytest.param(FAST_LOADER, id="C")]
ALIAS = "an anchor read again by an alias"


def bomb(levels: int = 8) -> str:
    """YAML whose `a{levels-1}` expands to 9**levels items: 9**8 = 43 million."""
    lines = ["a0: &a0 [x,x,x,x,x,x,x,x,x]"]
    lines += [f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def cli(cwd: Path, home: Path, *args: str, timeout: float) -> tuple[float, str, str, int]:
    """`precedents ARGS` as a user runs it: (seconds, stdout, stderr, exit code)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
    env.update(GIT_ENV, PRECEDENTS_HOME=str(home), PRECEDENTS_CLAUDE_DIR=str(home / "claude"))
    env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "precedents.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return time.perf_counter() - started, done.stdout, done.stderr, done.returncode


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A repository with an alias bomb in a team note's `created:` and a Windsurf rule's
    `trigger:`, each file 450 bytes."""
    repo = init_repo(tmp_path / "repo")
    notes = repo / ".precedents" / "notes"
    notes.mkdir(parents=True)
    (notes / "freeze.md").write_text(
        f"---\n{bomb()}created: *a7\n---\n# Deploy freeze\n\n"
        "No deploys on Fridays after noon; the zebra-quartz pipeline waits.\n"
    )
    rules = repo / ".windsurf" / "rules"
    rules.mkdir(parents=True)
    (rules / "tabs.md").write_text(f"---\n{bomb()}trigger: *a7\n---\nIndent with tabs.\n")
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=a@example.invalid", "commit", "-q", "-m", "hostile")
    return repo


def test_reindex_refuses_the_aliases_in_one_line_and_indexes_the_body(
    hostile: Path, tmp_path: Path
) -> None:
    home = tmp_path / "state"
    # Before the fix: 16 s here (two warnings each printed str() of 43 million items).
    took, out, err, code = cli(hostile, home, "reindex", "--repo", str(hostile), timeout=120)
    assert code == 0 and "Traceback" not in err
    note, rule = hostile / ".precedents/notes/freeze.md", hostile / ".windsurf/rules/tabs.md"
    lines = (out + err).splitlines()
    for path in (note, rule):
        [line] = [line for line in lines if str(path) in line]
        assert "broken front matter" in line and ALIAS in line and len(line) < 300
    # 3 s here with the model load; the lines above are what fails before the fix.
    assert took < 15, f"reindex took {took:.1f}s"
    took, out, _, code = cli(
        hostile, home, "query", "--json", "deploys on Fridays zebra-quartz", timeout=120
    )
    assert code == 0
    [found] = [r for r in json.loads(out)["results"] if r["path"] == str(note)]
    assert found["team"] and "zebra-quartz pipeline waits" in found["description"]


def test_check_refuses_the_aliases_fast(hostile: Path, tmp_path: Path) -> None:
    # Before the fix: 8 s, and the error quoted the expansion ("[[[[[[[['x', 'x'...").
    took, out, err, code = cli(hostile, tmp_path / "state", "check", "--all", timeout=120)
    assert code == 1 and "Traceback" not in err
    [line] = [line for line in out.splitlines() if line.startswith(".windsurf/rules/tabs.md")]
    assert ALIAS in line and "'x'" not in line
    assert took < 5, f"check took {took:.1f}s"  # 0.7 s here


@pytest.mark.parametrize("loader", LOADERS)
def test_an_alias_is_refused_even_a_harmless_one(loader: object) -> None:
    for raw in (bomb(), "base: &b {x: 1}\nother: *b\n", "a: &s text\nb: [*s]\n"):
        found = split_front_matter(f"---\n{raw}---\nbody\n", loader=loader, lenient=True)
        assert found.problem == "invalid_yaml" and found.body == "body\n"
        assert found.error is not None and found.error.startswith(ALIAS)
    anchor_only = split_front_matter("---\na: &b 1\n---\nbody\n", loader=loader)
    assert anchor_only.data == {"a": 1}  # an anchor nobody reads expands nothing


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize(
    ("raw", "error"),
    [
        (f"globs: [{','.join(['x'] * 1_000)}]\n", f"more than {MAX_FRONT_MATTER_VALUES:,}"),
        (f"globs: [{','.join(['x'] * 100_000)}]\n", f"longer than {MAX_FRONT_MATTER_CHARS:,}"),
        ("paths:\n" + "  - x\n" * 1_000, f"more than {MAX_FRONT_MATTER_VALUES:,} values"),
        ("a: " + "[" * 40 + "]" * 40 + "\n", f"more than {MAX_FRONT_MATTER_DEPTH} levels"),
        ("".join(f"{' ' * i}k{i}:\n" for i in range(40)), f"more than {MAX_FRONT_MATTER_DEPTH}"),
        (
            f"description: {'x' * MAX_FRONT_MATTER_CHARS}\n",
            f"longer than {MAX_FRONT_MATTER_CHARS:,}",
        ),
        ("a: " + "[" * 5_000 + "]" * 5_000 + "\n", ""),  # the parser's own limit: any error
    ],
    ids=["flow-list", "huge-list", "block-list", "flow-depth", "block-depth", "long", "very-deep"],
)
def test_a_flood_of_values_is_one_problem_fast(loader: object, raw: str, error: str) -> None:
    text = f"---\n{raw}---\nbody\n"
    started = time.perf_counter()
    found = split_front_matter(text, loader=loader, lenient=True)
    took = time.perf_counter() - started
    assert found.problem == "invalid_yaml" and found.data is None and found.body == "body\n"
    assert found.error is not None and error in found.error and "\n" not in found.error
    assert took < 2, f"{took:.2f}s"  # ~0.1 s on a busy 2-core machine


@pytest.mark.parametrize("loader", LOADERS)
def test_cursor_globs_and_real_front_matter_still_read(loader: object) -> None:
    # `*` opens an alias in YAML; Cursor's unquoted globs fall back to plain pairs.
    cursor = split_front_matter(
        "---\ndescription: API\nglobs: **/*.ts, src/**\nalwaysApply: false\n---\nb\n",
        loader=loader,
        lenient=True,
    )
    assert cursor.data == {"description": "API", "globs": "**/*.ts, src/**", "alwaysApply": False}
    quoted = split_front_matter('---\nglobs: ["**/*.ts", "*.md"]\n---\nb\n', loader=loader)
    assert quoted.data == {"globs": ["**/*.ts", "*.md"]}
    # An alias is no Cursor glob: the refusal stands, no plain pairs.
    refused = split_front_matter("---\na: &x 1\nb: *x\n---\nb\n", loader=loader, lenient=True)
    assert refused.problem == "invalid_yaml"


def test_an_adr_folder_of_records_naming_hundreds_of_others_builds_fast(tmp_path: Path) -> None:
    """Every record superseding and amending 120 others (inside the front matter caps):
    the graph's relation lists were deduplicated by scanning, quadratic in what one
    record is named by (1,000 such records: 102 s)."""
    from precedents.adr_graph import build_graph

    folder = tmp_path / "docs" / "adr"
    folder.mkdir(parents=True)
    ids = ",".join(str(i) for i in range(1, 121))
    for n in range(1, 301):
        (folder / f"{n:04d}-x.md").write_text(
            f"---\nstatus: accepted\nsupersedes: [{ids}]\namends: [{ids}]\n---\n# {n}. T\n\nB.\n"
        )
    started = time.process_time()
    graph = build_graph(folder)
    took = time.process_time() - started
    assert len(graph.records) == 300
    assert took < 4.0, f"{took:.1f} s of CPU"  # ~0.7 s; 11 s before
