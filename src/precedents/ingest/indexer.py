"""Files -> chunks -> vectors -> store, by content hash.

Used by ``precedents reindex`` and by the watcher alike. The model is loaded
lazily: a corpus whose files all have their stored sha256 costs zero embedding
calls (and no model load at all).

Reading rules (each problem is reported in :class:`IndexReport`, nothing else
is lost): a file over ``max_file_bytes`` is skipped; a file with NUL bytes is
binary and skipped; bytes that are not UTF-8 are replaced and the file still
indexed; a file that vanished between listing and reading is dropped.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from precedents.adr_graph import build_graph
from precedents.config import Settings
from precedents.errors import ModelError
from precedents.files import NOT_UTF8_NAME, Refused, escaped, read_regular, undecodable
from precedents.inert import DATE_CHARS, inert, is_future
from precedents.ingest.chunking import (
    adr_summary,
    chunk_document,
    conversation_chunks,
    parse_conversation,
    parse_note,
)
from precedents.ingest.commit_index import index_repos
from precedents.ingest.decisions import decision_passage
from precedents.ingest.heads import HEADS_FROM, Headed, index_heads
from precedents.ingest.parser_version import CHANGED_KINDS as CHANGED_KINDS
from precedents.ingest.parser_version import CHUNKER_VERSION as CHUNKER_VERSION
from precedents.ingest.parser_version import REREAD_SINCE, REREAD_VERSION
from precedents.ingest.parser_version import reread_kinds as reread_kinds
from precedents.ingest.progress import PassProgress, Progress
from precedents.ingest.removal import gone_paths
from precedents.ingest.report import IndexReport as IndexReport
from precedents.ingest.sources import Problem, SourceFile, Walk
from precedents.ingest.specific import Trees, specific
from precedents.ingest.team import TEAM, is_team_note, team_fields
from precedents.kinds import Kind
from precedents.models.embedding import Embedder, canonical_model_id, load_embedder
from precedents.models.language import is_english
from precedents.models.multilingual import load_multilingual_model
from precedents.rules.formats import classify, format_in_path
from precedents.rules.scope import named_scope, rule_scope
from precedents.runlock import WriterLock
from precedents.secrets.mask import mask_secrets, mask_together
from precedents.secrets.names import shown_path, withheld_reason
from precedents.secrets.withheld import record_withheld
from precedents.store import DocumentRecord, FileRecord, LazyStore, Store

log = logging.getLogger("precedents.ingest.indexer")

EMBED_BATCH = 64
# Commit after every embedding batch (~2-3 s of work on 2 cores): an interrupted
# first index keeps what it did, and the next run goes on from there. A commit
# costs ~10 ms; compaction keeps the versions in check.
COMMIT_CHUNKS = EMBED_BATCH


def first_things_first(files: Sequence[SourceFile]) -> list[SourceFile]:
    """Notes, rules and ADRs before conversations, and conversations newest first.

    A first index of a heavy Claude Code user is mostly transcripts: this way
    what the hook injects most is searchable within the first minute, and an
    interrupted pass (commits are batched) has kept the most recent sessions.
    """

    def mtime(src: SourceFile) -> float:
        try:
            return src.path.stat().st_mtime
        except OSError:
            return 0.0

    docs = [f for f in files if f.kind != "conversation"]
    logs = sorted((f for f in files if f.kind == "conversation"), key=mtime, reverse=True)
    return [*docs, *logs]


def index_note(settings: Settings, model: Embedder, path: Path, project: str) -> int:
    """Index one note file now (``remember``), as the one writer; returns files indexed.
    A note in its project's team folder is a team note (``remember --team``, ``promote``)."""
    origin = TEAM if is_team_note(path, Path(project)) else ""
    writer = WriterLock(settings.run_dir)
    with writer.held():
        store = LazyStore(settings.index_dir, model.model_id, lambda: model).open()
        indexer = Indexer(settings, store, model, writer)
        report = indexer.index_files([SourceFile(path, "note", project, path.parent, origin)])
    return report.files_indexed


def lazy_store(settings: Settings, index_dir: Path | None = None) -> LazyStore[Embedder]:
    """The store of ``settings``' model (at ``index_dir``, default the index), opened
    without loading the model when it can be."""
    spec = settings.model_spec()
    return LazyStore(
        index_dir or settings.index_dir, canonical_model_id(spec), lambda: load_embedder(spec)
    )


@dataclass(frozen=True)
class Prepared:
    """A changed file, read, masked and chunked, waiting for its vectors."""

    file: FileRecord
    doc: DocumentRecord | None
    chunks: list[str]


class Indexer:
    """Brings the store in line with the source files."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        embedder: Callable[[], Embedder] | Embedder,
        writer: WriterLock | None = None,
    ) -> None:
        """``embedder`` may be a factory, called only once something needs embedding;
        ``writer`` is the cross-process writer lock (default: the state folder's)."""
        self.settings = settings
        self.store = store
        self.writer = writer or WriterLock(settings.run_dir)
        self._load_lock = threading.Lock()
        self._trees = Trees()  # a named path must be specific to attach (ingest/specific.py)
        self._embedder = embedder
        # Documents the heads pass read, masked and chunked, kept for the full pass
        # that follows it (ingest/heads.py): a pull is read once.
        self.headed: dict[str, Headed] = {}
        self._adr_graphs: dict[Path, object] = {}
        self.model_seconds = 0.0
        self._multilingual: Embedder | None = None

    @property
    def embedder(self) -> Embedder:
        """The model, loaded on first use (once, whichever thread asks first)."""
        with self._load_lock:
            if callable(self._embedder) and not hasattr(self._embedder, "encode_passages"):
                started = time.perf_counter()
                self._embedder = self._embedder()
                self.model_seconds = time.perf_counter() - started
        return self._embedder  # type: ignore[return-value]

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the store's writer lock; on a fresh hold, see every commit made before it.

        The store was opened without following other processes' commits, so
        what it knew may be stale once another writer has let go.
        """
        with self.writer.held() as fresh:
            if fresh:
                self.store.refresh()
            yield

    # -- whole passes ------------------------------------------------------------

    def sync(self, walk: Walk, progress: Progress | None = None) -> IndexReport:
        """Index every changed file of ``walk`` and drop rows of files that are gone.

        Only records the walk's sources would have produced are considered gone
        (same kind, a file they list): another folder's, another kind's, keep their rows.
        """
        with self.writing():
            return self._sync(walk, progress)

    def _sync(self, walk: Walk, progress: Progress | None) -> IndexReport:
        started = time.perf_counter()
        report = IndexReport(problems=list(walk.problems))
        repaired = self.store.repair()
        if repaired:
            report.problems.append(
                Problem(str(self.store.path), f"{repaired} half-written file(s) repaired")
            )
        known = self.store.files()
        # Only what this pass's sources would have produced, by kind (ingest/removal.py).
        report.files_deleted = self.store.delete_files(gone_paths(known, walk))
        roots = [str(r) for r in walk.roots]
        record_withheld(self.settings.cache_dir, [(w.path, w.reason) for w in walk.withheld], roots)
        if not known:
            # A new store: everything in it will be read by this parser, even if
            # this pass is interrupted and the next one goes on from there.
            self.store.stamp(chunker=CHUNKER_VERSION)
        elif self.store.meta().get("chunker") != CHUNKER_VERSION:
            # Records were read by another version of the parser: what is stored
            # (names, descriptions, chunks) may differ from what it reads now.
            kinds = reread_kinds(self.store.meta().get("chunker"))
            since = self._rereading_since()
            log.info("the record parser changed: re-reading every %s", ", ".join(sorted(kinds)))
            # Files this parser already wrote (a pass cut short after its commits)
            # stay as they are: an interrupted re-read goes on, it does not start
            # over (issue #21: 96 files embedded again, 82 s).
            known = {p: f for p, f in known.items() if f.kind not in kinds or f.indexed_at >= since}
        tracker = PassProgress(self.settings.run_dir, progress)
        try:
            self.index_files(first_things_first(walk.files), report, tracker, known)
        finally:
            tracker.done()
        self._index_commits(walk.repos, report)
        self.store.maybe_compact(force=True)
        report.seconds = time.perf_counter() - started
        report.model_seconds = self.model_seconds
        self.store.stamp(last_indexed=f"{time.time():.3f}", chunker=CHUNKER_VERSION)
        return report

    def _rereading_since(self) -> float:
        """When the re-read of every record by this parser version began: stamped in the
        store at the first pass, so a later pass knows which files are already done."""
        meta = self.store.meta()
        if meta.get(REREAD_VERSION) == CHUNKER_VERSION:
            try:
                return float(meta[REREAD_SINCE])
            except (KeyError, ValueError):
                pass
        since = time.time()
        self.store.stamp(**{REREAD_VERSION: CHUNKER_VERSION, REREAD_SINCE: f"{since:.6f}"})
        return since

    def index_files(
        self,
        files: Sequence[SourceFile],
        report: IndexReport | None = None,
        progress: Progress | None = None,
        known: dict[str, FileRecord] | None = None,
    ) -> IndexReport:
        """Index the given files (unchanged ones cost nothing); returns the report."""
        with self.writing():
            return self._index_files(files, report or IndexReport(), progress, known)

    def _index_files(
        self,
        files: Sequence[SourceFile],
        report: IndexReport,
        progress: Progress | None,
        known: dict[str, FileRecord] | None,
    ) -> IndexReport:
        known = self.store.files() if known is None else known
        self.new_pass()
        if len(files) > HEADS_FROM:  # a first index or a big pull: heads first (heads.py)

            def stop() -> None:  # the watcher stops by raising from its progress callback
                if progress is not None:
                    progress(0, len(files), 0)

            index_heads(self, files, known, stop)
        pending: list[Prepared] = []
        pending_chunks = 0
        for done, src in enumerate(files, 1):
            report.files_seen += 1
            prepared = self.prepare(src, known, report)
            if prepared is not None:
                pending.append(prepared)
                pending_chunks += len(prepared.chunks)
                if pending_chunks >= COMMIT_CHUNKS:
                    self._flush(pending, report)
                    pending, pending_chunks = [], 0
            if progress:
                progress(done, len(files), report.chunks_embedded + pending_chunks)
        self._flush(pending, report)
        return report

    def sync_commits(self, repos: Iterable[str]) -> IndexReport:
        """Read the new commits of each git project in ``repos`` (the watcher's rescan)."""
        report = IndexReport()
        with self.writing():
            self._index_commits(repos, report)
        return report

    def _index_commits(self, repos: Iterable[str], report: IndexReport) -> None:
        def flush(items: list[tuple[FileRecord, DocumentRecord, list[str]]]) -> None:
            pending = [Prepared(*item) for item in items]
            for i in range(0, len(pending), COMMIT_CHUNKS):
                self._flush(pending[i : i + COMMIT_CHUNKS], report)

        index_repos(self.store, self.settings.cache_dir, repos, flush, report)

    def remove_paths(self, paths: Iterable[str]) -> int:
        """Drop the rows of files that no longer exist (for the watcher)."""
        with self.writing():
            return self.store.delete_files(paths)

    # -- one file ----------------------------------------------------------------

    def new_pass(self) -> None:
        """Forget the ADR graphs read by the last pass: ADRs may have changed since."""
        self._adr_graphs.clear()

    def prepare(
        self, src: SourceFile, known: dict[str, FileRecord], report: IndexReport
    ) -> Prepared | None:
        """``src`` read, masked and chunked, or None when it is unchanged or unreadable."""
        path = str(src.path)
        reason = withheld_reason(path)  # the watcher routes files without the walk
        if reason is not None:
            withheld = Problem(shown_path(path), reason)
            report.problems.append(withheld)
            record_withheld(self.settings.cache_dir, [(withheld.path, withheld.reason)])
            if path in known:
                report.files_deleted += self.store.delete_files([path])
            return None
        data = self._read(src.path, src.kind, report, src.root)
        if data is None:
            if path in known:
                report.files_deleted += self.store.delete_files([path])
            return None
        digest = hashlib.sha256(data).hexdigest()
        old = known.get(path)
        # Same bytes, project and kind: nothing to do. A file read by another reader
        # now (a note that became a rule) is read again, its kind with it.
        if (
            old is not None
            and old.sha256 == digest
            and old.project == src.project
            and old.kind == src.kind
        ):
            report.files_unchanged += 1
            return None
        report.files_indexed += 1
        doc: DocumentRecord | None
        headed = self.headed.pop(path, None)  # read by the heads pass just before
        if headed is not None and (headed.digest, headed.doc.project, headed.doc.kind) == (
            digest,
            src.project,
            src.kind,
        ):
            doc, chunks = headed.doc, headed.chunks
            report.problems.extend(headed.problems)
        else:
            doc, chunks = self._document(src, data, report)
        file = FileRecord(path, src.kind, src.project, digest, len(data), len(chunks), time.time())
        return Prepared(file, doc if chunks else None, chunks)

    def _read(self, path: Path, kind: Kind, report: IndexReport, root: Path) -> bytes | None:
        limit, key = (
            (self.settings.max_conversation_bytes, "max_conversation_bytes")
            if kind == "conversation"
            else (self.settings.max_file_bytes, "max_file_bytes")
        )
        if undecodable(path):  # the walk skips these; a watcher's event may not
            report.problems.append(Problem(escaped(path), NOT_UTF8_NAME))
            return None
        try:
            size = path.stat().st_size
            if size > limit:
                report.problems.append(
                    Problem(str(path), f"skipped: {size:,} bytes, over {key} ({limit:,})")
                )
                return None
            # Confined to its source folder, regular, capped, never blocking (issue #28).
            data = read_regular(path, within=root, limit=limit)
        except Refused as exc:
            report.problems.append(Problem(str(path), exc.reason))
            return None
        except FileNotFoundError:
            report.problems.append(Problem(str(path), "vanished before it could be read"))
            return None
        except OSError as exc:
            report.problems.append(Problem(str(path), f"cannot read: {exc.strerror}"))
            return None
        if b"\x00" in data[:8192]:
            report.problems.append(Problem(str(path), "skipped: binary file"))
            return None
        return data

    def _document(
        self, src: SourceFile, data: bytes, report: IndexReport
    ) -> tuple[DocumentRecord | None, list[str]]:
        if src.kind == "conversation":
            return self._conversation(src, data, report)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("utf-8", errors="replace")
            report.problems.append(Problem(str(src.path), "not valid UTF-8: bad bytes replaced"))
        if not text.strip():
            report.files_empty += 1
            report.problems.append(Problem(str(src.path), "empty file: nothing to index"))
            return None, []
        # Mask before parsing and chunking: a secret cut by a chunk boundary
        # would no longer be recognisable in either half.
        placed = classify(src.path, src.project) if src.kind == "rule" else None
        stem = f"{src.path.name} ({placed.base}/)" if placed and placed.base else src.path.stem
        meta = parse_note(mask_secrets(text), stem)
        name, description, date, adr_id = meta.name, meta.description, meta.date, ""
        author = ""
        if src.origin == TEAM:
            author, date = team_fields(meta.front, date)
        warnings = list(meta.warnings)
        if src.kind == "adr":
            adr_id, name, date, component = self._adr_identity(src, name, date)
            description = adr_summary(meta.body) or description
            scope = specific(named_scope(meta.body, component), self._trees.of(src.project))
        elif src.kind == "rule":
            fmt = placed.format if placed else format_in_path(src.path)
            scope = rule_scope(fmt, placed.base if placed else "", meta.front)
            warnings += scope.warnings
        else:
            scope = specific(named_scope(meta.body), self._trees.of(src.project))
        if is_future(date):  # a date in 2099 would sort the record first for ever
            warnings.append(f"date {inert(date, DATE_CHARS)} is in the future: not used")
            date = ""
        for warning in warnings:
            report.problems.append(Problem(str(src.path), warning))
        chunks = chunk_document(name, description, meta.body)
        doc = DocumentRecord(
            src.kind,
            src.project,
            str(src.path),
            name,
            description,
            date,
            adr_id,
            scope.to_json(),
            src.origin,
            author,
        )
        return doc, chunks

    def _conversation(
        self, src: SourceFile, data: bytes, report: IndexReport
    ) -> tuple[DocumentRecord | None, list[str]]:
        conv = parse_conversation(data.splitlines(), mask_secrets, together=mask_together)
        report.bad_lines += conv.bad_lines
        if conv.bad_lines:
            report.problems.append(
                Problem(str(src.path), f"{conv.bad_lines} malformed line(s) skipped")
            )
        if not conv.interactive:
            report.skipped_sessions += 1
            return None, []
        passage = decision_passage([(e.prompt, e.answer, e.timestamp) for e in conv.exchanges])
        chunks = conversation_chunks(conv, passage.exchange if passage else 0)
        scope = ""
        if passage is not None:
            # The files the deciding exchange (and the one that led to it) names: the
            # file hook gives the chat when the agent touches one (recall/files.py).
            near = conv.exchanges[max(0, passage.exchange - 2) : passage.exchange]
            named = named_scope("\n".join(f"{e.prompt}\n{e.answer}" for e in near))
            named = specific(named, self._trees.of(src.project))
            scope = named.to_json() if named.mentions or named.symbols else ""
        doc = DocumentRecord(
            "conversation",
            src.project,
            str(src.path),
            conv.title,
            passage.text if passage else "",
            conv.date,
            scope=scope,
            decided=passage.stamp() if passage else "",
        )
        return doc, chunks

    def _adr_identity(self, src: SourceFile, name: str, date: str) -> tuple[str, str, str, str]:
        """The ADR's id, title, date and component as the ADR graph reads them (one parser)."""
        folder = src.path.parent
        graph = self._adr_graphs.get(folder)
        if graph is None:
            cache = self.settings.cache_dir / "adr"
            graph = build_graph(folder, cache, mask_secrets)
            self._adr_graphs[folder] = graph
        record = graph.record_for_path(src.path)  # type: ignore[attr-defined]
        if record is None:
            return "", name, date, ""
        title = str(record.title or name)  # masked by the graph, like everything stored
        return str(record.id), title, str(record.date or date), str(record.component or "")

    # -- embedding and writing ---------------------------------------------------

    def _flush(self, pending: list[Prepared], report: IndexReport) -> None:
        if not pending:
            return
        texts = [c for p in pending for c in p.chunks]
        vectors = self.embed(texts)
        items: list[tuple[FileRecord, DocumentRecord | None, list[str], NDArray[np.float32]]] = []
        offset = 0
        for p in pending:
            n = len(p.chunks)
            items.append((p.file, p.doc, p.chunks, vectors[offset : offset + n]))
            offset += n
        self.store.replace_documents(items, self._multilingual_vectors(pending))
        report.chunks_embedded += len(texts)

    def _multilingual_vectors(self, pending: list[Prepared]) -> dict[str, NDArray[np.float32]]:
        """Multilingual vectors for the documents not written in English, by path.

        The default model reads English only (precedents/recall/multilingual.py);
        the multilingual one is loaded the first time such a document appears.
        """
        out: dict[str, NDArray[np.float32]] = {}
        for p in pending:
            if p.doc is None or not p.chunks or is_english("\n".join(p.chunks)):
                continue
            if self._multilingual is None:
                try:
                    self._multilingual = load_multilingual_model(self.settings.model_spec())
                except ModelError as exc:
                    log.warning("%s: indexed for English only (%s)", p.doc.path, exc)
                    return out
            out[p.doc.path] = self._multilingual.encode_passages(p.chunks)
        return out

    def embed(self, texts: list[str]) -> NDArray[np.float32]:
        """Passage vectors of ``texts`` with this indexer's model."""
        if not texts:
            return np.zeros((0, self.store.dimension), dtype=np.float32)
        parts = [
            self.embedder.encode_passages(texts[i : i + EMBED_BATCH])
            for i in range(0, len(texts), EMBED_BATCH)
        ]
        return np.concatenate(parts)
