"""The org snapshot's two-stage ranking (recall/org_ranking.py ``OrgSnapshot``, issue #30).

A real org index: ADRs and rule files of tests/fixtures/adr-wild and rules-wild,
indexed by the local indexer with the real bundled model (real chunking: an ADR
of real length is several rows), written as the real Lance org table and
exported by :func:`precedents.org.snapshot.export_org`, loaded by
:class:`OrgRecords` as the daemon loads it. Each question is ranked twice: by the
two stages, and by the one ranking code over the whole chunk matrix held in
memory (:meth:`VectorSnapshot.rank_many`, what the org snapshot did before). The
first stage keeps far fewer candidates here than in the daemon (16 of ~80
documents, against 1,024 of 30,000), so that it has documents to lose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from precedents.org.snapshot import ORG_DOCS, ORG_SNAPSHOT, document_vectors
from precedents.recall.org import ORG_KEY, OrgRecords
from precedents.recall.org_ranking import OrgSnapshot
from precedents.recall.source import Model
from precedents.recall.vectors import VectorSnapshot
from precedents.store import snapshot_file
from precedents.store.rows import DocumentHit
from tests.org_fixture import build_org

FIXTURES = Path(__file__).parent / "fixtures"
FEW = 16  # the first stage's candidates in these tests


def _repos() -> dict[str, dict[str, str]]:
    """Six repositories of real ADRs (ten each at most) and four of real rule files."""
    repos: dict[str, dict[str, str]] = {}
    owners = sorted(p for p in (FIXTURES / "adr-wild").iterdir() if p.is_dir())
    for owner in owners[:6]:
        adrs = sorted(owner.rglob("*.md"))[:10]
        repos[owner.name.lower()] = {
            f"docs/adr/{a.name}": a.read_text(encoding="utf-8", errors="replace") for a in adrs
        }
    owners = sorted(p for p in (FIXTURES / "rules-wild").iterdir() if p.is_dir())
    for owner in owners[:4]:
        files = sorted(
            p for p in (owner / "tree").rglob("*") if p.is_file() and p.suffix in (".md", ".mdc")
        )[:5]
        repos[f"rules-{owner.name.lower()}"] = {
            str(p.relative_to(owner / "tree")): p.read_text(encoding="utf-8", errors="replace")
            for p in files
        }
    return repos


def _questions() -> list[str]:
    """Titles and paragraphs of ADRs outside the index, and paragraphs from deep inside
    indexed ones (a later chunk's subject, which the mean of a document's chunks dilutes)."""
    out: list[str] = []
    owners = sorted(p for p in (FIXTURES / "adr-wild").iterdir() if p.is_dir())
    for owner in owners[6:16]:
        for adr in sorted(owner.rglob("*.md"))[:3]:
            text = adr.read_text(encoding="utf-8", errors="replace")
            out.append(text.strip().splitlines()[0].strip("# ")[:200])
    for files in list(_repos().values())[:6]:
        for text in list(files.values())[:4]:
            paragraphs = [p for p in re.split(r"\n\s*\n", text) if len(p) > 120]
            if len(paragraphs) > 3:
                out.append(paragraphs[len(paragraphs) * 2 // 3][:400])
    return [q for q in out if q]


@dataclass
class Built:
    org: OrgRecords
    questions: np.ndarray
    model: Model


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Built:
    work = tmp_path_factory.mktemp("org-coarse")
    build_org(work, embedder, _repos(), work / "org")
    org = OrgRecords(work / "org")
    model = Model(embedder.model_id, embedder.dimension)
    assert org.refresh(model)
    vectors = np.asarray(embedder.encode_queries(_questions()), dtype=np.float32)
    return Built(org, vectors, model)


def _exact(snapshot: OrgSnapshot) -> VectorSnapshot:
    """The same rows over the whole chunk matrix in memory: the one ranking code."""
    return VectorSnapshot(
        version=snapshot.version, meta=snapshot.meta, matrix=np.array(snapshot.matrix)
    )


def _few(snapshot: OrgSnapshot, candidates: int = FEW) -> OrgSnapshot:
    """``snapshot`` ranked with ``candidates`` documents after the first stage."""
    return OrgSnapshot(
        version=snapshot.version,
        meta=snapshot.meta,
        matrix=snapshot.matrix,
        documents=snapshot.documents,
        coarse=snapshot.coarse,
        candidates=candidates,
    )


def _shown(hits: list[DocumentHit]) -> list[tuple[str, int]]:
    """Each hit's document and best chunk."""
    return [(h.record.path, h.chunk_index) for h in hits]


def _same(got: list[DocumentHit], want: list[DocumentHit]) -> None:
    """The same documents, best chunks and cosines (to float32's last bits: a product of
    other rows may sum a row's terms in another order)."""
    assert _shown(got) == _shown(want)
    assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-6)


def test_the_index_is_of_real_length_and_mapped(built: Built) -> None:
    snapshot = built.org.snapshot
    assert isinstance(snapshot, OrgSnapshot) and snapshot.documents is not None
    documents = len(snapshot.documents)
    assert documents >= 60 and snapshot.rows >= 2 * documents  # several chunks a document
    assert documents > 3 * FEW
    # The chunk vectors are the file's pages, not a copy: no array owns them.
    assert not snapshot.matrix.flags.owndata and not snapshot.matrix.flags.writeable
    # The export's document vectors: each document's chunks' normalised mean.
    with np.load(built.org.file) as data:
        stored = data[ORG_DOCS]
    assert snapshot.coarse is not None and np.array_equal(snapshot.coarse, stored)
    starts = np.flatnonzero(np.diff(snapshot.documents.row_doc, prepend=-1))
    assert np.allclose(stored, document_vectors(np.array(snapshot.matrix), starts), atol=1e-6)


def test_with_every_document_a_candidate_the_ranking_is_the_whole_matrix(built: Built) -> None:
    snapshot = built.org.snapshot
    assert isinstance(snapshot, OrgSnapshot) and snapshot.documents is not None
    every = _few(snapshot, len(snapshot.documents))
    got = every.rank_many(built.questions, (ORG_KEY,))
    want = _exact(snapshot).rank_many(built.questions, (ORG_KEY,))
    for hits, exact in zip(got, want, strict=True):
        # The same twenty documents, in the same order, with the same best chunk and the
        # very same cosine (one matrix product of the same rows either way).
        _same(hits, exact)
        assert len(hits) == 20
        assert [h.record for h in hits] == [h.record for h in exact]


def test_the_first_stage_loses_only_what_the_document_vectors_rank_low(built: Built) -> None:
    """With 16 candidates of ~66 documents: the top three are the whole matrix's for
    every question; every hit has its document's exact score; a document of the exact
    top ten that is missing is one that 16 others outrank by their document vectors,
    and nothing else changes (the rest keep their order)."""
    snapshot = _few(built.org.snapshot)  # type: ignore[arg-type]
    assert snapshot.documents is not None and snapshot.coarse is not None
    exact = _exact(snapshot)
    assert len(built.questions) >= 30
    every = len(snapshot.documents)
    two = snapshot.rank_many(built.questions, (ORG_KEY,))
    whole = exact.rank_many(built.questions, (ORG_KEY,), doc_ranks=every)
    first = snapshot.coarse @ built.questions.T
    for j, (got, want) in enumerate(zip(two, whole, strict=True)):
        _same(got[:3], want[:3])
        score_of = {h.record.path: h for h in want}
        _same(got, [score_of[h.record.path] for h in got])
        kept = {h.record.path for h in got}
        lost = [h.record.path for h in want[:10] if h.record.path not in kept]
        for path in lost:
            d = snapshot.documents.index[path]
            assert int((first[:, j] > first[d, j]).sum()) >= FEW
        assert [h for h in _shown(want[:10]) if h[0] in kept] == _shown(got)[: 10 - len(lost)]


def test_one_question_at_a_time_ranks_alike(built: Built) -> None:
    """One question (a matrix-vector product, not a matrix product: the last bit of a
    cosine may differ from a batch's, in the whole-matrix ranking too) scores as the
    whole matrix scores it one question at a time."""
    snapshot = _few(built.org.snapshot)  # type: ignore[arg-type]
    exact = _exact(snapshot)
    together = snapshot.rank_many(built.questions[:8], (ORG_KEY,))
    for q, batch in zip(built.questions[:8], together, strict=True):
        alone = snapshot.rank(q, (ORG_KEY,))
        _same(alone[:3], exact.rank(q, (ORG_KEY,))[:3])
        assert [h.record.path for h in alone] == [h.record.path for h in batch]
        assert [h.score for h in alone] == pytest.approx([h.score for h in batch], abs=1e-6)


def test_excluded_hidden_and_kinds_as_the_whole_matrix(built: Built) -> None:
    """What a question leaves out is left out as the whole matrix leaves it out (every
    document a candidate: the same twenty ranks)."""
    snapshot = built.org.snapshot
    assert isinstance(snapshot, OrgSnapshot) and snapshot.documents is not None
    snapshot = _few(snapshot, len(snapshot.documents))
    exact = _exact(snapshot)
    q = built.questions[:6]
    plain = exact.rank_many(q, (ORG_KEY,))
    excluded = frozenset(hits[0].record.path for hits in plain)
    hidden = [frozenset({hits[1].record.path}) for hits in plain]
    for kinds in (None, ["rule"], ["adr"]):
        args: dict[str, Any] = {"kinds": kinds, "hidden": hidden, "excluded": excluded}
        got = snapshot.rank_many(q, (ORG_KEY,), **args)
        want = exact.rank_many(q, (ORG_KEY,), **args)
        for g, w in zip(got, want, strict=True):
            _same(g, w)
        for hits, gone, hid in zip(got, plain, hidden, strict=True):
            paths = {h.record.path for h in hits}
            assert gone[0].record.path not in paths and not paths & hid
            assert all(h.record.kind in (kinds or ("adr", "rule", "note")) for h in hits)
    assert snapshot.rank_many(q, ("some-project",)) == [[] for _ in q]


def test_a_file_without_document_vectors_ranks_alike(built: Built, tmp_path: Path) -> None:
    """A snapshot file an older export wrote (rows in any order, no ORG_DOCS): the
    document vectors are made at load, the same ranking."""
    read = snapshot_file.read(built.org.file)
    order = np.random.default_rng(30).permutation(len(read.meta))
    meta = [dict(read.meta[i]) for i in order]
    firsts: dict[str, dict[str, Any]] = {}
    for row in read.meta:
        firsts.setdefault(row["path"], row)
    meta = [{**firsts[m["path"]], "chunk_index": m["chunk_index"]} for m in meta]
    read.meta, read.matrix, read.extra = meta, read.matrix[order], {}
    snapshot_file.write(tmp_path / ORG_SNAPSHOT, read)
    older = OrgRecords(tmp_path)
    assert older.refresh(built.model)
    a, b = _few(older.snapshot), _few(built.org.snapshot)  # type: ignore[arg-type]
    assert a.coarse is not None and b.coarse is not None and a.documents and b.documents
    # Documents are numbered as the file's rows first name them: compared by path.
    same = [a.documents.index[p] for p in b.documents.paths]
    assert np.allclose(a.coarse[same], b.coarse, atol=1e-6)
    got = a.rank_many(built.questions, (ORG_KEY,))
    want = b.rank_many(built.questions, (ORG_KEY,))
    for g, w in zip(got, want, strict=True):
        _same(g, w)
    path = want[0][0].record.path
    mine, theirs = a.chunks_of(path), b.chunks_of(path)  # each in its file's row order
    assert len(mine) > 1
    assert np.array_equal(mine[np.lexsort(mine.T)], theirs[np.lexsort(theirs.T)])


def test_a_question_leaves_no_chunk_page_resident(built: Built) -> None:
    """The chunk rows are read from the file (``pread``), not through the map: after
    every question, the map holds no page in this process."""
    snapshot = built.org.snapshot
    assert isinstance(snapshot, OrgSnapshot) and snapshot.reader is not None
    first = snapshot.rank_many(built.questions, (ORG_KEY,))
    path = first[0][0].record.path
    assert np.array_equal(snapshot.chunks_of(path), np.array(snapshot.matrix[snapshot._rows(path)]))
    vector = snapshot.decision_vector(path)
    assert vector is not None and np.array_equal(vector, snapshot.chunks_of(path)[0])
    assert _resident(snapshot.matrix) > 0  # the comparison above read through the map
    fresh = OrgRecords(built.org.file.parent)
    assert fresh.refresh(built.model)
    mapped = fresh.snapshot.matrix
    again = fresh.snapshot.rank_many(built.questions, (ORG_KEY,))
    fresh.snapshot.chunks_of(path)
    assert _resident(mapped) == 0
    for g, f in zip(again, first, strict=True):
        _same(g, f)


def _resident(array: np.ndarray) -> int:
    """Pages of ``array``'s memory map resident in this process (mincore through ctypes
    would say the page cache's; /proc/self/smaps says this process's own)."""
    start = array.__array_interface__["data"][0]
    end = start + array.nbytes
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0] if line else ""
        if "-" in head and not head.endswith(":"):
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo < end and start < hi
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total
