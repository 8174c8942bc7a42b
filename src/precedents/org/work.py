"""One repository's rows for the org table: read, checked, masked, embedded (docs/org.md).

A worker of `precedents org build` runs :func:`repo_rows` once per repository,
in a process pool (:mod:`.builder`) or on a Ray cluster (:mod:`.ray_build`). It
reads with the local index's own readers (:func:`precedents.ingest.sources.project_sources`:
the ADR folders with their graph, every agent's rule files, the team notes; never
conversations nor anyone's personal notes), masks and chunks with the indexer's
:meth:`~precedents.ingest.indexer.Indexer.prepare`, and embeds with the profile's
model, loaded once per worker process (:func:`process_embedder`).

Incremental by content: a repository whose files (paths and sha256) are those the
served version was built from is not read further (``changed=False``); in one that
changed, only documents whose fingerprint (content hash, ADR mark, successors)
differs from the served row's are embedded again. The served rows of the others stay.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

from precedents.config import Settings, load_settings
from precedents.ingest.parser_version import CHUNKER_VERSION
from precedents.ingest.sources import SourceFile, project_sources, walk
from precedents.org.table import ORIGIN, org_schema
from precedents.secrets.mask import find_secrets, mask_secrets
from precedents.secrets.names import shown_path

if TYPE_CHECKING:
    import pyarrow as pa

    from precedents.ingest.indexer import Prepared
    from precedents.models.embedding import Embedder

# At most this many documents of one repository are indexed (a repository with 100,000
# rule files is a mistake or an attack: its first 5,000 by path, and one line says so).
MAX_DOCUMENTS: Final = 5000
EMBED_BATCH: Final = 64

# The model of this worker process, loaded by its first repository (process_embedder).
_EMBEDDER: dict[str, Embedder] = {}


@dataclass(frozen=True)
class RepoTask:
    """One repository to read: its name in the table, the source the repos file named
    (shown masked), the folder it is read from, its git head, and what the served
    version holds of it (``known``: path -> fingerprint; ``digest``: its files' digest)."""

    name: str
    source: str
    path: str
    head: str = ""
    known: Mapping[str, str] = field(default_factory=dict)
    digest: str = ""
    settings: Settings | None = None  # the build's (model profile, caches); None: defaults


@dataclass
class RepoRows:
    """What a worker made of one repository: the rows to add (``rows``; None when nothing
    changed or they were written by the executor itself, ``written``), the served
    paths whose rows go (``removed``: changed or gone), and what it refused."""

    name: str
    rows: pa.Table | None = None
    changed: bool = False
    records: int = 0  # documents of the repository in the new version
    new: int = 0  # documents embedded this build
    chunks: int = 0  # chunks embedded this build
    removed: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    error: str = ""
    digest: str = ""
    written: int = 0  # rows an executor wrote to the table itself (lance-ray's fragments)


def process_embedder(settings: Settings) -> Embedder:
    """The profile's model, loaded once per worker process."""
    from precedents.models.embedding import canonical_model_id, load_embedder

    spec = settings.model_spec()
    key = canonical_model_id(spec)
    found = _EMBEDDER.get(key)
    if found is None:
        found = _EMBEDDER[key] = load_embedder(spec)
    return found


def fingerprint(source_hash: str, mark: str, successors: str) -> str:
    """What a served document is compared by: same content, same place in its ADR graph."""
    return f"{source_hash}|{mark}|{successors}"


def files_digest(files: Sequence[tuple[str, str]], model: str) -> str:
    """One hash of a repository's (path, sha256) pairs, the parser and the model: equal
    digests mean the served rows are what this build would write."""
    h = hashlib.sha256(f"{CHUNKER_VERSION}\0{model}\0".encode())
    for path, digest in sorted(files):
        h.update(f"{path}\0{digest}\n".encode())
    return h.hexdigest()


def repo_rows(task: RepoTask, embedder: Embedder | None = None) -> RepoRows:
    """The rows of one repository (see the module's docstring); never raises for the
    repository's content: what cannot be read is ``error`` or a ``refused`` line."""
    settings = task.settings or load_settings()
    out = RepoRows(task.name)
    try:
        return _repo_rows(task, settings, embedder, out)
    except Exception as exc:  # one repository's failure is its entry's error, not the build's
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        out.error = f"{type(exc).__name__}: {mask_secrets(first)}"[:300]
        out.changed = False
        return out


def unchanged(task: RepoTask) -> RepoRows | None:
    """The repository's result when its files hash to the served digest (nothing to
    read further: the builder asks before starting any worker), else None."""
    if not task.digest:
        return None
    try:
        scan = _scan(task, task.settings or load_settings())
    except Exception:  # the worker will say what is wrong with it
        return None
    if scan is None or scan.digest != task.digest:
        return None
    return RepoRows(task.name, records=len(task.known), digest=scan.digest)


@dataclass
class _Scan:
    """A repository's files (at most MAX_DOCUMENTS), with their paths and hashes."""

    hashed: list[tuple[SourceFile, str, str]]
    digest: str
    refused: list[str]


def _scan(task: RepoTask, settings: Settings) -> _Scan | None:
    """Walk and hash the repository's files; None when its folder is not there."""
    from precedents.models.embedding import canonical_model_id

    root = Path(task.path)
    if not root.is_dir():
        return None
    found = walk(project_sources(root))
    files = sorted(found.files, key=lambda f: str(f.path))
    # A file whose path carries a secret is withheld by the walk, as in the local index
    # (its name is shown masked): a refusal of this repository's.
    refused = [f"{w.path}: {w.reason}" for w in found.withheld]
    if len(files) > MAX_DOCUMENTS:
        refused.append(
            f"{len(files):,} files to index: only the first {MAX_DOCUMENTS:,} by path "
            f"(at most {MAX_DOCUMENTS:,} documents a repository)"
        )
        files = files[:MAX_DOCUMENTS]
    hashed = [(f, _relpath(f, root), _sha256(f.path)) for f in files]
    model = canonical_model_id(settings.model_spec())
    return _Scan(hashed, files_digest([(rel, h) for _, rel, h in hashed], model), refused)


def _repo_rows(
    task: RepoTask, settings: Settings, embedder: Embedder | None, out: RepoRows
) -> RepoRows:
    root = Path(task.path)
    scan = _scan(task, settings)
    if scan is None:
        out.error = f"{shown_path(task.source)}: no such folder"
        return out
    hashed, out.digest, out.refused = scan.hashed, scan.digest, list(scan.refused)
    if task.digest and out.digest == task.digest:
        out.records = len(task.known)
        return out  # nothing changed: the served rows stay, nothing read further
    refused = _refused(root, [rel for _, rel, _ in hashed])
    prepared = _prepare(settings, [f for f, _, _ in hashed], root)
    marks = _marks(settings, root, [f for f, _, _ in hashed if f.kind == "adr"])
    pending: list[tuple[str, Prepared, str, str]] = []
    present: dict[str, str] = {}
    for src, rel, _ in hashed:
        p = prepared.get(str(src.path))
        if p is None or p.doc is None or not p.chunks:
            continue
        why = refused.get(rel) or _unmasked(p)
        if why:
            out.refused.append(f"{shown_path(rel)}: {why}")
            continue
        mark, successors = marks.get(str(src.path), ("", ""))
        now = fingerprint(p.file.sha256, mark, successors)
        present[rel] = now
        if task.known.get(rel) != now:
            pending.append((rel, p, mark, successors))
    out.removed = sorted(p for p, old in task.known.items() if present.get(p) != old)
    out.records = len(present)
    out.new = len(pending)
    out.changed = bool(pending or out.removed or set(present) != set(task.known))
    if pending:
        model_ = embedder or process_embedder(settings)
        out.rows = _rows(task, pending, model_)
        out.chunks = out.rows.num_rows
    return out


def _relpath(src: SourceFile, root: Path) -> str:
    return Path(os.path.relpath(src.path, root)).as_posix()


def _sha256(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def _prepare(settings: Settings, files: Sequence[SourceFile], root: Path) -> dict[str, Prepared]:
    """Each file read, masked and chunked by the local indexer's own code."""
    from precedents.ingest.indexer import Indexer
    from precedents.ingest.report import IndexReport

    # prepare() touches the store only to delete the rows of a file it knows (none here:
    # ``known`` is empty), so no store is opened; nothing is embedded by the indexer.
    indexer = Indexer(settings, cast(Any, None), cast(Any, None))
    report = IndexReport()
    out: dict[str, Prepared] = {}
    for src in files:
        p = indexer.prepare(src, {}, report)
        if p is not None:
            out[str(src.path)] = p
    return out


def _refused(root: Path, rels: Sequence[str]) -> dict[str, str]:
    """What `precedents check` says must not be shared, by file: a secret in a name or a
    file it could not scan, a rule its agent reads otherwise than written, an unreadable
    file. A secret in the text is not refused: it is masked like everywhere else."""
    from precedents.check.runner import run

    if not rels:
        return {}
    report = run(list(rels), cwd=root)
    out: dict[str, str] = {}
    for f in report.findings:
        if f.level != "error":
            continue
        if f.check == "secret" and "file name" not in f.message and "scanned" not in f.message:
            continue  # masked before it is stored
        if f.check not in ("secret", "rule", "input"):
            continue  # an ADR graph's error is its mark's business, not a refusal
        out.setdefault(f.path, f"{f.check}: {f.message}"[:300])
    return out


def _unmasked(p: Prepared) -> str:
    """Why a prepared record must not be stored: a secret the masking left, or text that
    reads as orders to the agent (every developer's agent would be shown it)."""
    from precedents.suspect import suspect_reason

    doc = p.doc
    assert doc is not None
    fields = [doc.name, doc.description, *p.chunks]
    if any(find_secrets(t) for t in fields if t):
        return "secret: a secret the masking could not remove"
    why = suspect_reason(*fields)
    return f"suspect: reads as orders to the agent ({why})" if why else ""


def _marks(
    settings: Settings, root: Path, adrs: Sequence[SourceFile]
) -> dict[str, tuple[str, str]]:
    """Each ADR's mark and successors (JSON list of repository paths) from its folder's
    graph: a reader has no files to build the graph from."""
    from precedents.adr_graph import build_graph

    out: dict[str, tuple[str, str]] = {}
    graphs: dict[Path, Any] = {}
    for src in adrs:
        folder = src.path.parent
        graph = graphs.get(folder)
        if graph is None:
            try:
                graph = graphs[folder] = build_graph(
                    folder, settings.cache_dir / "adr", mask_secrets
                )
            except Exception:  # a broken folder: its records are marked as unknown below
                graph = graphs[folder] = None
        record = graph.record_for_path(src.path) if graph is not None else None
        if graph is None or record is None:
            out[str(src.path)] = ("status unknown", "[]")
            continue
        ends: list[str] = []
        if record.status != "live" and record.current:
            ids = [record.current] if isinstance(record.current, str) else list(record.current)
            for rid in ids:
                live = graph.records.get(rid)
                if live is not None and live.status == "live":
                    full = (Path(graph.folder) / live.path).resolve()
                    ends.append(Path(os.path.relpath(full, root.resolve())).as_posix())
        out[str(src.path)] = (str(record.mark or ""), json.dumps(ends))
    return out


def _rows(
    task: RepoTask, pending: Sequence[tuple[str, Prepared, str, str]], model: Embedder
) -> pa.Table:
    """The org rows of ``pending`` documents, embedded in batches."""
    import numpy as np
    import pyarrow as pa

    texts = [c for _, p, _, _ in pending for c in p.chunks]
    parts = [
        model.encode_passages(texts[i : i + EMBED_BATCH]) for i in range(0, len(texts), EMBED_BATCH)
    ]
    vectors = (
        np.concatenate(parts).astype(np.float32)
        if parts
        else np.zeros((0, model.dimension), np.float32)
    )
    dimension = int(vectors.shape[1]) if vectors.size else int(model.dimension)
    schema = org_schema(dimension)
    columns: dict[str, list[Any]] = {f.name: [] for f in schema if f.name != "vector"}
    for rel, p, mark, successors in pending:
        doc = p.doc
        assert doc is not None
        for i, text in enumerate(p.chunks):
            columns["chunk_id"].append(f"{task.name}/{rel}#{i}")
            columns["doc_id"].append(rel)
            columns["kind"].append(doc.kind)
            columns["project"].append(task.name)
            columns["path"].append(rel)
            columns["name"].append(doc.name)
            columns["description"].append(doc.description)
            columns["date"].append(doc.date)
            columns["adr_id"].append(doc.adr_id)
            columns["chunk_index"].append(i)
            columns["text"].append(text)
            columns["source_hash"].append(p.file.sha256)
            columns["scope"].append(doc.scope)
            columns["origin"].append(ORIGIN)
            columns["author"].append(doc.author)
            columns["decided"].append(doc.decided)
            columns["mark"].append(mark)
            columns["successors"].append(successors)
            columns["url"].append(mask_secrets(task.source))
    flat = vectors.reshape(-1)
    data: dict[str, Any] = dict(columns)
    data["vector"] = pa.FixedSizeListArray.from_arrays(pa.array(flat, type=pa.float32()), dimension)
    return pa.table({f.name: data[f.name] for f in schema}, schema=schema)
