"""Lay the training data out as one `precedents eval` set: a check on data the dev sets never saw.

    python -m precedents_research.eval_set [OUT]      (default: .state/train-set)
    .venv/bin/precedents eval --set .state/train-set

The rules, ADRs and notes of ``research/data`` (notes/, rules/, adrs/ with
one folder per ADR repository, as the shared situational set has them) and
every message: situational and paraphrase messages with their record (and its
``also`` alternatives), the superseded traps, and the unrelated messages of
all three parts with their padded copies. A selection rule chosen by looking
at the dev sets' failures is checked here before it ships: the figures are on
records and messages that were written apart from the dev sets
(``tests/test_training_data.py`` proves the two are disjoint).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from precedents_research.paths import DATA, STATE

PARTS = {"rules": "rules", "adrs": "adrs", "notes": "notes"}


# The file helpers of scripts/shared_eval_sets.py (`make eval`'s set builder): copy and
# write only what changed, so a re-run of `precedents eval` re-embeds nothing.
def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every line of a JSONL file."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def copy_if_changed(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst`` unless it already holds the same bytes."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if not dst.exists() or dst.read_bytes() != src.read_bytes():
        shutil.copyfile(src, dst)


def write_messages(folder: Path, rows: Iterable[dict[str, Any]]) -> None:
    """``folder/messages.jsonl`` from ``rows``, rewritten only when it changes."""
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    path = folder / "messages.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _id(part: str, record: str) -> str:
    """``records/x.md`` of a part -> the set's record id ``<part>/x.md``."""
    return f"{part}/{record.removeprefix('records/')}"


def _record_file(part: str, record: Path) -> str:
    # Rules are indexed from .md/.mdc only; a record without an extension is a
    # Markdown file (one SmartBear ADR), so it gets one here.
    name = record.name if record.suffix in (".md", ".mdc") else f"{record.name}.md"
    return str(record.relative_to(DATA / part / "records").with_name(name))


def build(out: Path) -> Path:
    """Write the set into ``out`` (files copied only when they differ); returns ``out``."""
    messages: list[dict[str, Any]] = []
    for part, folder in PARTS.items():
        records = DATA / part / "records"
        renamed: dict[str, str] = {}
        for src in sorted(p for p in records.rglob("*") if p.is_file()):
            rel = _record_file(part, src)
            renamed[str(src.relative_to(DATA / part))] = f"records/{rel}"
            copy_if_changed(src, out / folder / rel)
        for row in read_jsonl(DATA / part / "pairs.jsonl"):
            rec = renamed.get(row["record"], row["record"])
            msg: dict[str, Any] = {"id": f"{part}-{row['id']}", "text": row["text"]}
            if row["kind"] == "superseded_trap":
                msg.update(kind="superseded_trap", trap=_id(part, rec))
                if row.get("successor"):
                    successor = renamed.get(row["successor"], row["successor"])
                    msg["successor"] = _id(part, successor)
            else:
                also = [renamed.get(a, a) for a in row.get("also", [])]
                msg.update(
                    kind="situational" if row["kind"] == "situational" else "paraphrase",
                    expected=[_id(part, r) for r in (rec, *also)],
                    group=f"train-{part}",
                )
            messages.append(msg)
        for row in read_jsonl(DATA / part / "unrelated.jsonl"):
            msg = {"id": f"{part}-{row['id']}", "text": row["text"], "kind": "unrelated"}
            msg["group"] = f"train-{part}"
            if row.get("padded_from"):
                msg["padded_from"] = row["padded_from"]
            messages.append(msg)
    write_messages(out, messages)
    return out


def main(argv: list[str]) -> int:
    """Build the set and print its folder."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=STATE / "train-set")
    print(build(parser.parse_args(argv).out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
