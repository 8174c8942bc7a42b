"""One question in, the hook's context out: embed, rank, select, format.

:class:`Recall` is the code path the daemon serves and that
``precedents query --auto`` runs in-process (:func:`auto_context`), so the two
can never disagree. It holds the model, an in-memory copy of the vectors
(refreshed from its :class:`~precedents.recall.source.VectorSource` when the
store changes) and the ADR marks.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

from precedents.adr_graph.duplicates import stored_duplicates
from precedents.config import Settings
from precedents.errors import StoreError
from precedents.ingest.sources import project_keys, project_root
from precedents.ingest.team import TEAM, warm_local_names
from precedents.kinds import DOCUMENT_KINDS, Kind
from precedents.models.embedding import Embedder, load_embedder
from precedents.org.snapshot import ORG_SCHEME
from precedents.protocol import HEADER, MIN_PROMPT_CHARS, clip_prompt
from precedents.recall.amendments import Amendments
from precedents.recall.answer import Answer
from precedents.recall.batcher import Batcher, Ranked, Work, daemon_threads
from precedents.recall.commit_files import CommitFiles
from precedents.recall.exported import ExportedVectors
from precedents.recall.files import FileScopes
from precedents.recall.format import record_json
from precedents.recall.hooks import HookAnswers
from precedents.recall.marks import AdrMarks
from precedents.recall.multilingual import Multilingual
from precedents.recall.mute import PROMPT, MuteList
from precedents.recall.org import ORG_KEY, OrgRecords
from precedents.recall.provisional import ProvisionalRules
from precedents.recall.relevance import DECISION_RANKS, Relevance
from precedents.recall.selection import select
from precedents.recall.sessions import SessionLog
from precedents.recall.source import Model, Opener, StoreVectors, VectorSource
from precedents.recall.team_news import TeamSeen
from precedents.recall.vectors import (
    CONVERSATION_RANKS,
    DECIDED_RANKS,
    DOC_RANKS,
    EMPTY,
    MultilingualScores,
    VectorSnapshot,
    merged,
)
from precedents.recall.when import window
from precedents.store.rows import DocumentHit, DocumentRecord

__all__ = ["Answer", "Recall", "auto_context"]

log = logging.getLogger("precedents.daemon")
_NO_SCOPES = FileScopes(())  # before the first snapshot


class Recall(HookAnswers):
    """The model and the vectors in memory (from one :class:`VectorSource`): answers questions."""

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
        # Chosen before the model loads: the daemon's first export runs meanwhile.
        opener: Opener = (
            ExportedVectors.opener(settings) if exported else StoreVectors.opener(settings)
        )
        spec = settings.model_spec()
        self.embedder = embedder or load_embedder(spec)
        self.source: VectorSource = opener(Model(self.embedder.model_id, self.embedder.dimension))
        self.thresholds = settings.thresholds_for(self.embedder.model_id)
        self.relevance = Relevance.for_model(self.embedder.model_id)
        self.multilingual = Multilingual.for_model(self.embedder.model_id, spec)
        self.marks = AdrMarks(settings.cache_dir / "adr")
        self.muted = MuteList(settings.home)
        self.marks.muted = self.muted.paths  # a muted record is never a successor line
        self.team_seen = TeamSeen(settings.home)
        self.commit_files = CommitFiles(settings.cache_dir)
        # The organisation's records (issue #30): their own snapshot, ranked beside ours.
        self.org = OrgRecords(settings.org_dir)
        self.marks.org = self.org
        self.sessions = SessionLog()
        self._scopes: FileScopes | None = None  # the snapshot's, once its globs are compiled
        # Rules read from files of a project the store does not hold yet (the daemon's
        # first sessions, query_daemon/projects.py): served beside the snapshot's.
        self.provisional = ProvisionalRules()
        self._snapshot: VectorSnapshot = EMPTY
        self._refresh_lock = threading.Lock()
        self._encode_lock = threading.Lock()
        self._batcher: Batcher | None = None
        if batch:
            daemon_threads(self.embedder, spec.torch_threads)
            self._batcher = Batcher(self._work)
            # The first calls of a fresh model are several times slower (allocator,
            # kernel selection): pay for them now, not on the user's first message.
            for _ in range(3):
                self.embedder.encode_queries(["warm up the model before the first question"])
        self.refresh()

    # -- the vectors -------------------------------------------------------------

    @property
    def store_problem(self) -> StoreError | None:
        """Why no usable index could be read at the last refresh (None when one was)."""
        return self.source.problem

    def refresh(self, *, now: bool = False) -> bool:
        """Reload the vectors if the store changed since the last load; True when it did.

        ``now``: read the store in this process, at once — after the daemon itself
        wrote to it (`remember`), which already loaded LanceDB here."""
        with self._refresh_lock:
            # The org snapshot first: a pull's new file is loaded here, on the refresh
            # thread, never by a hook (recall/org.py).
            org = self.org.refresh(Model(self.embedder.model_id, self.embedder.dimension))
            snapshot = self.source.refresh(now=now)
            if snapshot is None:
                return org
            self._install(snapshot)
            return True

    def summary(self) -> dict[str, Any] | None:
        """What the store holds (`precedents status`); None while there is no usable index."""
        return self.source.summary()

    def _install(self, snapshot: VectorSnapshot) -> None:
        """Answer from ``snapshot`` from now on (the caller holds the refresh lock)."""
        self._snapshot = snapshot
        # Built here (the refresh thread in the daemon), never on a hook's path: the
        # previous scopes serve until the rules' globs are compiled (issue #28).
        scopes, previous = FileScopes(self._scope_rows(snapshot)), self._scopes
        if previous is None:
            self._scopes = scopes  # the first: notes and ADRs at once, rules once compiled
        cache = scopes.compile(previous)
        self._scopes = scopes
        if cache.refused:
            log.warning(
                "%d rule scopes past this snapshot's glob budget (%s characters) attach to no file",
                cache.refused,
                f"{cache.budget:,}",
            )
        self.marks.invalidate()  # an ADR may have changed with it
        self.marks.amendments = Amendments.of(snapshot)  # so may a chat's decision
        self.marks.duplicates = stored_duplicates(snapshot.meta)  # an id two folders claim
        # A team note's line asks whether its author is the local user: read here, once.
        warm_local_names({str(r["project"]) for r in snapshot.meta if r.get("origin") == TEAM})
        self._warm_multilingual()

    def _scope_rows(self, snapshot: VectorSnapshot) -> Sequence[Mapping[str, Any]]:
        """The rows scopes are built from: the snapshot's, then the provisional rules (a
        path the snapshot holds keeps its stored row: FileScopes keeps the first)."""
        extra = self.provisional.rows()
        return [*snapshot.meta, *extra] if extra else snapshot.meta

    def rescope(self) -> None:
        """Build the scopes again after the provisional rules changed (off the hooks'
        path: the previous scopes serve until the new ones are compiled)."""
        with self._refresh_lock:
            scopes = FileScopes(self._scope_rows(self._snapshot))
            scopes.compile(self._scopes)
            self._scopes = scopes

    def _warm_multilingual(self) -> None:
        """Load the multilingual model now, in the refresh thread, when the vectors first
        need it: not on the first question after a Japanese note appears (~1 s)."""
        if self._batcher is None or self.multilingual is None or not self._snapshot.multilingual:
            return
        self.multilingual.load()  # once: a no-op on every later refresh

    @property
    def snapshot(self) -> VectorSnapshot:
        """The vectors currently in memory."""
        return self._snapshot

    @property
    def scopes(self) -> FileScopes:
        """The scoped records of the snapshot in memory (docs/rules.md)."""
        return self._scopes if self._scopes is not None else _NO_SCOPES

    def _hidden(
        self, root: str, keys: Sequence[str], text: str, session: str = "", transcript: str = ""
    ) -> frozenset[str]:
        """What a message must not rank: rules whose scope says not now (docs/rules.md),
        rules Claude Code loaded into the session itself, and the session's own
        conversation log (never recalled into itself)."""
        scopes = self.scopes
        hidden = scopes.unranked(keys, self.sessions.touched(session), text, root)
        hidden.update(self.sessions.loaded(session))  # in Claude Code's context already
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
            multilingual = self._multilingual_scores(texts, snapshot)
        embedded = time.perf_counter()
        by_keys: dict[tuple[str, ...], list[int]] = {}
        for i, (_, keys, _) in enumerate(items):
            by_keys.setdefault(keys, []).append(i)
        hits: list[list[DocumentHit]] = [[] for _ in items]
        for keys, idx in by_keys.items():
            pair = None if multilingual is None else (multilingual[0][idx], multilingual[1])
            hidden = [items[i][2] for i in idx]
            words = [texts[i] for i in idx]
            today = date.today()
            ranked_all = snapshot.rank_many(
                vectors[idx],
                keys,
                multilingual=pair,
                hidden=hidden,
                texts=words,
                words=self.thresholds.conversation_words,
                windows=[window(t, today) for t in words],
                dates=self.thresholds.conversation_dates,
                decided_ranks=DECIDED_RANKS,
            )
            org = self._org_ranked(vectors[idx], keys, hidden, snapshot)
            for n, (i, ranked) in enumerate(zip(idx, ranked_all, strict=True)):
                hits[i] = merged(ranked, org[n]) if org else ranked
        relevance = self._relevance(vectors, hits, snapshot)
        done = time.perf_counter()
        embed_ms, search_ms = (embedded - started) * 1000, (done - embedded) * 1000
        return [(h, r, embed_ms, search_ms) for h, r in zip(hits, relevance, strict=True)]

    def _org_ranked(
        self,
        vectors: Any,
        keys: Sequence[str],
        hidden: Sequence[frozenset[str]] | None,
        snapshot: VectorSnapshot,
        kinds: Sequence[Kind] | None = None,
        ranks: int = DOC_RANKS,
    ) -> list[list[DocumentHit]]:
        """The org records' ranking of the same questions (none when no org snapshot is
        loaded): the same code over the org matrix, less what the project must not see
        (recall/org.py). ``keys``: the project's (the first is its root); empty for
        every project (`query --all`), which leaves out no org record."""
        org = self.org.snapshot
        if not org.rows:
            return []
        excluded = self.org.excluded(keys[0], snapshot, tuple(keys)) if keys else frozenset()
        return org.rank_many(
            vectors,
            (ORG_KEY,),
            kinds,
            ranks,
            0,
            hidden=hidden,
            excluded=excluded,
        )

    def _chunks_of(self, path: str, snapshot: VectorSnapshot) -> Any:
        """A document's chunk vectors, from the org snapshot for an org record."""
        org = self.org.snapshot
        if org.rows and path.startswith(ORG_SCHEME):
            return org.chunks_of(path)
        return snapshot.chunks_of(path)

    def _multilingual_scores(
        self, texts: Sequence[str], snapshot: VectorSnapshot
    ) -> MultilingualScores | None:
        """The questions' multilingual vectors, when the snapshot has records that need
        them (none in an English-only store: the multilingual model is then never loaded)."""
        if self.multilingual is None or not snapshot.multilingual:
            return None
        vectors = self.multilingual.encode_queries(texts)
        return None if vectors is None else (vectors, self.multilingual.calibrate)

    def _relevance(
        self, vectors: Any, hits: list[list[DocumentHit]], snapshot: VectorSnapshot
    ) -> list[float | None]:
        """The learned score of each question's top-ranked notes, rules and ADRs; and, on
        the hits themselves, of the decisions of its top-ranked deciding chats."""
        if self.relevance is None:
            return [None] * len(hits)
        adapted = self.relevance.adapt(vectors)
        out: list[float | None] = []
        for n, (q, ranked) in enumerate(zip(adapted, hits, strict=True)):
            docs = [h for h in ranked if h.record.kind in DOCUMENT_KINDS][:DECISION_RANKS]
            chunks = [self._chunks_of(h.record.path, snapshot) for h in docs]
            out.append(self.relevance.score(q, chunks) if docs else None)
            hits[n] = _decisions_scored(ranked, q, snapshot)
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
        every = project is None
        if project is None:
            keys = tuple(sorted({m["project"] for m in snapshot.meta}))
        else:
            keys = tuple(project_keys(project_root(project)))
        # The hook's ranking keeps 3 conversations; asking for more than that (a
        # project of conversation logs, `query -k 10`) ranks k of each.
        if kinds or k > CONVERSATION_RANKS or today is not None:
            vector = self.embed(text)
            with self._encode_lock:
                multilingual = self._multilingual_scores([clip_prompt(text)], snapshot)
            ranks = max(k, DOC_RANKS)
            text = clip_prompt(text)
            conversations = max(k, CONVERSATION_RANKS)
            hits = snapshot.rank(
                vector,
                keys,
                kinds,
                ranks,
                conversations,
                multilingual,
                text,
                self.thresholds.conversation_words,
                window(text, today or date.today()),
                self.thresholds.conversation_dates,
            )
            org = self._org_ranked(
                vector.reshape(1, -1), () if every else keys, None, snapshot, kinds, ranks
            )
            return (merged(hits, org[0], ranks) if org else hits)[:k]
        return _few_conversations(self._ranked(text, keys)[0])[:k]

    def query(self, text: str, project: str | Path | None, k: int) -> dict[str, Any]:
        """The `precedents query --json` answer: the top ``k`` documents of ``project``'s
        root and shared rules (every project when None), each ADR with its mark; every
        field inert, a suspect record as its path only (:func:`record_json`)."""
        muted = self.muted.paths()
        rows = [
            record_json(hit, self._mark_of(hit.record), muted=hit.record.path in muted)
            for hit in self.rank(text, project, None, k)
        ]
        return {"project": "*all*" if project is None else project_root(project), "results": rows}

    def _mark_of(self, record: DocumentRecord) -> str | None:
        """A result's mark for `query --json`: every ADR's (live: ''), an amended record's."""
        mark = self.marks.mark_for(record)
        return mark if mark or record.kind == "adr" else None

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
        if not snapshot.rows and not self.org.snapshot.rows:
            return Answer(None, skipped="no-index", project=root)
        keys = tuple(project_keys(root))
        hidden = self._hidden(root, keys, text, session, transcript)
        hits, relevance, embed_ms, search_ms = self._ranked(text, keys, hidden)
        ranked = time.perf_counter()
        kept = self._unmuted(hits)
        successors = self._successors_in(root)
        selection = select(kept, self.thresholds, root, relevance, successors)
        muted: list[tuple[str, str]] = []
        if len(kept) < len(hits):  # what the mute list kept out, for `why` (issue #21)
            would = select(hits, self.thresholds, root, relevance, successors)
            left = {h.record.path for h in kept}
            muted = [(h.record.path, PROMPT) for h in would.chosen if h.record.path not in left]
        records = [h.record for h in selection.chosen]
        given = self._give(session, records, selection.byte_cap, HEADER, root=root)
        done = time.perf_counter()
        return given.answer(
            selection,
            root,
            muted=self._with_successors_muted(muted, records, given),
            timings_ms={
                "wait": (ranked - started) * 1000 - embed_ms - search_ms,
                "embed": embed_ms,
                "search": search_ms,
                "format": (done - ranked) * 1000,
                "total": (done - started) * 1000,
            },
        )

    def close(self) -> None:
        """Stop the embedding worker and whatever the vectors' source runs."""
        if self._batcher is not None:
            self._batcher.close()
        self.source.close()


def _decisions_scored(
    ranked: list[DocumentHit], adapted: Any, snapshot: VectorSnapshot
) -> list[DocumentHit]:
    """``ranked`` with the top ``DECISION_RANKS`` deciding chats (by rank) carrying the
    adapted score of their deciding exchange (recall/selection.py)."""
    out, scored = list(ranked), 0
    for i, hit in enumerate(out):
        if scored >= DECISION_RANKS:
            break
        if hit.record.kind != "conversation" or not hit.record.decided:
            continue
        scored += 1
        vector = snapshot.decision_vector(hit.record.path)
        if vector is not None:
            out[i] = replace(hit, relevance=float(vector @ adapted))
    return out


def _few_conversations(hits: list[DocumentHit]) -> list[DocumentHit]:
    """``hits`` with the conversations after the first ``CONVERSATION_RANKS`` left out:
    the hook ranks more of them (the deciding ones, for their own gap), a listing shows
    as many as before."""
    out, seen = [], 0
    for hit in hits:
        if hit.record.kind == "conversation":
            seen += 1
            if seen > CONVERSATION_RANKS:
                continue
        out.append(hit)
    return out


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
