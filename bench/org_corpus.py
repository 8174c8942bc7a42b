"""Synthetic repositories for the org index's scale bench (issue #30, docs/org.md, "Scale").

``make_corpus(out, repos)`` writes ``repos`` folders under ``out``, each a repository
of about 60 records the local index's own readers find: ADRs under ``docs/adr/``
taken from the real corpora in ``tests/fixtures/adr-wild`` and agent rule files at
their real places (``AGENTS.md``, ``.claude/rules/…``, ``.cursor/rules/…``) taken
from ``tests/fixtures/rules-wild``. Each repository mixes a different ADR corpus and
different rule trees, and every file ends with a line naming its repository, so no
two repositories share a content hash (the build's incremental path has nothing
to reuse across them, as in a real organisation). Never the eval sets in
/tmp/shared. Also writes ``out/repos.txt`` (``PATH name=NAME`` a line), the file
``precedents org build --repos-from`` reads.

Run alone: ``python bench/org_corpus.py OUT --repos 30``.
"""

from __future__ import annotations

import argparse
import functools
import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
ADRS = FIXTURES / "adr-wild"
RULES = FIXTURES / "rules-wild"
RECORDS = 60
MAX_ADRS = 40  # the rest of a repository's records are rule files


@functools.cache
def _adr_corpora() -> list[list[Path]]:
    corpora = []
    for folder in sorted(p for p in ADRS.iterdir() if p.is_dir()):
        files = sorted(
            f for f in folder.glob("*.md") if f.name.upper() not in {"README.MD", "INDEX.MD"}
        )
        if files:
            corpora.append(files)
    return corpora


@functools.cache
def _rule_trees() -> list[list[tuple[str, Path]]]:
    trees = []
    for folder in sorted(p for p in RULES.iterdir() if (p / "tree").is_dir()):
        tree = folder / "tree"
        files = sorted((f.relative_to(tree).as_posix(), f) for f in tree.rglob("*") if f.is_file())
        if files:
            trees.append(files)
    return trees


def _copy(source: Path, target: Path, repo: str) -> None:
    """The file with one line naming its repository (its hash differs per repository)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    text = source.read_text(encoding="utf-8", errors="replace").rstrip("\n")
    target.write_text(f"{text}\n\nKept by the {repo} team.\n", encoding="utf-8")


def make_repo(root: Path, index: int, records: int = RECORDS) -> int:
    """Repository number ``index`` at ``root``: the count of files written."""
    repo = root.name
    corpora, trees = _adr_corpora(), _rule_trees()
    adrs = corpora[index % len(corpora)][: min(MAX_ADRS, records * 2 // 3)]
    for f in adrs:
        _copy(f, root / "docs" / "adr" / f.name, repo)
    written, seen = len(adrs), set()
    step = 0
    while written < records and step < len(trees):
        for rel, f in trees[(index * 7 + step) % len(trees)]:
            if written >= records:
                break
            if rel in seen or rel.startswith("docs/adr/"):
                continue
            seen.add(rel)
            try:
                _copy(f, root / rel, repo)
            except (FileExistsError, NotADirectoryError, IsADirectoryError):
                continue  # `.clinerules` a file in one tree, a folder in another
            written += 1
        step += 1
    return written


def make_corpus(out: Path, repos: int, records: int = RECORDS) -> Path:
    """``repos`` repositories under ``out`` and their repos file: the file's path."""
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(repos):
        name = f"svc-{i:04d}"
        root = out / name
        if root.exists():
            shutil.rmtree(root)
        make_repo(root, i, records)
        lines.append(f"{root} name={name}")
    listing = out / "repos.txt"
    listing.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return listing


def change_one(out: Path, index: int = 0) -> Path:
    """Edit one ADR of repository ``index`` (the incremental build's one change)."""
    root = out / f"svc-{index:04d}" / "docs" / "adr"
    target = sorted(root.glob("*.md"))[0]
    with target.open("a", encoding="utf-8") as f:
        f.write("\nAmended: the decision now also covers the batch jobs.\n")
    return target


def main() -> None:
    """Write a corpus from the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--repos", type=int, default=30)
    parser.add_argument("--records", type=int, default=RECORDS)
    args = parser.parse_args()
    listing = make_corpus(args.out, args.repos, args.records)
    files = sum(1 for _ in args.out.rglob("*") if _.is_file()) - 1
    print(f"{args.repos} repositories, {files} files: {listing}")


if __name__ == "__main__":
    main()
