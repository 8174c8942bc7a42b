"""Data checks for tests/fixtures/rules-wild (see its README.md).

Real agent rule files from public repositories, each project at its upstream paths
under tree/, with traces (file touched -> rules the file hook gives, labelled by
label.mjs with picomatch) and sessions. These tests check the data only: the files
are byte-for-byte the upstream blobs, every label points at a rule of the tree,
the coverage the set promises holds, no excluded repository is used, and no rule
file is also a file of the evaluation or training sets. No product code is imported.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
WILD = HERE / "fixtures" / "rules-wild"
REPO_ROOT = HERE.parent

PROJECTS = sorted(p.name for p in WILD.iterdir() if (p / "SOURCE.json").is_file())

TOOLS = {"Read", "Edit", "Write", "MultiEdit", "NotebookEdit"}
FORMATS = {
    "cursor",
    "cursorrules",
    "claude",
    "claude-md",
    "copilot",
    "copilot-instructions",
    "windsurf",
    "cline",
    "agents-md",
}
# Not a rule: `.claude/CLAUDE.md`, the project's memory, kept to show it is not taken for one.
MEMORY = "claude-memory"
MODES = {"always", "files", "requested", "files+requested", "manual"}
FILE_HOOK_MODES = {"files", "files+requested"}
OPEN_LICENCES = {
    "MIT",
    "Apache-2.0",
    "BSD-2-Clause",
    "BSD-3-Clause",
    "MPL-2.0",
    "ISC",
    "CC0-1.0",
    "CC-BY-4.0",
    "Unlicense",
}
# every format in at least this many projects (Windsurf and Cline are rarer)
MIN_PROJECTS_PER_FORMAT = {f: 5 for f in FORMATS} | {"windsurf": 3, "cline": 3}

FIXED_EXCLUDED = {
    "patrickjs/awesome-cursorrules",
    "github/awesome-copilot",
    "uber-go/guide",
    "thoughtbot/guides",
    "ivangrynenko/cursorrules",
    "laravel/boost",
    "jbranchaud/til",
}
SKIP_DIRS = {
    ".git",
    "node_modules",
    ".venv",
    "venv",
    "vendor",
    "dist",
    "build",
    "target",
    "__pycache__",
}


def _shared_root() -> Path | None:
    for cand in (REPO_ROOT / "shared", REPO_ROOT.parent / "shared"):
        if cand.is_dir():
            return cand
    return None


def _source(name: str) -> dict[str, Any]:
    return json.loads((WILD / name / "SOURCE.json").read_text(encoding="utf-8"))


def _jsonl(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _traces(name: str) -> list[dict[str, Any]]:
    return _jsonl(WILD / name / "TRACES.jsonl")


def _sessions(name: str) -> list[dict[str, Any]]:
    path = WILD / name / "SESSIONS.jsonl"
    return _jsonl(path) if path.is_file() else []


def _blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _content_keys(data: bytes) -> tuple[str, str]:
    text = " ".join(data.decode("utf-8", errors="replace").split())
    normalised = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return hashlib.sha256(data).hexdigest(), "ws:" + normalised


def _repo_names(source_json: Path) -> set[str]:
    """owner/name of a SOURCE.json of the ADR sets ('repo' may carry a remark after the name)."""
    data = json.loads(source_json.read_text(encoding="utf-8"))
    names = set()
    repo = data.get("repo")
    if isinstance(repo, str):
        m = re.match(r"\s*([\w.-]+/[\w.-]+)", repo)
        if m:
            names.add(m.group(1).lower())
    url = data.get("url")
    if isinstance(url, str):
        m = re.search(r"github\.com/([\w.-]+/[\w.-]+)", url)
        if m:
            names.add(m.group(1).lower().removesuffix(".git"))
    return names


def _excluded_repos() -> set[str]:
    names = set(FIXED_EXCLUDED)
    folders = [HERE / "fixtures" / "adr-wild"]
    shared = _shared_root()
    if shared is not None:
        folders.append(shared / "adr-corpora")
    for folder in folders:
        if folder.is_dir():
            for sj in sorted(folder.glob("*/SOURCE.json")):
                names |= _repo_names(sj)
    return names


def _files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


# ----------------------------------------------------------------- the set as a whole


def test_at_least_40_projects() -> None:
    assert len(PROJECTS) >= 40, PROJECTS
    repos = [_source(n)["repo"].lower() for n in PROJECTS]
    assert len(set(repos)) == len(repos), "a repository appears twice"


def test_readme_and_labeller_present() -> None:
    readme = (WILD / "README.md").read_text(encoding="utf-8")
    assert (WILD / "label.mjs").is_file()
    assert "picomatch" in readme
    assert "Cases the doc had to settle" in readme
    for name in PROJECTS:
        assert _source(name)["repo"] in readme, f"{name} missing from the README table"


def test_every_format_occurs_in_enough_projects() -> None:
    projects_by_format: dict[str, set[str]] = {f: set() for f in FORMATS}
    for name in PROJECTS:
        for f in _source(name)["files"]:
            if f["format"] != MEMORY:
                projects_by_format[f["format"]].add(name)
    for fmt, minimum in MIN_PROJECTS_PER_FORMAT.items():
        assert len(projects_by_format[fmt]) >= minimum, (fmt, sorted(projects_by_format[fmt]))


def test_file_scoped_rules_are_well_represented() -> None:
    """Traces hit rules of every file-scoped kind, in several projects each."""
    hit_projects: dict[str, set[str]] = {}
    for name in PROJECTS:
        fmt = {f["path"]: f["format"] for f in _source(name)["files"]}
        for t in _traces(name):
            for r in t["expected"]:
                hit_projects.setdefault(fmt[r], set()).add(name)
    for kind in ("cursor", "claude", "copilot-instructions", "windsurf", "agents-md", "claude-md"):
        assert len(hit_projects.get(kind, set())) >= 3, (kind, hit_projects.get(kind))


def test_read_edit_write_all_occur() -> None:
    tools: Counter[str] = Counter()
    for name in PROJECTS:
        tools.update(t["tool"] for t in _traces(name))
    assert {"Read", "Edit", "Write"} <= set(tools), tools


def test_sessions_in_at_least_10_projects() -> None:
    with_sessions = [n for n in PROJECTS if _sessions(n)]
    assert len(with_sessions) >= 10, with_sessions


def test_no_excluded_repository() -> None:
    excluded = _excluded_repos()
    assert "uber-go/guide" in excluded
    used = {_source(n)["repo"].lower() for n in PROJECTS}
    assert not used & excluded, sorted(used & excluded)


def test_no_rule_file_is_a_file_of_the_eval_or_training_sets() -> None:
    roots = [REPO_ROOT / "research" / "data"]
    shared = _shared_root()
    if shared is not None:
        roots.append(shared / "eval")  # hashed only, never read otherwise
    reference: dict[str, Path] = {}
    for root in roots:
        if root.is_dir():
            for p in _files_under(root):
                for key in _content_keys(p.read_bytes()):
                    reference[key] = p
    assert reference, "nothing to compare against"
    clashes = []
    for name in PROJECTS:
        for f in _source(name)["files"]:
            data = (WILD / name / "tree" / f["path"]).read_bytes()
            for key in _content_keys(data):
                if key in reference:
                    clashes.append((name, f["path"], str(reference[key])))
    assert not clashes, clashes


# ----------------------------------------------------------------- per project


@pytest.mark.parametrize("name", PROJECTS)
def test_project_layout(name: str) -> None:
    folder = WILD / name
    src = _source(name)
    owner, repo = src["repo"].split("/")
    assert name == f"{owner}__{repo}"
    assert re.fullmatch(r"[0-9a-f]{40}", src["commit"]), src["commit"]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", src["date"])
    assert src["licence"] in OPEN_LICENCES, src["licence"]
    licence = folder / src["licence_file"]
    assert licence.is_file() and licence.stat().st_size > 100
    assert (folder / "tree").is_dir()
    assert (folder / "TRACES.jsonl").is_file()
    assert src["files"], "no rule file"


@pytest.mark.parametrize("name", PROJECTS)
def test_files_are_the_upstream_blobs(name: str) -> None:
    tree = WILD / name / "tree"
    src = _source(name)
    listed = set()
    for f in src["files"]:
        assert f["format"] in FORMATS | {MEMORY}, f
        path = tree / f["path"]
        assert path.is_file() and not path.is_symlink(), f["path"]
        data = path.read_bytes()
        assert len(data) == f["bytes"], f["path"]
        assert _blob_sha1(data) == f["blob"], f["path"]
        assert len(data) <= 64 * 1024, f["path"]
        listed.add(f["path"])
    on_disk = {p.relative_to(tree).as_posix() for p in _files_under(tree)}
    assert on_disk == listed, sorted(on_disk ^ listed)


@pytest.mark.parametrize("name", PROJECTS)
def test_rule_files_sit_where_their_format_says(name: str) -> None:
    for f in _source(name)["files"]:
        path, fmt = f["path"], f["format"]
        parts = path.split("/")
        assert not set(parts[:-1]) & SKIP_DIRS, path
        expected_shape = {
            "cursor": r"(.+/)?\.cursor/rules/.+\.mdc?",
            "cursorrules": r"\.cursorrules",
            "claude": r"(.+/)?\.claude/rules/.+\.md",
            "claude-md": r".+/CLAUDE(\.local)?\.md",
            "copilot": r"\.github/copilot-instructions\.md",
            "copilot-instructions": r"\.github/instructions/.+\.instructions\.md",
            "windsurf": r"(.+/)?\.windsurf/rules/.+\.md",
            "cline": r"\.clinerules(/.+\.md)?",
            "agents-md": r"(.+/)?AGENTS\.md",
            MEMORY: r"\.claude/CLAUDE(\.local)?\.md",
        }[fmt]
        assert re.fullmatch(expected_shape, path), (fmt, path)


@pytest.mark.parametrize("name", PROJECTS)
def test_modes_cover_every_rule(name: str) -> None:
    src = _source(name)
    # `.claude/CLAUDE.md` is the project's memory (Claude Code loads it like the root's):
    # kept in the tree to show it is not taken for a rule, and given no mode.
    paths = {f["path"] for f in src["files"] if f["format"] != MEMORY}
    assert set(src["modes"]) == paths
    assert set(src["modes"].values()) <= MODES
    for path, mode in src["modes"].items():
        if mode in FILE_HOOK_MODES:
            assert src["scopes"].get(path), path
    fmt = {f["path"]: f["format"] for f in src["files"]}
    for path, mode in src["modes"].items():
        if fmt[path] in ("cursorrules", "copilot"):
            assert mode == "always", path
        if fmt[path] in ("claude-md", "agents-md"):
            assert mode == ("always" if "/" not in path else "files"), path


@pytest.mark.parametrize("name", PROJECTS)
def test_traces(name: str) -> None:
    src = _source(name)
    rules = {f["path"] for f in src["files"]}
    traces = _traces(name)
    assert 15 <= len(traces) <= 40, len(traces)
    tools = Counter(t["tool"] for t in traces)
    assert {"Read", "Edit", "Write"} <= set(tools), tools
    for t in traces:
        assert set(t) <= {"tool", "file", "expected", "note"}, t
        assert t["tool"] in TOOLS, t
        f = t["file"]
        assert f and not f.startswith(("/", "./")) and ".." not in f.split("/"), f
        assert t["expected"] == sorted(set(t["expected"])), t
        for r in t["expected"]:
            assert r in rules, (f, r)
            assert src["modes"][r] in FILE_HOOK_MODES, (f, r, src["modes"][r])
            assert (WILD / name / "tree" / r).is_file(), r
    files = [t["file"] for t in traces]
    assert len(files) == len(set(files)), "a file is touched twice in TRACES"


@pytest.mark.parametrize("name", [n for n in PROJECTS if (WILD / n / "SESSIONS.jsonl").is_file()])
def test_sessions(name: str) -> None:
    src = _source(name)
    rules = {f["path"] for f in src["files"]}
    sessions = _sessions(name)
    assert sessions
    ids = [s["id"] for s in sessions]
    assert len(ids) == len(set(ids))
    for s in sessions:
        touches = s["touches"]
        assert 20 <= len(touches) <= 60, (s["id"], len(touches))
        files = [t["file"] for t in touches]
        assert len(set(files)) < len(files), "a session with no repeated file"
        for t in touches:
            assert t["tool"] in TOOLS, t
            for r in t.get("expected", []):
                assert r in rules and src["modes"][r] in FILE_HOOK_MODES, (s["id"], t)
