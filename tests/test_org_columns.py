"""The org snapshot held as columns (recall/org_columns.py): every field as the file has it.

A real snapshot file (:func:`precedents.store.snapshot_file.write`, the format
:func:`precedents.org.snapshot.export_org` writes) with what the end-to-end
fixture does not have: a document of several chunks whose rows are not next to
each other, text past Latin-1 and a lone surrogate, two documents with one content
hash, empty fields. Loaded by :class:`OrgRecords` as the daemon loads it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from precedents.org.snapshot import ORG_SNAPSHOT, org_path
from precedents.recall.org import ORG_KEY, OrgRecords
from precedents.recall.org_columns import Strings
from precedents.recall.source import Model
from precedents.recall.vectors import VectorSnapshot
from precedents.store import snapshot_file
from precedents.store.rows import DocumentRecord

MODEL = Model("test/model", 8)
LONG = "docs/adr/0001-long.md"
TWIN = "docs/adr/0002-twin.md"


def row(repo: str, path: str, chunk: int = 0, **fields: Any) -> dict[str, Any]:
    """One row as export_org writes it."""
    out: dict[str, Any] = {
        "doc_id": org_path(repo, path),
        "kind": "adr",
        "project": repo,
        "path": org_path(repo, path),
        "name": f"{repo} {path}",
        "description": "",
        "date": "2024-05-01",
        "adr_id": "",
        "chunk_index": chunk,
        "scope": "",
        "source_hash": f"hash-{repo}-{path}",
        "origin": "org",
        "author": "",
        "decided": "",
        "mark": "",
        "successors": "[]",
        "url": f"https://git.example.com/acme/{repo}.git",
        "repo": repo,
    }
    out.update(fields)
    return out


ROWS = [
    row("payments", LONG, 0, adr_id="0001", mark="⚠️superseded → ADR-0002",
        successors=json.dumps([TWIN]), description="Cartes bancaires — débit immédiat 💳 収納",
        scope=json.dumps({"mentions": ["src/charge.py"]})),
    row("payments", TWIN, 0, adr_id="0002", source_hash="shared-hash",
        description="odd \ud800 text"),
    row("payments", LONG, 1, adr_id="0001"),
    row("search", "docs/adr/0001-engine.md", 0, adr_id="0001", source_hash="shared-hash",
        scope=json.dumps({"mentions": ["src/charge.py"]})),
    row("payments", LONG, 2, adr_id="0001"),
    row("search", ".cursor/rules/style.mdc", 0, kind="rule", name="Style", adr_id="",
        description="Use the house style", scope=json.dumps({"mode": "requested"})),
    row("search", ".cursor/rules/queue.mdc", 0, kind="rule", name="Queue", adr_id="",
        scope=json.dumps({"mode": "requested", "org": True}), source_hash=""),
]  # fmt: skip


@pytest.fixture
def records(tmp_path: Path) -> tuple[OrgRecords, np.ndarray]:
    rng = np.random.default_rng(30)
    matrix = rng.standard_normal((len(ROWS), MODEL.dimension)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    exported = snapshot_file.Exported(
        fingerprint="org:7",
        model=MODEL.id,
        dimension=MODEL.dimension,
        meta=[dict(r) for r in ROWS],
        matrix=matrix,
    )
    snapshot_file.write(tmp_path / "org" / ORG_SNAPSHOT, exported)
    org = OrgRecords(tmp_path / "org")
    assert org.refresh(MODEL) and org.version == "org:7"
    return org, matrix


def expected(r: dict[str, Any]) -> DocumentRecord:
    """What every channel was given for a row when the daemon kept the file's dicts."""
    return DocumentRecord(
        kind=r["kind"],
        project=ORG_KEY,
        path=r["path"],
        name=r["name"],
        description=r["description"],
        date=r["date"],
        adr_id=r["adr_id"],
        origin="org",
        repo=r["repo"],
        org_mark=r["mark"],
    )


def test_every_record_reads_back_as_the_file_has_it(
    records: tuple[OrgRecords, np.ndarray],
) -> None:
    org, _ = records
    for r in ROWS:
        if r["chunk_index"] == 0:
            assert org.record(r["path"]) == expected(r)
            assert org.digest(r["path"]) == r["source_hash"]
    assert org.record("org://payments/none.md") is None
    assert org.digest("org://payments/none.md") == ""
    long = org.record(org_path("payments", LONG))
    assert long is not None
    assert [s.path for s in org.successors(long)] == [org_path("payments", TWIN)]


def test_rows_are_read_as_the_ranking_reads_them(
    records: tuple[OrgRecords, np.ndarray],
) -> None:
    org, matrix = records
    meta = org.snapshot.meta
    assert len(meta) == len(ROWS) == org.snapshot.rows
    for i, r in enumerate(ROWS):
        got = meta[i]
        assert got["path"] == got["doc_id"] == r["path"]
        assert got["chunk_index"] == r["chunk_index"]
        assert got["project"] == ORG_KEY and got["origin"] == "org"
        assert got.get("author") is None and got.get("decided") is None
        assert DocumentRecord.from_row(got) == expected(ROWS[_first(r["path"])])
        assert dict(got)["repo"] == r["repo"]
    assert meta[-1]["path"] == ROWS[-1]["path"]
    with pytest.raises(IndexError):
        meta[len(ROWS)]
    # A document of three chunks, its rows apart: all three, in row order.
    long = org_path("payments", LONG)
    assert np.array_equal(org.snapshot.chunks_of(long), matrix[[0, 2, 4]])
    decision = org.snapshot.decision_vector(long)
    assert decision is not None and np.array_equal(decision, matrix[0])
    assert org.snapshot.chunks_of("org://payments/none.md").shape == (0, MODEL.dimension)


def test_a_question_ranks_a_document_by_its_best_chunk(
    records: tuple[OrgRecords, np.ndarray],
) -> None:
    org, matrix = records
    hits = org.snapshot.rank(matrix[4], (ORG_KEY,))
    assert hits[0].record == expected(ROWS[0])
    assert hits[0].chunk_index == 2 and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert len({h.record.path for h in hits}) == len(hits) == 5


def test_the_project_own_copy_is_found_by_content_hash(
    records: tuple[OrgRecords, np.ndarray], tmp_path: Path
) -> None:
    org, _ = records
    root = str(tmp_path / "checkout")
    local = VectorSnapshot.from_parts(
        "local:1",
        [
            {"doc_id": f"{root}/a.md", "path": f"{root}/a.md", "project": root, "kind": "note",
             "chunk_index": 0, "source_hash": "shared-hash"},
            {"doc_id": f"{root}/b.md", "path": f"{root}/b.md", "project": root, "kind": "note",
             "chunk_index": 0, "source_hash": "hash-payments-none"},
        ],
        np.zeros((2, MODEL.dimension), dtype=np.float32),
        [],
        np.zeros((0, 0), dtype=np.float32),
    )  # fmt: skip
    out = org.excluded(root, local, (root,), ranking=False)
    twins = {org_path("payments", TWIN), org_path("search", "docs/adr/0001-engine.md")}
    # The twins by their hash; the rule of another repository without `scope: org`.
    assert out == twins | {org_path("search", ".cursor/rules/style.mdc")}


def test_the_file_hook_gets_whole_records(records: tuple[OrgRecords, np.ndarray]) -> None:
    org, _ = records
    named = org.scopes.naming((ORG_KEY,), "src/charge.py")
    assert [s.record.path for s in named] == [
        org_path("payments", LONG),
        org_path("search", "docs/adr/0001-engine.md"),
    ]
    first = named[0]
    assert first.record.description == ROWS[0]["description"]
    assert first.record.name == ROWS[0]["name"] and first.record.org_mark == ROWS[0]["mark"]
    assert first.digest == ROWS[0]["source_hash"]
    assert first.record.scope == ROWS[0]["scope"]


def test_strings_keep_any_text() -> None:
    values = ["", "plain", "é—💳", "odd \ud800 text", "収納" * 100, ""]
    column = Strings(values)
    assert len(column) == len(values)
    assert list(column) == values
    assert column.nbytes < sum(len(v) * 4 for v in values) + 8 * len(values)


def _first(path: str) -> int:
    return next(i for i, r in enumerate(ROWS) if r["path"] == path and r["chunk_index"] == 0)


def test_an_empty_org_snapshot_serves_nothing(tmp_path: Path) -> None:
    exported = snapshot_file.Exported(
        fingerprint="org:1",
        model=MODEL.id,
        dimension=MODEL.dimension,
        meta=[],
        matrix=np.zeros((0, MODEL.dimension), dtype=np.float32),
    )
    snapshot_file.write(tmp_path / "org" / ORG_SNAPSHOT, exported)
    org = OrgRecords(tmp_path / "org")
    assert org.refresh(MODEL) and org.problem == ""
    assert not org.snapshot.rows and org.record("org://a/b.md") is None
    assert org.snapshot.rank(np.ones(MODEL.dimension, dtype=np.float32), (ORG_KEY,)) == []
    assert org.scopes.naming((ORG_KEY,), "src/charge.py") == []
