"""`precedents check` measured on real text: the repository's own pages, the real rule
files of tests/fixtures/rules-wild, near-duplicate team notes made for it
(tests/fixtures/check/notes and near-duplicates), and the ADRs of
tests/fixtures/adr-wild. The figures are printed and are the ones docs/check.md gives.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from pathlib import Path

import pytest

from precedents.check.duplicates import THRESHOLD, Terms, similarity
from precedents.check.globs import glob_problems
from precedents.check.rules import rule_findings
from precedents.check.runner import run
from precedents.check.secrets import ALLOW, placeholder, text_findings
from precedents.rules.formats import classify
from precedents.secrets.mask import find_secrets
from tests.check_repo import FIXTURES, REPO

WILD = REPO / "tests" / "fixtures" / "rules-wild"
ADR_WILD = REPO / "tests" / "fixtures" / "adr-wild"


def test_no_finding_on_the_repositorys_own_pages(home: Path) -> None:
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    seen: Counter[str] = Counter()
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for span in find_secrets(text):
            line = text[text.rfind("\n", 0, span.start) + 1 : text.find("\n", span.start)]
            seen[
                "placeholder" if placeholder(text, span) else "allowed" if ALLOW in line else "left"
            ] += 1
    report = run(["docs", "README.md"], cwd=REPO)
    print(
        f"\n{report.checked} pages: the detector finds {sum(seen.values())} values: "
        f"{seen['placeholder']} placeholders, {seen['allowed']} on lines marked `{ALLOW}`, "
        f"{seen['left']} left; findings {len(report.findings)}"
    )
    assert report.checked == len(pages) and report.findings == [] and seen["left"] == 0


def test_the_real_rule_files_of_rules_wild() -> None:
    if not WILD.is_dir():
        pytest.skip("tests/fixtures/rules-wild is missing")
    levels: Counter[str] = Counter()
    errors: list[str] = []
    files = 0
    for tree in sorted(WILD.glob("*/tree")):
        for path in sorted(p for p in tree.rglob("*") if p.is_file()):
            placed = classify(path, tree)
            if placed is None:
                continue
            files += 1
            rel = path.relative_to(tree).as_posix()
            for f in rule_findings(rel, placed, path.read_text(encoding="utf-8", errors="replace")):
                levels[f.level] += 1
                if f.level == "error":
                    errors.append(f"{tree.parent.name}/{rel}: {f.message}")
    print(
        f"\nrules-wild: {files} rule files, {levels['error']} errors, {levels['warning']} warnings"
    )
    # Every error is real: one project's Windsurf triggers that Windsurf does not define
    # (code_modification, error_handling, performance_critical twice).
    assert len(errors) == 4 and all(
        "CTBase.jl" in e and "Windsurf has no trigger" in e for e in errors
    )
    assert levels["warning"] == 114


def _note_terms(folder: Path) -> dict[str, Terms]:
    return {p.name: Terms.of(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.md"))}


def test_near_duplicate_precision_and_recall_at_the_threshold() -> None:
    notes = {**_note_terms(FIXTURES / "notes"), **_note_terms(FIXTURES / "near-duplicates")}

    def base(name: str) -> str:
        return name.split("--")[0].removesuffix(".md")

    pairs = list(itertools.combinations(sorted(notes), 2))
    truth = {(a, b) for a, b in pairs if base(a) == base(b)}
    flagged = {(a, b) for a, b in pairs if similarity(notes[a], notes[b]) >= THRESHOLD}
    hits = flagged & truth
    precision = len(hits) / len(flagged)
    recall = len(hits) / len(truth)
    worst_negative = max(similarity(notes[a], notes[b]) for a, b in pairs if (a, b) not in truth)
    print(
        f"\nnear-duplicates at {THRESHOLD}: {len(truth)} true pairs among {len(pairs)}, "
        f"flagged {len(flagged)}, precision {precision:.2f}, recall {recall:.2f}, "
        f"highest other pair {worst_negative:.2f}"
    )
    assert precision == 1.0 and recall >= 0.8


def test_adr_pairs_of_real_projects_rarely_reach_the_threshold() -> None:
    if not ADR_WILD.is_dir():
        pytest.skip("tests/fixtures/adr-wild is missing")
    flagged, total = [], 0
    for project in sorted(p for p in ADR_WILD.iterdir() if p.is_dir()):
        docs = {
            p: Terms.of(p.read_text(encoding="utf-8", errors="replace"))
            for p in project.rglob("*.md")
        }
        docs = {p: t for p, t in docs.items() if len(t) >= 8}
        for a, b in itertools.combinations(sorted(docs), 2):
            total += 1
            if similarity(docs[a], docs[b]) >= THRESHOLD:
                flagged.append(f"{a.relative_to(ADR_WILD)} ~ {b.name}")
    print(f"\nadr-wild: {total} pairs within projects, {len(flagged)} at {THRESHOLD} or more")
    for pair in flagged:
        print(f"  {pair}")
    assert total > 5000 and len(flagged) <= 6


@pytest.mark.parametrize(
    ("pattern", "level", "says"),
    [
        ("src/**/*.ts", None, ""),
        ("!src/gen/**", None, ""),
        ("**/*.{ts,tsx}", None, ""),
        ("src/[a-z]*.py", None, ""),
        ("src/routes/(auth)/**", None, ""),
        (r"src/\[id\]/**", None, ""),
        ("../lib/**", "error", "`..` segment"),
        ("~/project/**", "error", "`~`"),
        (r"C:\repo\src\**", "error", "Windows path"),
        (r"src\**\*.ts", "error", "separates folders by"),
        ("src/{a,b/**", "error", "`{` with no `}`"),
        ("src/a}/**", "error", "`}` with no `{`"),
        ("src/*.{ts}", "error", "one choice"),
        ("src/[abc.ts", "error", "`[` with no `]`"),
        ("src/[z-a].ts", "error", "empty range"),
        ("app/[slug]/page.tsx", "warning", "character class"),
        ("app/[...slug]/**", "warning", "character class"),
    ],
)
def test_glob_problems(pattern: str, level: str | None, says: str) -> None:
    found = glob_problems(pattern)
    if level is None:
        assert found == []
    else:
        assert [lv for lv, _ in found] == [level] and says in found[0][1]


@pytest.mark.parametrize(
    "text",
    [
        "postgres://user:PASSWORD@db/app",
        "jdbc:oracle:thin:scott/X@db",
        "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
        "ANTHROPIC_API_KEY=sk-ant-test-dummy",
        "the secret is 9f86d08... (cut)",
        "password = changeme-please-2024",
        "a token ghp_" + "A1b2" * 9 + "  # precedents: allow-secret",
    ],
)
def test_placeholders_and_allowed_lines_pass(text: str) -> None:
    assert text_findings("x.md", text) == []


def test_a_connection_string_to_an_example_host_is_no_placeholder() -> None:
    text = "mongodb+srv://exporter:Granite-Pepper-6628@cluster0.example.net/"
    (found,) = text_findings("x.md", text)
    assert found.level == "error" and "Granite" not in found.message


def test_a_finding_shows_what_precedes_the_secret_never_what_follows() -> None:
    text = "deploy: ghp_" + "Z9y8" * 9 + " then tail-words-here\n"
    (found,) = text_findings("x.md", text)
    assert re.fullmatch(r"secret \(([a-z-]+)\): deploy: \[MASKED:\1\]", found.message)
    assert not re.search(r"tail|Z9y8", found.message)
