"""Lay the repository's shared evaluation data out as `precedents eval` sets.

    python scripts/shared_eval_sets.py [SHARED] [OUT]   (defaults: ../shared, .state/eval-sets)

writes three set folders in the documented format (docs/eval.md, "Eval set
format") and prints their paths, one per line, for `make eval`. Each set is
indexed the way its own README says, so that its labels hold:

- ``OUT/dev``: the 150 dev notes, with the dev questions and unrelated
  messages (group ``dev``). ``eval/dev/README.md`` checked each unrelated
  message against ``notes/`` only ("no note answers"). Beside the rules and
  ADRs, some of them have a record that does apply (a React rule for a React
  refactor, a pandas rule for reading a CSV in pandas), so they are not
  scored there;
- ``OUT/situational``: the corpus ``eval/dev-situational/README.md``
  describes, as one project (the dev notes, the 152 situational rules and the
  ADRs of six corpora, keyed as in their ``EXPECTED.json``), with the
  situational messages (group ``situational``);
- ``OUT/crosslingual``: the dev notes with the ten that have a Japanese
  translation replaced by it (never both, as ``eval/dev/README.md`` says),
  with the English crosslingual questions (group ``crosslingual``).

Files are copied only when they differ, so a re-run re-embeds nothing. This
script is repository tooling: the installed package never reads ``shared/``.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# The six corpora the situational README names; alphagov__gsp@50b3a9fa is an
# older snapshot of gsp and is left out on purpose (two versions of one ADR).
ADR_CORPORA = (
    "JabRef__jabref",
    "alphagov__govuk-aws",
    "alphagov__gsp",
    "elastisys__compliantkubernetes",
    "ministryofjustice__modernisation-platform",
    "thomvaill__log4brains",
)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every object of a JSON-lines file (blank lines skipped)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def copy_if_changed(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst`` unless it already holds the same bytes (no re-embedding)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if not dst.exists() or dst.read_bytes() != src.read_bytes():
        shutil.copyfile(src, dst)


def write_messages(folder: Path, rows: Iterable[dict[str, Any]]) -> None:
    """``folder/messages.jsonl`` from ``rows``, rewritten only when it changes."""
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    path = folder / "messages.jsonl"
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _prune(folder: Path, keep: set[Path]) -> None:
    """Remove files a previous run copied that the sets no longer hold."""
    for path in folder.rglob("*"):
        if path.is_file() and path not in keep:
            path.unlink()
    # Deepest first, so a folder emptied above is removed with its parents.
    for path in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def _notes(shared: Path, folder: Path) -> set[Path]:
    """The dev notes copied into ``folder/notes``; returns the copies."""
    kept: set[Path] = set()
    for note in sorted((shared / "eval" / "dev" / "notes").glob("*.md")):
        kept.add(folder / "notes" / note.name)
        copy_if_changed(note, folder / "notes" / note.name)
    return kept


def dev_set(shared: Path, out: Path) -> Path:
    """The dev notes alone, with the dev questions and unrelated messages."""
    folder = out / "dev"
    _prune(folder, _notes(shared, folder) | {folder / "messages.jsonl"})
    dev = shared / "eval" / "dev"
    rows = [
        {**row, "expected": [f"notes/{e}" for e in row.get("expected", [])], "group": "dev"}
        for row in read_jsonl(dev / "questions.jsonl") + read_jsonl(dev / "unrelated.jsonl")
    ]
    write_messages(folder, rows)
    return folder


def situational_set(shared: Path, out: Path) -> Path:
    """The one-project corpus of the situational README, with its messages."""
    folder = out / "situational"
    kept = _notes(shared, folder)
    for rule in sorted((shared / "eval" / "dev-situational" / "rules").glob("*.mdc")):
        kept.add(folder / "rules" / rule.name)
        copy_if_changed(rule, folder / "rules" / rule.name)
    for corpus in ADR_CORPORA:
        src = shared / "adr-corpora" / corpus
        expected = json.loads((src / "EXPECTED.json").read_text(encoding="utf-8"))
        keys = expected.get("records", expected) if isinstance(expected, dict) else {}
        for rel in keys:
            if (src / rel).is_file():
                kept.add(folder / "adrs" / corpus / rel)
                copy_if_changed(src / rel, folder / "adrs" / corpus / rel)
    _prune(folder, kept | {folder / "messages.jsonl"})
    rows = [
        {**row, "group": "situational"}
        for row in read_jsonl(shared / "eval" / "dev-situational" / "messages.jsonl")
    ]
    write_messages(folder, rows)
    return folder


def crosslingual_set(shared: Path, out: Path) -> Path:
    """The dev notes with their Japanese translations in place, and English questions."""
    dev = shared / "eval" / "dev"
    folder = out / "crosslingual"
    kept: set[Path] = set()
    for path in sorted((dev / "notes").glob("*.md")):
        ja = dev / "notes_ja" / path.name
        kept.add(folder / "notes" / path.name)
        copy_if_changed(ja if ja.is_file() else path, folder / "notes" / path.name)
    _prune(folder, kept | {folder / "messages.jsonl"})
    rows = [
        {
            **row,
            "kind": "paraphrase",
            "expected": [f"notes/{e}" for e in row.get("expected", [])],
            "group": "crosslingual",
        }
        for row in read_jsonl(dev / "crosslingual.jsonl")
    ]
    write_messages(folder, rows)
    return folder


def assemble(shared: Path, out: Path) -> list[Path]:
    """Every set, laid out under ``out``; returns their folders."""
    if not (shared / "eval" / "dev-situational").is_dir():
        raise SystemExit(f"{shared}: no eval sets there (expected eval/ and adr-corpora/)")
    return [dev_set(shared, out), situational_set(shared, out), crosslingual_set(shared, out)]


def main(argv: list[str]) -> int:
    """Assemble the sets and print their folders."""
    shared = Path(argv[1]) if len(argv) > 1 else ROOT.parent / "shared"
    out = Path(argv[2]) if len(argv) > 2 else ROOT / ".state" / "eval-sets"
    for folder in assemble(shared, out):
        print(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
