"""One question in, the hook's context out: embed, rank, select, format.

:class:`Recall` is the code path the daemon serves and that
``precedents query --auto`` runs in-process (:func:`auto_context`), so the two
can never disagree. It holds the model, a reader view of the store, an
in-memory copy of the vectors (refreshed when the chunk table's version
changes) and the ADR marks.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from precedents.config import Settings
from precedents.errors import ModelMismatch, StoreError
from precedents.ingest.sources import project_keys, project_root
from precedents.kinds import DOCUMENT_KINDS, Kind
from precedents.models.embedding import Embedder, load_embedder
from precedents.protocol import HEADER, MIN_PROMPT_CHARS, clip_prompt
from precedents.recall.answer import Answer
from precedents.recall.batcher import Batcher, Ranked, Work
from precedents.recall.exported import Exporter
from precedents.recall.files import FileScopes
from precedents.recall.format import record_json
from precedents.recall.hooks import HookAnswers
from precedents.recall.marks import AdrMarks
from precedents.recall.multilingual import CrossLingual
from precedents.recall.mute import MuteList
from precedents.recall.relevance import DECISION_RANKS, Relevance
from precedents.recall.selection import select
from precedents.recall.sessions import SessionLog
from precedents.recall.vectors import (
    CONVERSATION_RANKS,
    DOC_RANKS,
    EMPTY,
    SecondScores,
    VectorSnapshot,
)
from precedents.recall.when import window
from precedents.store.lexical import Postings
from precedents.store.rows import DocumentHit
from precedents.store.snapshot_file import fingerprint

if TYPE_CHECKING:
    from precedents.store import Store

log = logging.getLogger("precedents.daemon")

SNAPSHOT_FILE = "snapshot.npz"
__all__ = ["Answer", "Recall", "auto_context"]


def _env_int(name: str, default: int) -> int:
    try:
        return max(int(os.environ.get(name, default)), 1)
    except ValueError:
        return default


def _daemon_threads(embedder: Embedder) -> None:
    """One torch thread for CPU queries in the daemon (``PRECEDENTS_TORCH_THREADS`` overrides).

    Measured on the 2-core dev box with other work running (docs/daemon.md):
    one query encoded in 21/27 ms (p50/max) on one thread; on two, 15 ms p50
    but with spikes to 250-800 ms, because spinning OpenMP workers fight
    whatever else uses the CPU (the agent's own builds, ten hook processes
    starting at once). A burst of nine took 100-120 ms on one thread and
    75-400 ms on two. A hook's p95 matters more than its p50.
    """
    if (
        getattr(embedder, "device", "cpu") != "cpu"
        or getattr(embedder, "runtime", "") == "onnxruntime"
    ):
        return  # a GPU, or ONNX Runtime (sets its own threads; must not import torch)
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(_env_int("PRECEDENTS_TORCH_THREADS", 1))


class Recall(HookAnswers):
    """The model, the store and the vectors in memory: answers questions."""

    def __init__(
        self,
        settings: Settings,
        embedder: Embedder | None = None,
        *,
        batch: bool = False,
        exported: bool = False,
    ) -> None:
        """``batch``: embed concurrent questions together (the daemon). ``exported``: read
        the vectors from a child process's export, never LanceDB (the daemon; see
        :mod:`precedents.recall.exported`)."""
        self.settings = settings
        self._exporter: Exporter | None = None
        self._summary: dict[str, Any] | None = None
        if exported:
            self._exporter = Exporter(settings.index_dir, settings.cache_dir / SNAPSHOT_FILE)
            if fingerprint(settings.index_dir) is not None:
                self._exporter.start()  # reads the store while the model loads
        self.embedder = embedder or load_embedder(settings.model, settings.device)
        self.thresholds = settings.thresholds_for(self.embedder.model_id)
        self.relevance = Relevance.for_model(self.embedder.model_id)
        self.crosslingual = CrossLingual.for_model(self.embedder.model_id)
        self.marks = AdrMarks(settings.cache_dir / "adr")
        self.muted = MuteList(settings.home)
        self.sessions = SessionLog()
        self._scopes: tuple[VectorSnapshot, FileScopes] | None = None
        self._store: Store | None = None
        self.store_problem: StoreError | None = None  # why no store could be opened
        self._snapshot: VectorSnapshot = EMPTY
        self._refresh_lock = threading.Lock()
        self._encode_lock = threading.Lock()
        self._batcher: Batcher | None = None
        if batch:
            _daemon_threads(self.embedder)
            self._batcher = Batcher(self._work)
            # The first calls of a fresh model are several times slower (allocator,
            # kernel selection): pay for them now, not on the user's first message.
            for _ in range(3):
                self.embedder.encode_queries(["warm up the model before the first question"])
        self.refresh()

    # -- the store ---------------------------------------------------------------

    def _open_store(self) -> Store | None:
        if self._store is None:
            from precedents.store import Store  # not in the daemon (exported mode)

            try:
                self._store = Store(
                    self.settings.index_dir,
                    self.embedder.model_id,
                    self.embedder.dimension,
                    reader=True,
                    create=False,
                )
            except StoreError as exc:
                log.debug("no usable index yet: %s", exc)
                self.store_problem = exc
                return None
        self.store_problem = None
        return self._store

    @property
    def store(self) -> Store | None:
        """The reader view of the store (None while there is no usable index)."""
        with self._refresh_lock:
            return self._open_store()

    def refresh(self, *, now: bool = False) -> bool:
        """Reload the vectors if the store changed since the last load; True when it did.

        ``now`` (exported mode): read the store in this process, at once — after the
        daemon itself wrote to it (`remember`), which already loaded LanceDB here."""
        with self._refresh_lock:
            if self._exporter is not None:
                return self._refresh_exported(self._exporter, now)
            store = self._open_store()
            if store is None:
                return False
            try:
                # The chunk table's version changes whenever anything searchable
                # changes; with reader=True it reflects other processes' commits.
                version = store.version()
                if version == self._snapshot.version:
                    return False
                started = time.perf_counter()
                snapshot = VectorSnapshot.load(store)
            except (OSError, ValueError, RuntimeError, StoreError) as exc:
                # A compaction may have removed the version we held: look again next time.
                log.warning("reloading the index failed (%s); retrying", exc)
                try:
                    store.refresh()
                except Exception:  # the next refresh tries again from scratch
                    self._store = None
                return False
            self._install(snapshot)
            log.info(
                "index version %s loaded: %d chunks in %.0f ms",
                version,
                snapshot.rows,
                (time.perf_counter() - started) * 1000,
            )
            return True

    def _refresh_exported(self, exporter: Exporter, now: bool) -> bool:
        stamp = fingerprint(self.settings.index_dir)
        if stamp is None:
            self.store_problem = StoreError(
                f"no index at {self.settings.index_dir}; run `precedents reindex` first"
            )
            return False
        if stamp == self._snapshot.version and not now:
            return False
        if now:
            return self._load_here(stamp)
        if not exporter.due(stamp):
            return False
        try:
            exported = exporter.run()
        except StoreError as exc:
            log.warning("exporting the index failed (%s); retrying", exc)
            self.store_problem = exc
            return False
        if exported is None:
            self.store_problem = StoreError("the index records no model; run `precedents reindex`")
            return False
        mine = (self.embedder.model_id, self.embedder.dimension)
        if (exported.model, exported.dimension) != mine:
            exporter.reject(exported.fingerprint)
            self.store_problem = ModelMismatch(
                f"the index was built with {exported.model} ({exported.dimension}d), not "
                f"{self.embedder.model_id}; run `precedents reindex --full`"
            )
            return False
        self.store_problem = None
        self._summary = exported.summary
        self._install(
            VectorSnapshot.from_parts(
                exported.fingerprint,
                exported.meta,
                exported.matrix,
                exported.second_ids,
                exported.second_vectors,
                Postings.read(exported.lexical),
            )
        )
        log.info(
            "index exported and loaded: %d chunks in %.0f ms",
            self._snapshot.rows,
            exporter.last_seconds * 1000,
        )
        return True

    def _load_here(self, stamp: str) -> bool:
        from precedents.store.summary import summarize

        store = self._open_store()
        if store is None:
            return False
        try:
            snapshot = VectorSnapshot.load(store)
            self._summary = summarize(store)
        finally:
            self._store = None  # its open tables are not kept (exported mode holds none)
        snapshot.version = stamp  # the fingerprint taken before reading, as an export does
        self._install(snapshot)
        return True

    def summary(self) -> dict[str, Any] | None:
        """What the store holds (`precedents status`): from the last export in exported
        mode, else read from the store now; None while there is no usable index."""
        if self._exporter is not None:
            return self._summary
        from precedents.store.summary import summarize

        store = self.store
        return summarize(store) if store is not None else None

    def _install(self, snapshot: VectorSnapshot) -> None:
        """Answer from ``snapshot`` from now on (the caller holds the refresh lock)."""
        self._snapshot = snapshot
        # Built here (the refresh thread in the daemon), not on the first question.
        self._scopes = (snapshot, FileScopes(snapshot.meta))
        self.marks.invalidate()  # an ADR may have changed with it
        self._warm_second()

    def _warm_second(self) -> None:
        """Load the multilingual model now, in the refresh thread, when the vectors first
        need it: not on the first question after a Japanese note appears (~1 s)."""
        if self._batcher is None or self.crosslingual is None or not self._snapshot.multilingual:
            return
        self.crosslingual.load()  # once: a no-op on every later refresh

    @property
    def snapshot(self) -> VectorSnapshot:
        """The vectors currently in memory."""
        return self._snapshot

    @property
    def scopes(self) -> FileScopes:
        """The scoped records of the snapshot in memory (docs/rules.md)."""
        snapshot, cached = self._snapshot, self._scopes
        if cached is None or cached[0] is not snapshot:
            cached = (snapshot, FileScopes(snapshot.meta))
            self._scopes = cached
        return cached[1]

    def _hidden(
        self, root: str, keys: Sequence[str], text: str, session: str = "", transcript: str = ""
    ) -> frozenset[str]:
        """What a message must not rank: rules whose scope says not now (docs/rules.md),
        and the session's own conversation log (never recalled into itself)."""
        scopes = self.scopes
        hidden = scopes.unranked(keys, self.sessions.touched(session), text, root)
        own = scopes.logs_by_session.get(session) if session else None
        hidden.update(p for p in (own, transcript) if p)
        return frozenset(hidden)

    # -- questions ---------------------------------------------------------------

    def embed(self, text: str) -> Any:
        """The query vector of ``text`` (serialized with the other callers)."""
        with self._encode_lock:
            return self.embedder.encode_queries([clip_prompt(text)])[0]

    def _work(self, items: list[Work]) -> list[Ranked]:
        """Embed a batch of questions at once, then rank each (the batcher's job)."""
        started = time.perf_counter()
        # Whatever a client sent, the model gets at most MAX_PROMPT_CHARS of it: it
        # reads no more, and tokenizing a megabyte would stall the whole batch.
        texts = [clip_prompt(text) for text, _, _ in items]
        snapshot = self._snapshot
        with self._encode_lock:
            vectors = self.embedder.encode_queries(texts)
            second = self._second(texts, snapshot)
        embedded = time.perf_counter()
        by_keys: dict[tuple[str, ...], list[int]] = {}
        for i, (_, keys, _) in enumerate(items):
            by_keys.setdefault(keys, []).append(i)
        hits: list[list[DocumentHit]] = [[] for _ in items]
        for keys, idx in by_keys.items():
            pair = None if second is None else (second[0][idx], second[1])
            hidden = [items[i][2] for i in idx]
            words = [texts[i] for i in idx]
            today = date.today()
            ranked_all = snapshot.rank_many(
                vectors[idx],
                keys,
                second=pair,
                hidden=hidden,
                texts=words,
                words=self.thresholds.conversation_words,
                windows=[window(t, today) for t in words],
                dates=self.thresholds.conversation_dates,
            )
            for i, ranked in zip(idx, ranked_all, strict=True):
                hits[i] = ranked
        relevance = self._relevance(vectors, hits, snapshot)
        done = time.perf_counter()
        embed_ms, search_ms = (embedded - started) * 1000, (done - embedded) * 1000
        return [(h, r, embed_ms, search_ms) for h, r in zip(hits, relevance, strict=True)]

    def _second(self, texts: Sequence[str], snapshot: VectorSnapshot) -> SecondScores | None:
        """The questions' multilingual vectors, when the snapshot has records that need
        them (none in an English-only store: the second model is then never loaded)."""
        if self.crosslingual is None or not snapshot.multilingual:
            return None
        vectors = self.crosslingual.encode_queries(texts)
        return None if vectors is None else (vectors, self.crosslingual.calibrate)

    def _relevance(
        self, vectors: Any, hits: list[list[DocumentHit]], snapshot: VectorSnapshot
    ) -> list[float | None]:
        """The learned score of each question's top-ranked notes, rules and ADRs."""
        if self.relevance is None:
            return [None] * len(hits)
        adapted = self.relevance.adapt(vectors)
        out: list[float | None] = []
        for q, ranked in zip(adapted, hits, strict=True):
            docs = [h for h in ranked if h.record.kind in DOCUMENT_KINDS][:DECISION_RANKS]
            out.append(self.relevance.score(q, [snapshot.chunks_of(h.record.path) for h in docs]))
        return out

    def _ranked(
        self, text: str, keys: tuple[str, ...], hidden: frozenset[str] = frozenset()
    ) -> Ranked:
        if self._batcher is not None:
            return self._batcher.submit((text, keys, hidden))
        return self._work([(text, keys, hidden)])[0]

    def rank(
        self,
        text: str,
        project: str | Path | None,
        kinds: Sequence[Kind] | None = None,
        k: int = DOC_RANKS,
        today: date | None = None,
    ) -> list[DocumentHit]:
        """Documents ranked for ``text``: the top ``k`` of ``project``'s root (and shared
        rules), or of every project when ``project`` is None (`precedents query --all`).
        ``today``: the day date words count from (default: this machine's today)."""
        snapshot = self._snapshot
        if project is None:
            keys = tuple(sorted({m["project"] for m in snapshot.meta}))
        else:
            keys = tuple(project_keys(project_root(project)))
        # The hook's ranking keeps 3 conversations; asking for more than that (a
        # project of conversation logs, `query -k 10`) ranks k of each.
        if kinds or k > CONVERSATION_RANKS or today is not None:
            vector = self.embed(text)
            with self._encode_lock:
                second = self._second([clip_prompt(text)], snapshot)
            ranks = max(k, DOC_RANKS)
            text = clip_prompt(text)
            conversations = max(k, CONVERSATION_RANKS)
            hits = snapshot.rank(
                vector,
                keys,
                kinds,
                ranks,
                conversations,
                second,
                text,
                self.thresholds.conversation_words,
                window(text, today or date.today()),
                self.thresholds.conversation_dates,
            )
            return hits[:k]
        return self._ranked(text, keys)[0][:k]

    def query(self, text: str, project: str | Path | None, k: int) -> dict[str, Any]:
        """The `precedents query --json` answer: the top ``k`` documents of ``project``'s
        root and shared rules (every project when None), each ADR with its mark; every
        field inert, a suspect record as its path only (:func:`record_json`)."""
        rows = [
            record_json(hit, self.marks.mark_for(hit.record) if hit.record.kind == "adr" else None)
            for hit in self.rank(text, project, None, k)
        ]
        return {"project": "*all*" if project is None else project_root(project), "results": rows}

    def assess(self, text: str, project: str | Path) -> tuple[list[DocumentHit], float | None]:
        """The ranked documents of ``project`` for ``text`` and the learned relevance of
        the top ones: everything :func:`select` needs (eval calls this once a message)."""
        root = project_root(project)
        keys = tuple(project_keys(root))
        hits, relevance, _, _ = self._ranked(text, keys, self._hidden(root, keys, text))
        return self._unmuted(hits), relevance

    def _unmuted(self, hits: list[DocumentHit]) -> list[DocumentHit]:
        """``hits`` without the records the user muted (they are never injected)."""
        muted = self.muted.paths()
        return [h for h in hits if h.record.path not in muted] if muted else hits

    def context(self, text: str, cwd: str, *, session: str = "", transcript: str = "") -> Answer:
        """What the hook injects for a prompt ``text`` typed in ``cwd``, in ``session``
        (whose log is ``transcript``): a record this session was given is not given again
        unless its file changed since."""
        started = time.perf_counter()
        root = project_root(cwd)
        if len(text.strip()) < MIN_PROMPT_CHARS:
            return Answer(None, skipped="short", project=root)
        snapshot = self._snapshot
        if not snapshot.rows:
            return Answer(None, skipped="no-index", project=root)
        keys = tuple(project_keys(root))
        hidden = self._hidden(root, keys, text, session, transcript)
        hits, relevance, embed_ms, search_ms = self._ranked(text, keys, hidden)
        ranked = time.perf_counter()
        kept = self._unmuted(hits)
        selection = select(kept, self.thresholds, root, relevance, self.marks.successors_for)
        muted: tuple[str, ...] = ()
        if len(kept) < len(hits):  # what the mute list kept out, for `why` (issue #21)
            would = select(hits, self.thresholds, root, relevance, self.marks.successors_for)
            left = {h.record.path for h in kept}
            muted = tuple(h.record.path for h in would.chosen if h.record.path not in left)
        records = [h.record for h in selection.chosen]
        given = self._give(session, records, selection.byte_cap, HEADER)
        done = time.perf_counter()
        return given.answer(
            selection,
            root,
            muted=muted,
            timings_ms={
                "wait": (ranked - started) * 1000 - embed_ms - search_ms,
                "embed": embed_ms,
                "search": search_ms,
                "format": (done - ranked) * 1000,
                "total": (done - started) * 1000,
            },
        )

    def close(self) -> None:
        """Stop the embedding worker and any export."""
        if self._batcher is not None:
            self._batcher.close()
        if self._exporter is not None:
            self._exporter.close()


def auto_context(
    settings: Settings,
    text: str,
    project: str | Path | None = None,
    embedder: Embedder | None = None,
) -> str | None:
    """Exactly what the hook would inject for ``text`` in ``project``, computed in-process.

    The same :class:`Recall` path the daemon serves; for ``precedents query --auto``.
    """
    recall = Recall(settings, embedder)
    try:
        return recall.context(text, str(project or Path.cwd())).context
    finally:
        recall.close()
