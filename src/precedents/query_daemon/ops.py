"""What the daemon answers, op by op (the socket and HTTP transports both call here).

Ops (:data:`precedents.protocol.Op`), each one handler in :data:`HANDLERS`:
``ping`` (at once, even while loading), ``stop``, ``context`` (the
UserPromptSubmit hook), ``file`` (the PreToolUse hook of the file tools),
``session`` (SessionStart), ``instructions`` (InstructionsLoaded: an
instruction file Claude Code loaded itself), ``query`` (`precedents query`), ``status``
(`precedents status`), ``index`` (`remember`) and ``recall`` (the MCP tool:
``context`` and ``query`` in one round trip, each logged as itself) and
``remember`` (`precedents remember`: a note the CLI wrote, indexed now, or as soon
as the model is loaded when it comes during the load). The log
records ids, sizes, scores and timings, never a prompt's text; for ``file``,
the project and the records given, never the file's path (it may name what the
user works on). A hook's request id (``rid``: random, it says nothing of the
prompt) is logged with the answer, so that `why` can tell what the hook did
with it.

A hook question may carry ``wait_ms``: while the model is loading, the answer
waits for it that long (at most :data:`MAX_WAIT_MS`) instead of saying
"starting" at once (issue #21: the first prompt of a session).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, cast

from precedents import __version__
from precedents.config import Settings
from precedents.kinds import git_root
from precedents.query_daemon.hook_input import MAX_TOOL_CHARS
from precedents.query_daemon.org_pull import OrgPulls
from precedents.query_daemon.projects import PROVISIONAL_WAIT_S, FirstSessions

if TYPE_CHECKING:
    from precedents.protocol import Answer, Failure, HookAnswer, Op, QueryAnswer, RememberAnswer
    from precedents.recall.answer import Answer as Decision
    from precedents.recall.core import Recall

log = logging.getLogger("precedents.daemon")

# However long a client asks to wait for the model: no thread is held longer.
MAX_WAIT_MS = 60_000.0

# A request as it came off the wire: every field is checked before it is used.
Request = Mapping[str, object]


class Given(NamedTuple):
    """What a hook answer gave a session: taken back if the answer cannot be sent."""

    session: str
    rid: str
    paths: tuple[str, ...]


class Reply(NamedTuple):
    """An op's answer (what goes on the wire) and what it gave a session, if anything."""

    answer: Answer
    given: Given | None = None

    @property
    def context(self) -> str | None:
        """The text a hook answer brings; None for a failure, nothing found, or another op."""
        context = self.answer.get("context")
        return context if self.answer["ok"] and isinstance(context, str) else None


class _Asked(NamedTuple):
    """A hook question the loaded model can answer."""

    recall: Recall
    cwd: str
    session: str
    rid: dict[str, str]


class Answers:
    """The ops, as a part of :class:`~precedents.query_daemon.server.Daemon`."""

    settings: Settings
    recall: Recall | None  # once loaded
    _last_question: float
    _loaded: threading.Event  # set when the load is over (done or failed) or on stop
    _stop: threading.Event
    first_sessions: FirstSessions  # the projects hooks come from (issue #29)
    org_pulls: OrgPulls  # the org index's background pulls (issue #30)
    _notes_taken = 0  # `remember` notes taken, not yet indexed

    def stop(self, reason: str = "stopped") -> None:  # pragma: no cover - Daemon's
        """Ask the daemon to exit."""
        raise NotImplementedError

    def _dispatch(self, request: Request) -> Reply:
        op = request.get("op")
        # Any string may come: .get finds no handler for one that is not an Op.
        handler = HANDLERS.get(cast("Op", op)) if isinstance(op, str) else None
        if handler is None:
            return Reply({"ok": False, "error": f"unknown op {op!r}"})
        return handler(self, request)

    def _ping(self, request: Request) -> Reply:
        return Reply(
            {
                "ok": True,
                "pid": os.getpid(),
                "version": __version__,
                "ready": self.recall is not None,
                "model": self.settings.model,
            }
        )

    def _stop_op(self, request: Request) -> Reply:
        self.stop("asked to stop")
        return Reply({"ok": True})

    def _status(self, request: Request) -> Reply:
        summary = self.recall.summary() if self.recall is not None else None
        return Reply({"ok": summary is not None, "summary": summary})

    def _asked(self, op: str, request: Request) -> _Asked | Reply:
        """What the hook ops share: a cwd, the request id, a model still loading (waited
        for up to ``wait_ms``); the question, or the answer when it cannot be asked."""
        self._last_question = time.monotonic()
        cwd = request.get("cwd")
        if not isinstance(cwd, str) or not cwd:
            return Reply({"ok": False, "error": "cwd missing"})
        rid = {"rid": _text(request.get("rid"), 32)} if request.get("rid") else {}
        noted = self.first_sessions.note(cwd)
        if self.recall is None:
            self._wait_for_load(request.get("wait_ms"))
        if self.recall is None:
            return Reply(self._starting(op, cwd, rid))
        self._first_rules(op, noted)
        return _Asked(self.recall, cwd, _text(request.get("session_id")), rid)

    def _session(self, request: Request) -> Reply:
        self.org_pulls.session_started()  # a pull in the background when the last is old
        asked = self._asked("session", request)
        if isinstance(asked, Reply):
            return asked
        started = time.perf_counter()
        answer = asked.recall.session_answer(asked.cwd, session=asked.session)
        text = answer.context
        log.info(
            "answer %s",
            json.dumps(
                {
                    "op": "session",
                    "project": str(git_root(asked.cwd)),
                    "bytes": len(text.encode()) if text else 0,
                    "ms": round((time.perf_counter() - started) * 1000, 1),
                    # What the mute list kept out of the lists (`why` shows it).
                    "muted": [{"path": p, "route": r} for p, r in answer.muted],
                    **asked.rid,
                }
            ),
        )
        return Reply({"ok": True, "context": text})

    def _file(self, request: Request) -> Reply:
        asked = self._asked("file", request)
        if isinstance(asked, Reply):
            return asked
        path = request.get("path")
        if not isinstance(path, str) or not path:
            return Reply({"ok": False, "error": "path missing"})
        answer = asked.recall.file_context(
            asked.cwd,
            path,
            session=asked.session,
            tool=_text(request.get("tool"), MAX_TOOL_CHARS),
            transcript=_text(request.get("transcript_path")),
        )
        log.info("answer %s", json.dumps({"op": "file", **answer.log_fields(), **asked.rid}))
        return _hook_reply(answer, asked)

    def _instructions(self, request: Request) -> Reply:
        """InstructionsLoaded: Claude Code loaded this CLAUDE.md or rule file into the
        session itself; the hooks give it no more there (docs/rules.md). Logged without
        the file's path, like the file hook's."""
        asked = self._asked("instructions", request)
        if isinstance(asked, Reply):
            return asked
        path = request.get("path")
        if not isinstance(path, str) or not path or not os.path.isabs(path):
            return Reply({"ok": False, "error": "path missing"})
        known = asked.recall.instructions_loaded(path, session=asked.session)
        reason = _text(request.get("reason"), MAX_TOOL_CHARS)
        fields = {"op": "instructions", "reason": reason, "known": known, **asked.rid}
        log.info("answer %s", json.dumps(fields))
        return Reply({"ok": True, "context": None})

    def _context(self, request: Request) -> Reply:
        asked = self._asked("context", request)
        if isinstance(asked, Reply):
            return asked
        prompt = request.get("prompt")
        if not isinstance(prompt, str):
            return Reply({"ok": False, "error": "prompt missing"})
        transcript = _text(request.get("transcript_path"))
        answer = asked.recall.context(
            prompt, asked.cwd, session=asked.session, transcript=transcript
        )
        # Ids, bytes, scores, timings and the prompt's length only: never its text.
        fields = {"op": "context", "chars": len(prompt), **answer.log_fields(), **asked.rid}
        log.info("answer %s", json.dumps(fields))
        return _hook_reply(answer, asked)

    def _first_rules(self, op: str, noted: threading.Event) -> None:
        """The file hook of a project noted this moment (its first session) waits, briefly,
        for its rule files to be read (query_daemon/projects.py); other hooks never wait."""
        if op == "file" and not noted.is_set():
            noted.wait(PROVISIONAL_WAIT_S)

    def take_back(self, given: Given | None) -> None:
        """An answer that could not be sent (its hook had given up): its records are not
        the session's, and the log says it was not delivered (`why` reads that too)."""
        if given is None or self.recall is None:
            return
        self.recall.sessions.take_back(given.session, given.paths)
        log.info("undelivered %s", json.dumps({"rid": given.rid, "records": len(given.paths)}))

    def _wait_for_load(self, wait_ms: object) -> None:
        """Hold a hook question that came before the model was loaded, up to ``wait_ms``."""
        if isinstance(wait_ms, int | float) and not isinstance(wait_ms, bool) and wait_ms > 0:
            self._loaded.wait(min(float(wait_ms), MAX_WAIT_MS) / 1000)

    def _starting(self, op: str, cwd: str, rid: dict[str, str]) -> HookAnswer | Failure:
        """The answer while the model is not loaded: "starting" (or "stopping": the load
        failed, or the daemon is on its way out)."""
        # The project, so that `why` of that project lists the prompt that got nothing.
        fields = {"op": op, "reason": "starting", "project": str(git_root(cwd)), **rid}
        log.info("answer %s", json.dumps(fields))
        if self._stop.is_set():
            return {"ok": False, "error": "stopping"}
        return {"ok": True, "context": None, "starting": True}

    def _query(self, request: Request) -> Reply:
        return Reply(self._ranked(request))

    def _ranked(self, request: Request) -> QueryAnswer | Failure:
        """`precedents query` through the warm model: ranked records, as the CLI prints them."""
        text, project, k = request.get("text"), request.get("project"), request.get("k", 5)
        if not isinstance(text, str) or not isinstance(k, int) or k < 1:
            return {"ok": False, "error": "text and k missing"}
        if project is not None and not isinstance(project, str):
            return {"ok": False, "error": "project must be a path or null"}
        if self.recall is None:
            return {"ok": False, "error": "starting"}
        self._last_question = time.monotonic()
        # The notes `remember` handed over come first: `remember` then `query` finds it.
        with _NOTES:
            _NOTES.wait_for(lambda: self._notes_taken == 0, NOTES_WAIT_S)
        started = time.perf_counter()
        answer = self.recall.query(text, project, min(k, 100))
        ms = round((time.perf_counter() - started) * 1000, 1)
        log.info("answer %s", json.dumps({"op": "query", "chars": len(text), "ms": ms}))
        return {"ok": True, "project": answer["project"], "results": answer["results"]}

    def _recall(self, request: Request) -> Reply:
        """The MCP `recall` tool in one round trip: what ``context`` answers for the prompt
        (no session: the tool is no hook) and what ``query`` answers, each logged as itself."""
        prompt, cwd, k = request.get("prompt"), request.get("cwd"), request.get("k", 5)
        if not isinstance(k, int) or k < 1:
            return Reply({"ok": False, "error": "text and k missing"})
        if self.recall is None:
            return Reply({"ok": False, "error": "starting"})
        hook = self._context({"op": "context", "prompt": prompt, "cwd": cwd})
        if not hook.answer["ok"]:
            return hook
        ranked = self._ranked({"text": prompt, "project": cwd, "k": k})
        if ranked["ok"] is False:
            return Reply(ranked, hook.given)
        return Reply(
            {
                "ok": True,
                "context": hook.context,
                "project": ranked["project"],
                "results": ranked["results"],
            },
            hook.given,
        )

    def _index(self, request: Request) -> Reply:
        """Index one note now with the warm model (`remember`): the save is searchable in
        well under a second, not after a model load. Takes the writer lock like any writer."""
        path, project = request.get("path"), request.get("project")
        if not isinstance(path, str) or not isinstance(project, str) or not path.endswith(".md"):
            return Reply({"ok": False, "error": "path (.md) and project missing"})
        if self.recall is None:
            return Reply({"ok": False, "error": "starting"})
        from precedents.ingest.indexer import index_note

        started = time.perf_counter()
        indexed = index_note(self.settings, self.recall.embedder, Path(path), project)
        self.recall.refresh(now=True)  # searchable from the next question on
        ms = round((time.perf_counter() - started) * 1000, 1)
        log.info("answer %s", json.dumps({"op": "index", "indexed": indexed, "ms": ms}))
        return Reply({"ok": True, "indexed": indexed})

    def _remember(self, request: Request) -> Reply:
        """A note `remember` has just written (issue #29), taken at once and indexed on a
        thread of its own, once the model is loaded: the CLI waits neither for a model load
        nor for LanceDB (imported here on the first note only, to keep it out of a daemon
        that never writes: 1-7 s on a busy 2-core machine). A `query` or `recall` asked
        meanwhile waits for the notes taken (``_ranked``): remember, then query, finds it."""
        path, project = request.get("path"), request.get("project")
        if not isinstance(path, str) or not isinstance(project, str) or not path.endswith(".md"):
            return Reply({"ok": False, "error": "path (.md) and project missing"})
        if self._stop.is_set():
            return Reply({"ok": False, "error": "stopping"})
        self._last_question = time.monotonic()
        loaded = self.recall is not None
        with _NOTES:
            self._notes_taken += 1
        # Not a daemon thread: a note being written when the daemon stops is finished.
        threading.Thread(
            target=self._remember_when_loaded, args=(path, project), name="remember"
        ).start()
        log.info("answer %s", json.dumps({"op": "remember", "taken": True, "loaded": loaded}))
        taken: RememberAnswer = {"ok": True, "loaded": loaded}
        return Reply(taken)

    def _remember_when_loaded(self, path: str, project: str) -> None:
        """A note taken, indexed once the model is loaded. The load failed or the daemon
        stopped first: the note is on disk, and the watcher or `reindex` finds it."""
        try:
            # LanceDB's import (1-4 s on a busy 2-core machine) while the model loads.
            import precedents.ingest.indexer  # noqa: F401

            self._loaded.wait()
            recall = self.recall
            if recall is None or self._stop.is_set():
                log.warning("a remembered note was not indexed (the daemon stopped first)")
                return
            self._index_remembered(recall, path, project)
        except Exception:  # a thread of its own: nobody else would hear of it
            log.exception("indexing a remembered note failed")
        finally:
            with _NOTES:
                self._notes_taken -= 1
                _NOTES.notify_all()

    def _index_remembered(self, recall: Recall, path: str, project: str) -> None:
        from precedents.ingest.remember import index_remembered

        with _REMEMBERING:
            started = time.perf_counter()
            indexed = index_remembered(self.settings, recall.embedder, Path(path), project)
            recall.refresh(now=True)  # searchable from the next question on
        ms = round((time.perf_counter() - started) * 1000, 1)
        log.info("answer %s", json.dumps({"op": "remember", "indexed": indexed, "ms": ms}))


# Remembered notes are indexed one at a time (the writer lock is one per process).
_REMEMBERING = threading.Lock()
# Guards Answers._notes_taken; notified as each note taken is indexed.
_NOTES = threading.Condition()
# The longest a `query` waits for the notes taken (past it: answered anyway).
NOTES_WAIT_S = 20.0  # below api.QUERY_S, the client's budget

Handler = Callable[[Answers, Request], Reply]

# The dispatch table: one handler per op of the protocol (test_front_door checks both ways).
HANDLERS: dict[Op, Handler] = {
    "ping": Answers._ping,
    "stop": Answers._stop_op,
    "status": Answers._status,
    "query": Answers._query,
    "index": Answers._index,
    "recall": Answers._recall,
    "context": Answers._context,
    "session": Answers._session,
    "file": Answers._file,
    "instructions": Answers._instructions,
    "remember": Answers._remember,
}


def _hook_reply(answer: Decision, asked: _Asked) -> Reply:
    """A prompt or file hook's reply: its context, and the records it gave the session."""
    given = None
    if answer.context and answer.shown:
        given = Given(asked.session, asked.rid.get("rid", ""), tuple(answer.shown))
    return Reply({"ok": True, "context": answer.context}, given)


def _text(value: object, most: int = 4096) -> str:
    """An optional string field of a request ("" when absent, not text, or too long)."""
    return value if isinstance(value, str) and len(value) <= most else ""
