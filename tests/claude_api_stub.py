"""A scripted stand-in for the Anthropic Messages API, for tests that run the real Claude Code.

Standard library only. ``StubApi`` serves on 127.0.0.1 (a free port), records
every request, answers ``count_tokens``, and answers ``/v1/messages`` from a
script of turns::

    with StubApi([ToolUse("Write", {"file_path": p, "content": "x"}), Text("OK")]) as api:
        subprocess.run(
            [claude, "-p", "go", "--max-turns", "3", "--allowedTools", "Read,Edit,Write"],
            cwd=project, env=claude_env(tmp_path, api.url),
        )
    assert "MARK" in hook_context(api.main_requests()[-1].body, "PreToolUse")[0]

Main-loop requests are the /v1/messages requests whose ``tools`` list holds
``main_loop_tool`` (``Read`` by default; ``None``: any tool at all). Side requests
(a title or other small-model call without tools) always get ``Text(side_text)``.
A main-loop request gets ``turns[n]``, n being the number of assistant messages
already in its ``messages`` (a retried request gets the same turn again); past
the end of the script, ``Text(done_text)``. Each reply has its own message id:
Claude Code merges assistant replies that share an id into one message.

Findings behind this (Claude Code 2.1.332): docs/claude-code-hooks-probe.md.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

CLAUDE_CODE_VERSION = os.environ.get("PRECEDENTS_TEST_CLAUDE_CODE", "2.1.332")
CACHE = Path(os.environ.get("PRECEDENTS_TEST_CACHE", Path.home() / ".cache" / "precedents-test"))
# Where tests/test_claude_code_e2e.py's ``claude_bin`` fixture installs Claude Code.
CLAUDE_CODE_EXE = CACHE / f"claude-code-{CLAUDE_CODE_VERSION}" / "node_modules" / ".bin" / "claude"

# The tool whose presence in ``tools`` marks a main-loop request.
MAIN_LOOP_TOOL = "Read"
# Claude Code labels a hook's additionalContext "<label> hook additional context: TEXT",
# the label being "<Event>:<ToolName>" for tool events ("PreToolUse:Write") and
# "<Event>" otherwise ("UserPromptSubmit").
CONTEXT_MARK = " hook additional context: "

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class Text:
    """An assistant turn that answers with text and ends the turn."""

    text: str = "OK"


@dataclass(frozen=True)
class ToolUse:
    """An assistant turn that calls one tool (``stop_reason: tool_use``)."""

    name: str
    input: Mapping[str, Any]
    id: str | None = None  # default: toolu_stub_<n>


Turn = Text | ToolUse


@dataclass
class Request:
    """One request as received."""

    method: str
    path: str
    headers: dict[str, str]
    body: str
    kind: str = "other"  # "main", "side", "count_tokens" or "other"
    turn: Turn | None = None  # what the stub answered with, for /v1/messages

    @property
    def json(self) -> JsonObject | None:
        try:
            data = json.loads(self.body)
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    @property
    def tool_names(self) -> list[str]:
        data = self.json or {}
        tools = data.get("tools") or []
        return [t.get("name", "") for t in tools if isinstance(t, dict)]

    @property
    def messages(self) -> list[JsonObject]:
        data = self.json or {}
        msgs = data.get("messages") or []
        return [m for m in msgs if isinstance(m, dict)]


_ERROR_404 = b'{"type":"error","error":{"type":"not_found_error","message":"no"}}'


def _sse(events: Sequence[JsonObject]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def _message(model: str, message_id: str) -> JsonObject:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }


def _block(turn: Turn, tool_id: str) -> JsonObject:
    if isinstance(turn, ToolUse):
        return {"type": "tool_use", "id": tool_id, "name": turn.name, "input": dict(turn.input)}
    return {"type": "text", "text": turn.text}


def reply_stream(
    turn: Turn,
    model: str = "claude-stub",
    tool_id: str = "toolu_stub",
    message_id: str = "msg_stub",
) -> bytes:
    """The SSE body of a streamed reply holding ``turn``.

    Give each reply its own ``message_id``: Claude Code merges assistant replies that
    share one id into a single assistant message.
    """
    if isinstance(turn, ToolUse):
        start: JsonObject = {"type": "tool_use", "id": tool_id, "name": turn.name, "input": {}}
        delta: JsonObject = {"type": "input_json_delta", "partial_json": json.dumps(turn.input)}
        stop = "tool_use"
    else:
        start = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": turn.text}
        stop = "end_turn"
    return _sse(
        [
            {"type": "message_start", "message": _message(model, message_id)},
            {"type": "content_block_start", "index": 0, "content_block": start},
            {"type": "content_block_delta", "index": 0, "delta": delta},
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 1},
            },
            {"type": "message_stop"},
        ]
    )


def reply_json(
    turn: Turn,
    model: str = "claude-stub",
    tool_id: str = "toolu_stub",
    message_id: str = "msg_stub",
) -> bytes:
    """The JSON body of a non-streamed reply holding ``turn``."""
    stop = "tool_use" if isinstance(turn, ToolUse) else "end_turn"
    reply = {**_message(model, message_id), "content": [_block(turn, tool_id)], "stop_reason": stop}
    return json.dumps(reply).encode()


class StubApi:
    """A Messages API on 127.0.0.1 that records requests and replies from a script.

    Use as a context manager (or call ``start``/``stop``). ``url`` is the value for
    ANTHROPIC_BASE_URL; ``requests`` every request in arrival order (``kind``:
    "main", "side", "count_tokens" or "other"; ``turn``: the reply); ``bodies``
    their raw bodies.
    """

    def __init__(
        self,
        turns: Sequence[Turn] = (),
        *,
        done_text: str = "OK",
        side_text: str = "OK",
        main_loop_tool: str | None = MAIN_LOOP_TOOL,
    ) -> None:
        self.turns: list[Turn] = list(turns)
        self.done_text = done_text
        self.side_text = side_text
        self.main_loop_tool = main_loop_tool
        self.requests: list[Request] = []
        # The raw bodies, appended as they come (a live list: safe to hold on to).
        self.bodies: list[str] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> StubApi:
        if self._server is None:
            self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
            self._server.daemon_threads = True
            self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
            self._thread = None

    def __enter__(self) -> StubApi:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("StubApi is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    # -- what was received -------------------------------------------------------------

    def main_requests(self) -> list[Request]:
        """The main-loop /v1/messages requests, in order."""
        with self._lock:
            return [r for r in self.requests if r.kind == "main"]

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()
            self.bodies.clear()

    # -- replies -----------------------------------------------------------------------

    def is_main_loop(self, request: Request) -> bool:
        names = request.tool_names
        return bool(names) if self.main_loop_tool is None else self.main_loop_tool in names

    def choose(self, request: Request) -> Turn:
        """The turn that answers a /v1/messages request (``kind`` already set)."""
        if request.kind != "main":
            return Text(self.side_text)
        done = sum(1 for m in request.messages if m.get("role") == "assistant")
        return self.turns[done] if done < len(self.turns) else Text(self.done_text)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
                self.send_response(code)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _record(self) -> Request:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
                req = Request(self.command, self.path, dict(self.headers.items()), raw)
                with api._lock:
                    api.requests.append(req)
                    api.bodies.append(raw)
                return req

            def do_GET(self) -> None:
                self._record()
                self._send(404, _ERROR_404)

            def do_HEAD(self) -> None:
                self._record()
                self._send(200, b"")

            def do_POST(self) -> None:
                req = self._record()
                path = self.path.split("?", 1)[0]
                if path == "/v1/messages/count_tokens":
                    req.kind = "count_tokens"
                    self._send(200, b'{"input_tokens": 10}')
                    return
                if path != "/v1/messages":
                    self._send(404, _ERROR_404)
                    return
                req.kind = "main" if api.is_main_loop(req) else "side"
                turn = req.turn = api.choose(req)
                data = req.json or {}
                model = str(data.get("model") or "claude-stub")
                n = next(api._ids)
                tool_id = (turn.id or f"toolu_stub_{n}") if isinstance(turn, ToolUse) else ""
                args = (turn, model, tool_id, f"msg_stub_{n}")
                if data.get("stream"):
                    self._send(200, reply_stream(*args), "text/event-stream")
                else:
                    self._send(200, reply_json(*args))

        return Handler


# -- Claude Code's environment ---------------------------------------------------------


def claude_env(
    tmp_path: Path,
    api_url: str,
    base: Mapping[str, str] | None = None,
    **extra: str,
) -> dict[str, str]:
    """Claude Code's environment for an offline test run.

    ``base`` (default ``os.environ``) plus: a private HOME and CLAUDE_CONFIG_DIR
    under ``tmp_path``, the stand-in API with a dummy key, and no telemetry,
    updates or other non-essential traffic; ``extra`` last. CLAUDECODE (set when
    the tests themselves run inside Claude Code) is removed.
    """
    env = dict(os.environ if base is None else base)
    env.update(
        HOME=str(tmp_path / "home"),
        CLAUDE_CONFIG_DIR=str(tmp_path / "claude-config"),
        ANTHROPIC_BASE_URL=api_url,
        ANTHROPIC_API_KEY="sk-ant-test-dummy",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
        DISABLE_ERROR_REPORTING="1",
        CLAUDE_CODE_ENABLE_TELEMETRY="0",
    )
    env.update(extra)
    env.pop("CLAUDECODE", None)
    return env


# -- where a hook's additional context lands --------------------------------------------

# Claude Code 2.1.332 puts each hook's additionalContext into a ``{"role": "system"}``
# entry of ``messages``: for PreToolUse/PostToolUse, an entry right after the user
# message holding the tool_result, one text block, the events' texts joined by a blank
# line; SessionStart and UserPromptSubmit texts go into the system entry after the
# first user message (with the environment section and the date line).
_LABEL = r"[A-Za-z]+(?::[A-Za-z0-9_.-]+)?"
_NEXT_LABEL = r"\n\n" + _LABEL + re.escape(CONTEXT_MARK)


def _texts(content: Any) -> Iterator[str]:
    """Every text inside a message's content, tool_result contents included."""
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                yield block["text"]
            elif block.get("type") == "tool_result":
                yield from _texts(block.get("content"))


def request_texts(body: str | JsonObject) -> list[str]:
    """All non-assistant text of a request: the top-level ``system`` blocks, then each
    user or system entry of ``messages`` (tool_result contents included), in order."""
    data = json.loads(body) if isinstance(body, str) else body
    out = list(_texts(data.get("system")))
    for msg in data.get("messages") or []:
        if isinstance(msg, dict) and msg.get("role") != "assistant":
            out.extend(_texts(msg.get("content")))
    return out


def hook_context(
    body: str | JsonObject, event: str = "PreToolUse", tool: str | None = None
) -> list[str]:
    """The additionalContext texts Claude Code placed for hook ``event`` in a request.

    Matches "<event>[:<tool>] hook additional context: " (only ``<event>:<tool>`` when
    ``tool`` is given) and returns what follows, up to the next hook's label or the
    end of that text block. Whatever Claude Code appends to the same block after
    the context comes with it (for SessionStart its environment section, for
    UserPromptSubmit the date line, and at times a note such as "The user hasn't
    heard from you in a while..."): check with ``in`` or ``startswith``.
    """
    label = re.escape(event) + (f":{re.escape(tool)}" if tool else r"(?::[A-Za-z0-9_.-]+)?")
    pattern = re.compile(
        r"(?:^|\n)" + label + re.escape(CONTEXT_MARK) + r"(.*?)(?=" + _NEXT_LABEL + r"|\Z)",
        re.S,
    )
    found: list[str] = []
    for text in request_texts(body):
        found.extend(m.group(1) for m in pattern.finditer(text))
    return found


def context_after_tool(body: str | JsonObject, tool_use_id: str) -> str | None:
    """The text of the system entry that directly follows the tool_result of
    ``tool_use_id`` in a request (where Claude Code puts PreToolUse and PostToolUse
    context for that call), or None when there is none."""
    data = json.loads(body) if isinstance(body, str) else body
    messages = [m for m in data.get("messages") or [] if isinstance(m, dict)]
    for i, msg in enumerate(messages[:-1]):
        content = msg.get("content")
        if msg.get("role") != "user" or not isinstance(content, list):
            continue
        ids = {b.get("tool_use_id") for b in content if isinstance(b, dict)}
        if tool_use_id in ids and messages[i + 1].get("role") == "system":
            return "\n\n".join(_texts(messages[i + 1].get("content")))
    return None


@dataclass
class HookScript:
    """A test project's ``.claude/settings.json`` holding command hooks."""

    hooks: dict[str, list[JsonObject]] = field(default_factory=dict)

    def add(
        self,
        event: str,
        command: str,
        matcher: str | None = None,
        *,
        args: Sequence[str] | None = None,
        timeout: float = 30,
    ) -> None:
        """One command hook for ``event``: shell form, or exec form when ``args`` is
        given (``command`` is then the program). ``timeout`` is in seconds."""
        handler: JsonObject = {"type": "command", "command": command, "timeout": timeout}
        if args is not None:
            handler["args"] = list(args)
        entry: JsonObject = {"hooks": [handler]}
        if matcher is not None:
            entry["matcher"] = matcher
        self.hooks.setdefault(event, []).append(entry)

    def write(self, project: Path) -> Path:
        path = project / ".claude" / "settings.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"hooks": self.hooks}, indent=2))
        return path
