"""`precedents check` on real git repositories in temporary folders (issue #23, item 3).

Fixtures: tests/fixtures/check/ (secrets as slots filled here, ADR folders with one
error each, rule files with the front matter their agent misreads, clean ones).
What is measured is printed: secrets planted and missed, errors missed, the time
for ~100 staged files.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from precedents.check.model import Finding
from precedents.check.runner import run
from tests.check_repo import FIXTURES, Planted, cli, git, new_repo, plant


@pytest.fixture(autouse=True)
def _state(home: Path) -> None:
    """A private state folder (PRECEDENTS_HOME) for every run: `check` writes nothing
    there, and must not read the user's config."""


def _secret_lines(findings: list[dict[str, object]]) -> set[tuple[object, object]]:
    return {(f["path"], f["line"]) for f in findings if f["check"] == "secret"}


def test_every_staged_secret_is_found_from_the_index_and_none_is_printed(tmp_path: Path) -> None:
    planted = Planted()
    repo = tmp_path / "repo"
    repo.mkdir()
    where = plant(FIXTURES / "secrets", repo, planted)
    name_token = "hf_" + planted.token(34)
    named = repo / ".precedents" / "notes" / f"token-{name_token}.md"
    named.write_text("# Model hub\n\nThe token of the model hub.\n", encoding="utf-8")
    new_repo(repo)
    git(repo, "add", "-A")
    # The working tree no longer holds one secret; the index, which is committed, does.
    path, line = where["github_pat"]
    edited = repo / path
    edited.write_text(
        edited.read_text().replace(planted.values["github_pat"], "<removed>"), encoding="utf-8"
    )

    as_json = cli(repo, "check", "--json")
    as_text = cli(repo, "check")
    assert (as_json.returncode, as_text.returncode) == (1, 1), as_json.stderr
    findings = json.loads(as_json.stdout)
    found = _secret_lines(findings)
    missed = sorted(slot for slot, at in where.items() if at not in found)
    by_name = [f for f in findings if "in the file name" in str(f["message"])]
    print(
        f"\nplanted {len(where) + 1} secrets ({len(where)} kinds in text, 1 in a file name): "
        f"missed {len(missed) + (not by_name)}"
    )
    assert len(where) >= 20 and missed == [] and len(by_name) == 1
    assert "[MASKED:" in str(by_name[0]["path"]) and "[MASKED:" in as_text.stdout
    # Never printed: not a value, not a line of the private key, not the name's token.
    values = [*planted.values.values(), name_token]
    pieces = [p for v in values for p in v.split("\n") if "PRIVATE KEY" not in p]
    output = as_json.stdout + as_json.stderr + as_text.stdout + as_text.stderr
    assert [p for p in pieces if p in output] == []
    # From disk (what pre-commit passes), the edited file no longer carries it.
    on_disk = _secret_lines(json.loads(cli(repo, "check", "--json", path).stdout))
    assert (path, line) not in on_disk and (path, line) in found and len(on_disk) == 2


def _kind(finding: Finding) -> str:
    return finding.message.rsplit("(", 1)[-1].rstrip(")")


def test_adr_graph_errors_of_the_touched_folders_are_all_found(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    expected: dict[str, list[str]] = json.loads(
        (FIXTURES / "adr-errors" / "EXPECTED.json").read_text()
    )
    for case in expected:
        shutil.copytree(FIXTURES / "adr-errors" / case, repo / "cases" / case)
    git(repo, "add", "-A")
    report = run(cwd=repo)
    missed, stray = [], []
    for case, kinds in expected.items():
        mine = [f for f in report.findings if f.path.startswith(f"cases/{case}/")]
        errors = {_kind(f) for f in mine if f.level == "error"}
        missed += [f"{case}: {kind}" for kind in kinds if kind not in errors]
        stray += [f"{f.path}: {f.message}" for f in mine if not kinds]
    print(f"\nADR error fixtures: {sum(map(len, expected.values()))} planted, missed {len(missed)}")
    assert missed == [] and stray == []
    assert report.errors == len(expected) - 1  # one error each, the clean case none


def test_a_staged_deletion_that_breaks_a_chain_is_an_error(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    shutil.copytree(FIXTURES / "adr-errors" / "clean" / "docs", repo / "docs")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "adrs")
    assert run(cwd=repo).findings == []  # nothing staged
    git(repo, "rm", "-q", "docs/adr/0002-use-aurora.md")
    report = run(cwd=repo)
    assert [(f.path, f.level, _kind(f)) for f in report.findings] == [
        ("docs/adr/0001-use-postgres.md", "error", "dangling_link")
    ]


def test_every_rule_front_matter_fixture_is_found(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo", FIXTURES / "rules-bad")
    expected: dict[str, list[list[str]]] = json.loads((repo / "EXPECTED.json").read_text())
    git(repo, "add", "-A")
    report = run(cwd=repo)
    missed = [
        f"{path}: {level} {text}"
        for path, wanted in expected.items()
        for level, text in wanted
        if not any(
            f.path == path and f.level == level and text in f.message for f in report.findings
        )
    ]
    unexpected = [
        f"{f.path}: {f.message}"
        for f in report.findings
        if f.level == "error"
        and not any(f.path == p and text in f.message for p, w in expected.items() for _, text in w)
    ]
    print(
        f"\nrule fixtures: {sum(map(len, expected.values()))} planted "
        f"({sum(lv == 'error' for w in expected.values() for lv, _ in w)} errors), "
        f"missed {len(missed)}"
    )
    assert missed == [] and unexpected == []


def test_clean_rules_have_no_finding(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo", FIXTURES / "rules-good")
    git(repo, "add", "-A")
    report = run(cwd=repo)
    assert report.findings == [] and report.checked == 15


def test_exit_codes_and_misuse(tmp_path: Path) -> None:
    clean = new_repo(tmp_path / "clean", FIXTURES / "rules-good")
    git(clean, "add", "-A")
    ok = cli(clean, "check")
    assert ok.returncode == 0 and ok.stdout == ""
    assert ok.stderr == "15 file(s) checked, 3 other file(s) by name: 0 error(s), 0 warning(s)\n"

    warned = new_repo(tmp_path / "warned")
    (warned / ".cursor" / "rules").mkdir(parents=True)
    (warned / ".cursor" / "rules" / "manual.mdc").write_text("Prefer composition.\n")
    git(warned, "add", "-A")
    only_warnings = cli(warned, "check")
    assert only_warnings.returncode == 0
    assert only_warnings.stdout.startswith(".cursor/rules/manual.mdc:1: warning: ")

    plain = tmp_path / "not-a-repo"
    plain.mkdir()
    outside = cli(plain, "check")
    assert outside.returncode == 2
    assert outside.stderr == "precedents: not in a git repository: name the files to check\n"
    both = cli(clean, "check", "--all", "AGENTS.md")
    assert (
        both.returncode == 2 and both.stderr == "precedents: name files or pass --all, not both\n"
    )
    unknown = cli(clean, "check", "--nope")
    assert unknown.returncode == 2 and "No such option" in unknown.stderr
    # Files named outside any repository are checked from disk.
    (plain / "note.md").write_text("the admin password is Maple-Orbit-5521-q\n")
    named = cli(plain, "check", "note.md")
    assert named.returncode == 1 and named.stdout.startswith("note.md:1: error: secret (password)")


def test_bad_input_is_a_finding_never_a_traceback(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    (repo / "binary.md").write_bytes(b"# x\n\0\1\2 binary")
    (repo / "latin1.md").write_bytes("caf\xe9 password: Juniper-Wharf-8830\n".encode("latin-1"))
    (repo / ".cursor" / "rules").mkdir(parents=True)
    (repo / ".cursor" / "rules" / "broken.mdc").write_text("---\ndescription: [x\n---\nbody\n")
    (repo / "huge.txt").write_bytes(b"a" * (2 * 1024 * 1024 + 1))
    result = cli(
        repo, "check", "--json", "binary.md", "latin1.md", ".cursor", "huge.txt", "gone.md"
    )
    assert "Traceback" not in result.stderr and result.returncode == 1
    got = {(f["path"], f["level"], f["check"]) for f in json.loads(result.stdout)}
    assert got == {
        ("binary.md", "warning", "input"),
        ("latin1.md", "warning", "input"),
        ("latin1.md", "error", "secret"),
        (".cursor/rules/broken.mdc", "error", "rule"),
        ("huge.txt", "warning", "input"),
        ("gone.md", "error", "input"),
    }


def test_all_checks_every_tracked_rule_adr_and_team_note(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo", FIXTURES / "rules-good")
    shutil.copytree(FIXTURES / "adr-errors" / "dangling" / "docs", repo / "docs")
    notes = repo / ".precedents" / "notes"
    notes.mkdir(parents=True)
    shutil.copy(FIXTURES / "notes" / "timezones.md", notes)
    (repo / "README.md").write_text("the admin password is Maple-Orbit-5521-q\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "all")
    report = run(all_files=True, cwd=repo)
    # 15 rules, the ADR, the note; README.md is no rule, ADR or note: not --all's business.
    assert (report.mode, report.checked) == ("all", 17)
    assert [(f.path, _kind(f)) for f in report.findings] == [
        ("docs/adr/0001-use-kafka.md", "dangling_link")
    ]


def test_a_staged_near_duplicate_team_note_is_a_warning(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    notes = repo / ".precedents" / "notes"
    notes.mkdir(parents=True)
    for name in ("retry-http-clients.md", "retry-payments.md", "timezones.md"):
        shutil.copy(FIXTURES / "notes" / name, notes)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "notes")
    shutil.copy(
        FIXTURES / "near-duplicates" / "retry-http-clients--reworded.md", notes / "backoff.md"
    )
    shutil.copy(FIXTURES / "notes" / "feature-flags.md", notes)  # new, and like no other
    git(repo, "add", "-A")
    report = run(cwd=repo)
    assert [(f.path, f.level, f.check) for f in report.findings] == [
        (".precedents/notes/backoff.md", "warning", "duplicate")
    ]
    assert report.findings[0].message.startswith(
        "near-duplicate of .precedents/notes/retry-http-clients.md (similarity 0.7"
    )


def test_time_for_a_hundred_staged_files(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    notes = repo / ".precedents" / "notes"
    rules = repo / ".claude" / "rules"
    adrs = repo / "docs" / "adr"
    for folder in (notes, rules, adrs):
        folder.mkdir(parents=True)
    sources = sorted((FIXTURES / "notes").glob("*.md"))
    for i in range(34):
        text = sources[i % len(sources)].read_text()
        (notes / f"note-{i:03}.md").write_text(text.replace("---\n", f"---\nid: {i}\n", 1))
        (rules / f"rule-{i:03}.md").write_text(f"---\npaths: src/m{i}/**\n---\nRule {i}.\n")
        status = "Accepted" if i == 33 else f"Superseded by [{i + 2}]({i + 2:04}-step.md)"
        text = f"# {i + 1}. Step {i + 1}\n\nDate: 2024-01-01\n\n## Status\n\n{status}\n"
        (adrs / f"{i + 1:04}-step.md").write_text(text)
    git(repo, "add", "-A")
    started = time.perf_counter()
    command = cli(repo, "check")  # as pre-commit runs it: a new process, the scanner cold
    seconds = time.perf_counter() - started
    report = run(cwd=repo)
    print(
        f"\n{report.checked} staged files: `precedents check` {seconds:.2f} s end to end, "
        f"{report.seconds:.2f} s inside run() in this process"
    )
    assert command.returncode == 0, command.stdout + command.stderr
    assert report.checked == 102 and report.errors == 0
    assert seconds < 60  # generous: about 1.5 s on a 2-core machine
