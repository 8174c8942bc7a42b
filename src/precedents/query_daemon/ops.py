"""What the daemon answers, op by op (the socket and HTTP transports both call here).

Ops: ``ping`` (at once, even while loading), ``stop``, ``context`` (the
UserPromptSubmit hook), ``file`` (the PreToolUse hook of the file tools),
``session`` (SessionStart), ``query`` (`precedents query`), ``status``
(`precedents status`) and ``index`` (`remember`). The log records ids, sizes,
scores and timings, never a prompt's text; for ``file``, the project and the
records given, never the file's path (it may name what the user works on).
A hook's request id (``rid``: random, it says nothing of the prompt) is logged
with the answer, so that `why` can tell what the hook did with it.

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
from pathlib import Path
from typing import Any

from precedents import __version__
from precedents.config import Settings
from precedents.kinds import git_root

log = logging.getLogger("precedents.daemon")

# However long a client asks to wait for the model: no thread is held longer.
MAX_WAIT_MS = 60_000.0
# The key of an answer under which the transport finds what the answer gives a session
# (session id, request id, paths), to take it back if the answer cannot be sent.
GIVEN = "_given"


class Answers:
    """The ops, as a part of :class:`~precedents.query_daemon.server.Daemon`."""

    settings: Settings
    recall: Any  # recall.Recall once loaded, None before
    _last_question: float
    _loaded: threading.Event  # set when the load is over (done or failed) or on stop
    _stop: threading.Event

    def stop(self, reason: str = "stopped") -> None:  # pragma: no cover - Daemon's
        """Ask the daemon to exit."""
        raise NotImplementedError

    def _dispatch(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "ping":
            return {
                "ok": True,
                "pid": os.getpid(),
                "version": __version__,
                "ready": self.recall is not None,
                "model": self.settings.model,
            }
        if op == "stop":
            self.stop("asked to stop")
            return {"ok": True}
        if op == "query":
            return self._query(request)
        if op == "status":
            summary = self.recall.summary() if self.recall is not None else None
            return {"ok": summary is not None, "summary": summary}
        if op == "index":
            return self._index(request)
        if op not in ("context", "session", "file"):
            return {"ok": False, "error": f"unknown op {op!r}"}
        self._last_question = time.monotonic()
        cwd = request.get("cwd")
        if not isinstance(cwd, str) or not cwd:
            return {"ok": False, "error": "cwd missing"}
        rid = {"rid": _text(request.get("rid"), 32)} if request.get("rid") else {}
        if self.recall is None:
            self._wait_for_load(request.get("wait_ms"))
        if self.recall is None:
            return self._starting(op, cwd, rid)
        session = _text(request.get("session_id"))
        if op == "session":
            started = time.perf_counter()
            text = self.recall.session_context(cwd, session=session)
            log.info(
                "answer %s",
                json.dumps(
                    {
                        "op": op,
                        "project": str(git_root(cwd)),
                        "bytes": len(text.encode()) if text else 0,
                        "ms": round((time.perf_counter() - started) * 1000, 1),
                        **rid,
                    }
                ),
            )
            return {"ok": True, "context": text}
        if op == "file":
            path = request.get("path")
            if not isinstance(path, str) or not path:
                return {"ok": False, "error": "path missing"}
            answer = self.recall.file_context(cwd, path, session=session)
            log.info("answer %s", json.dumps({"op": op, **answer.log_fields(), **rid}))
            return {"ok": True, "context": answer.context, **_given(session, rid, answer)}
        prompt = request.get("prompt")
        if not isinstance(prompt, str):
            return {"ok": False, "error": "prompt missing"}
        transcript = _text(request.get("transcript_path"))
        answer = self.recall.context(prompt, cwd, session=session, transcript=transcript)
        # Ids, bytes, scores, timings and the prompt's length only: never its text.
        fields = {"op": op, "chars": len(prompt), **answer.log_fields(), **rid}
        log.info("answer %s", json.dumps(fields))
        return {"ok": True, "context": answer.context, **_given(session, rid, answer)}

    def take_back(self, given: object) -> None:
        """An answer that could not be sent (its hook had given up): its records are not
        the session's, and the log says it was not delivered (`why` reads that too)."""
        if not isinstance(given, tuple) or self.recall is None:
            return
        session, rid, paths = given
        self.recall.sessions.take_back(session, paths)
        log.info("undelivered %s", json.dumps({"rid": rid, "records": len(paths)}))

    def _wait_for_load(self, wait_ms: object) -> None:
        """Hold a hook question that came before the model was loaded, up to ``wait_ms``."""
        if isinstance(wait_ms, int | float) and not isinstance(wait_ms, bool) and wait_ms > 0:
            self._loaded.wait(min(float(wait_ms), MAX_WAIT_MS) / 1000)

    def _starting(self, op: str, cwd: str, rid: dict[str, str]) -> dict[str, Any]:
        """The answer while the model is not loaded: "starting" (or "stopping": the load
        failed, or the daemon is on its way out)."""
        # The project, so that `why` of that project lists the prompt that got nothing.
        fields = {"op": op, "reason": "starting", "project": str(git_root(cwd)), **rid}
        log.info("answer %s", json.dumps(fields))
        if self._stop.is_set():
            return {"ok": False, "error": "stopping"}
        return {"ok": True, "context": None, "starting": True}

    def _query(self, request: dict[str, Any]) -> dict[str, Any]:
        """`precedents query` through the warm model: ranked records, as the CLI prints them."""
        text, project, k = request.get("text"), request.get("project"), request.get("k", 5)
        if not isinstance(text, str) or not isinstance(k, int) or k < 1:
            return {"ok": False, "error": "text and k missing"}
        if project is not None and not isinstance(project, str):
            return {"ok": False, "error": "project must be a path or null"}
        if self.recall is None:
            return {"ok": False, "error": "starting"}
        self._last_question = time.monotonic()
        started = time.perf_counter()
        answer = self.recall.query(text, project, min(k, 100))
        ms = round((time.perf_counter() - started) * 1000, 1)
        log.info("answer %s", json.dumps({"op": "query", "chars": len(text), "ms": ms}))
        return {"ok": True, **answer}

    def _index(self, request: dict[str, Any]) -> dict[str, Any]:
        """Index one note now with the warm model (`remember`): the save is searchable in
        well under a second, not after a model load. Takes the writer lock like any writer."""
        path, project = request.get("path"), request.get("project")
        if not isinstance(path, str) or not isinstance(project, str) or not path.endswith(".md"):
            return {"ok": False, "error": "path (.md) and project missing"}
        if self.recall is None:
            return {"ok": False, "error": "starting"}
        from precedents.ingest.indexer import index_note

        started = time.perf_counter()
        indexed = index_note(self.settings, self.recall.embedder, Path(path), project)
        self.recall.refresh(now=True)  # searchable from the next question on
        ms = round((time.perf_counter() - started) * 1000, 1)
        log.info("answer %s", json.dumps({"op": "index", "indexed": indexed, "ms": ms}))
        return {"ok": True, "indexed": indexed}


def _given(session: str, rid: dict[str, str], answer: Any) -> dict[str, Any]:
    """``{GIVEN: (session, rid, paths shown)}`` for an answer that gave records, else {}."""
    if not answer.context or not answer.shown:
        return {}
    return {GIVEN: (session, rid.get("rid", ""), tuple(answer.shown))}


def _text(value: object, most: int = 4096) -> str:
    """An optional string field of a request ("" when absent, not text, or too long)."""
    return value if isinstance(value, str) and len(value) <= most else ""
