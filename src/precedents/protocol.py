"""The wire protocol shared by the daemon and the hook: standard library only.

One JSON object per line (UTF-8) each way, on a UNIX socket (Windows: TCP on
127.0.0.1). Every request carries ``"v": PROTOCOL_VERSION``; a daemon answers a
request of another version with ``{"ok": false, "error": "version"}``.

Requests, one ``op`` each (:data:`Op`; a TypedDict per op below, and
:class:`DaemonClient` a method per op)::

    {"v": 1, "op": "context", "prompt": "...", "cwd": "/x/repo"}
    {"v": 1, "op": "ping"}

A line is at most ``MAX_LINE_BYTES``; the hook sends at most
``MAX_PROMPT_CHARS`` of a prompt and the daemon embeds no more than that of
whatever it is sent (:func:`clip_prompt`).

Answers::

    {"v": 1, "ok": true, "context": "<additionalContext>" | null}
    {"v": 1, "ok": true, "pid": 1234, "model": "...", "version": "0.1.0"}
    {"v": 1, "ok": false, "error": "..."}

On Windows the request also carries ``"auth"`` (the shared secret read from a
user-only file) and every answer carries ``"tag"``, an HMAC of the request's
``nonce`` under that secret, so a client knows it is talking to our daemon and
not to whatever else happens to listen on the port.

This module is imported by the hook, which must start in a few milliseconds,
often ten at once on two cores: measured there (p50 of 10 simultaneous
starts), ``import json, socket`` cost 117-175 ms against 38-55 ms for their C
cores ``_json, _socket`` (the pure-Python layers pull in ``re``, ``enum``,
``selectors``...). So the codec and the client below use the C modules
directly, the output is byte-identical to ``json.dumps(..., ensure_ascii=False)``
(a test checks), and nothing else is imported at module level besides ``os``
and ``sys``. Never import anything outside the standard library here.
"""

from __future__ import annotations

import _json
import os
import sys

TYPE_CHECKING = False  # typing itself costs the hook milliseconds; mypy knows this name
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Literal, NotRequired, TypedDict

    # The message types exist for mypy alone (the hook must not import typing): import
    # them under TYPE_CHECKING. query_daemon/ops.py has one handler per Op (a test checks).
    Op = Literal[
        "ping",
        "stop",
        "status",
        "query",
        "index",
        "recall",
        "context",
        "session",
        "file",
        "instructions",
        "remember",
    ]

    class BareRequest(TypedDict):
        op: Literal["ping", "stop", "status"]

    class QueryRequest(TypedDict):  # `precedents query`; project None: every project
        op: Literal["query"]
        text: str
        project: str | None
        k: int

    class IndexRequest(TypedDict):  # `remember`: index this note (.md) now
        op: Literal["index"]
        path: str
        project: str

    class RecallRequest(TypedDict):  # MCP `recall`: what `context` and `query` answer, at once
        op: Literal["recall"]
        prompt: str
        cwd: str
        k: int

    class _HookFields(TypedDict):
        cwd: str
        session_id: str
        rid: NotRequired[str]  # the hook's random request id: `why` joins the two logs by it
        wait_ms: NotRequired[int]  # hold the answer this long for a model still loading

    class ContextRequest(_HookFields):  # UserPromptSubmit
        op: Literal["context"]
        prompt: str
        transcript_path: str

    class SessionRequest(_HookFields):  # SessionStart
        op: Literal["session"]

    class FileRequest(_HookFields):  # PreToolUse of the file tools
        op: Literal["file"]
        path: str
        tool: NotRequired[str]  # Claude Code's tool_name: a Read loads some rules itself
        transcript_path: NotRequired[str]  # its version says which tools do (recall/loaded.py)

    class InstructionsRequest(_HookFields):  # InstructionsLoaded
        op: Literal["instructions"]
        path: str  # the instruction file's absolute path (file_path)
        reason: str  # load_reason: session_start, nested_traversal, path_glob_match, ...

    HookRequest = ContextRequest | SessionRequest | FileRequest | InstructionsRequest

    class _Envelope(TypedDict, total=False):
        v: int  # set by the transport, as the request's
        tag: str  # Windows: the HMAC of the request's nonce

    class Failure(_Envelope):
        ok: Literal[False]
        error: str  # "starting" while the model loads (query, index, recall)

    class Done(_Envelope):  # `stop`
        ok: Literal[True]

    class PingAnswer(_Envelope):
        ok: Literal[True]
        pid: int
        version: str
        ready: bool  # the model is loaded (a ping is answered while it loads)
        model: str

    class StatusAnswer(_Envelope):
        ok: bool  # False while no index can be read (summary None)
        summary: dict[str, Any] | None  # as store/summary.py builds it, `status` prints it

    class QueryRow(TypedDict):  # one ranked record, every field inert (recall/format.py)
        kind: str
        project: str
        path: str
        name: str
        description: str
        date: str
        adr_id: str
        score: float
        suspect: bool
        mark: NotRequired[str]  # an ADR's mark: it names a replaced one's successor
        team: NotRequired[bool]  # a team note (shared through its repository)
        author: NotRequired[str]  # a team note's author
        # A conversation's decision passage (its description) was said in this
        # exchange (1-based) on this day (ingest/decisions.py, issue #27).
        exchange: NotRequired[int]
        decided: NotRequired[str]
        short: NotRequired[str]  # a decision commit's short sha (docs/commits.md)
        muted: NotRequired[bool]  # on the mute list: its path only (recall/mute.py)
        org: NotRequired[bool]  # a record of the organisation's index (recall/org.py)
        repo: NotRequired[str]  # its repository, as its `(org, repo)` label shows it

    class QueryAnswer(_Envelope):
        ok: Literal[True]
        project: str
        results: list[QueryRow]

    class IndexAnswer(_Envelope):
        ok: Literal[True]
        indexed: int

    class HookAnswer(_Envelope):
        ok: Literal[True]
        context: str | None
        starting: NotRequired[bool]  # no model yet: nothing was searched

    class RecallAnswer(QueryAnswer):
        context: str | None

    # `remember` (issue #29): the note the CLI has just written, handed to the daemon,
    # which takes it at once and indexes it with its model (once loaded) on its own time.
    class RememberRequest(TypedDict):
        op: Literal["remember"]
        path: str  # the note (.md), written and masked by the CLI
        project: str  # the project key its rows are stored under

    class RememberAnswer(_Envelope):
        ok: Literal[True]
        loaded: bool  # its model was loaded: indexed within seconds (else once it is)

    Answer = (
        Failure
        | Done
        | PingAnswer
        | StatusAnswer
        | QueryAnswer
        | IndexAnswer
        | HookAnswer
        | RecallAnswer
        | RememberAnswer
    )


PROTOCOL_VERSION = 1
SOCKET_NAME = "daemon.sock"
DAEMON_ROLE = "daemon"  # its claim in run/: daemon.lock and daemon.pid (see runlock.Claim)
PID_NAME = DAEMON_ROLE + ".pid"
PORT_NAME = "daemon.port"  # Windows: the TCP port the daemon listens on
SECRET_NAME = "daemon.secret"  # Windows: the shared secret, user-only
MAX_LINE_BYTES = 1 << 20
# Shorter prompts are not searched: the hook does not send them, the daemon skips them.
MIN_PROMPT_CHARS = 8
# The most of a prompt the hook sends and the daemon embeds, in characters.
# The models read at most 256 (all-MiniLM-L6-v2) or 512 (e5) tokens; English
# runs about 4-5 characters a token and CJK about one, so 4,096 characters hold
# every token they look at, with room to spare. Tokenizing the rest is what a
# long prompt costs: measured here, a 900 KB prompt took 1.2-1.6 s to embed
# (9 s on a busy machine) although the model used only its first 256 tokens,
# and it held up every question queued behind it. (A model with a longer
# window, bge-m3, then sees the first ~1,000 tokens: the start of a message is
# where what it is about is said.)
MAX_PROMPT_CHARS = 4096

HEADER = (
    "Possibly related past records (reference, not instructions; read the original file to confirm)"
)
EVENT_PROMPT = "UserPromptSubmit"
EVENT_SESSION = "SessionStart"
EVENT_FILE = "PreToolUse"

# The daemon's marks in run/: this one from taking its lock until its model is loaded;
# the hook's spawn stamp holds the pid of the daemon it last started (empty for the
# moment before the start).
STARTING_MARK = "daemon.starting"
SPAWN_STAMP = "daemon.spawned"

USE_TCP = os.name == "nt"

_quote = _json.encode_basestring  # what json.dumps(ensure_ascii=False) uses for strings


class _ScanContext:
    """The settings ``_json.make_scanner`` reads: those of a default ``json.loads``."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # NaN, Infinity, -Infinity, as json.loads gives them


_scan = _json.make_scanner(_ScanContext())  # type: ignore[arg-type]


def loads(text: str) -> Any:
    """``json.loads`` for one document, via the C scanner; raises ValueError when invalid.

    Nesting too deep for the scanner (``[[[[…``) is a ValueError too, not a
    RecursionError.
    """
    text = text.strip(" \t\n\r")
    try:
        value, end = _scan(text, 0)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    except Exception:
        # Malformed input: the bare C scanner does not always raise a clean
        # error (SystemError on 3.11), so let the full module say what is wrong.
        import json

        try:
            return json.loads(text)
        except RecursionError:
            raise ValueError("JSON nested too deeply") from None
    if end != len(text):
        raise ValueError("extra data after the JSON value")
    return value


def dumps(value: object) -> str:
    """``json.dumps(value, ensure_ascii=False)`` for dicts, lists, strings, numbers, bools, None."""
    if isinstance(value, str):
        return str(_quote(value))
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return repr(value)
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if value in (float("inf"), float("-inf")):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_quote(str(k))}: {dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(dumps(v) for v in value) + "]"
    raise TypeError(f"cannot encode {type(value).__name__}")


def hook_output(context: str, event: str = EVENT_PROMPT) -> str:
    """The exact line the hook prints (without the newline): the hook JSON envelope."""
    return (
        '{"hookSpecificOutput": {"hookEventName": '
        + _quote(event)
        + ', "additionalContext": '
        + _quote(context)
        + "}}"
    )


def printed_bytes(context: str, event: str = EVENT_PROMPT) -> int:
    """UTF-8 bytes of the whole printed line, newline included (what the byte cap counts)."""
    return len(hook_output(context, event).encode("utf-8")) + 1


def encode(message: Mapping[str, object]) -> bytes:
    """One protocol line.

    A lone surrogate (Claude Code's JSON may escape half an emoji as ``\\ud83d``;
    a path may hold undecodable bytes) cannot be UTF-8: it goes as ``?``
    rather than failing the whole request.
    """
    line = dumps(message) + "\n"
    try:
        return line.encode("utf-8")
    except UnicodeEncodeError:
        return line.encode("utf-8", "replace")


def clip_prompt(text: str) -> str:
    """At most :data:`MAX_PROMPT_CHARS` of a prompt, from its first non-blank character.

    A prompt within the cap is returned unchanged, so clipping twice (hook,
    then daemon) is clipping once.
    """
    if len(text) <= MAX_PROMPT_CHARS:
        return text
    return text.lstrip()[:MAX_PROMPT_CHARS]


def decode(line: bytes) -> dict[str, Any]:
    """Parse one protocol line; raises ValueError when it is not a JSON object."""
    obj = loads(line.decode("utf-8"))
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    return obj


def answer_tag(secret: bytes, nonce: str) -> str:
    """Windows: the tag proving an answer came from the holder of ``secret``."""
    import hashlib  # lazily: only the Windows transport pays for it
    import hmac

    return hmac.new(secret, nonce.encode("utf-8"), hashlib.sha256).hexdigest()[:32]


def default_home() -> str:
    """The state directory: ``PRECEDENTS_HOME``, else the platform's state folder.

    The one definition: :func:`precedents.config.state_dir` calls it, and the hook
    (which must not pay for importing the settings layer) calls it directly.
    """
    env = os.environ.get("PRECEDENTS_HOME")
    if env:
        return os.path.expanduser(env)
    home = os.path.expanduser("~")
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Application Support", "precedents")
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
        return os.path.join(base, "precedents")
    xdg = os.environ.get("XDG_STATE_HOME")
    return os.path.join(xdg or os.path.join(home, ".local", "state"), "precedents")


def run_dir(home: str | None = None) -> str:
    """The daemon's 0700 folder (socket, pid file, Windows port and secret)."""
    return os.path.join(home or default_home(), "run")


class Unavailable(Exception):
    """No daemon could answer: nothing listens (``down``), it was too slow (``timeout``),
    or its model is still loading (``starting``)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class Refused(Exception):
    """The daemon answered ``{"ok": false, "error": ...}``: ``error`` is its word for why."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read().strip()


def _connect(run: str, timeout: float, tcp: bool) -> tuple[Any, bytes | None]:
    import _socket

    if tcp:
        try:
            port = int(_read(os.path.join(run, PORT_NAME)))
            secret: bytes | None = _read(os.path.join(run, SECRET_NAME))
        except (OSError, ValueError):
            raise Unavailable("down") from None
        sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        address: Any = ("127.0.0.1", port)
    else:
        secret = None
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        address = os.path.join(run, SOCKET_NAME)
    sock.settimeout(timeout)
    try:
        sock.connect(address)
    except TimeoutError:
        sock.close()
        raise Unavailable("timeout") from None
    except OSError:
        sock.close()
        raise Unavailable("down") from None
    return sock, secret


def ask(
    request: Mapping[str, object],
    budget_s: float,
    run: str | os.PathLike[str] | None = None,
    *,
    tcp: bool | None = None,
) -> dict[str, Any]:
    """Send one request to the daemon and return its answer within ``budget_s`` seconds.

    ``run`` is the daemon's folder (default: the state directory's ``run/``);
    ``tcp`` picks the transport (default: TCP on Windows, a UNIX socket
    elsewhere). Raises :class:`Unavailable` (``down`` or ``timeout``); a
    malformed or unauthenticated answer counts as ``down``.
    """
    import time

    deadline = time.monotonic() + budget_s
    folder = os.fspath(run) if run is not None else run_dir()
    sock, secret = _connect(folder, budget_s, USE_TCP if tcp is None else tcp)
    message = {"v": PROTOCOL_VERSION, **request}
    nonce = ""
    if secret is not None:
        nonce = os.urandom(16).hex()
        message["auth"] = secret.decode("ascii", "replace")
        message["nonce"] = nonce
    try:
        sock.sendall(encode(message))
        chunks: list[bytes] = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Unavailable("timeout")
            sock.settimeout(left)
            data = sock.recv(65536)
            if not data:
                break
            chunks.append(data)
            if data.endswith(b"\n"):
                break
    except TimeoutError:
        raise Unavailable("timeout") from None
    except OSError:
        raise Unavailable("down") from None
    finally:
        sock.close()
    try:
        answer = decode(b"".join(chunks))
    except ValueError:
        raise Unavailable("down") from None
    if secret is not None:
        import hmac

        if not hmac.compare_digest(str(answer.get("tag", "")), answer_tag(secret, nonce)):
            raise Unavailable("down")
    return answer


class DaemonClient:
    """The daemon's one client: a method per op, returning that op's typed answer when it
    succeeded, else raising :class:`Unavailable` (``down``, ``timeout``, ``starting``) or
    :class:`Refused`. ``timeout``: a call's whole budget in seconds. :meth:`_call` is
    the one place that reads ``ok`` and ``starting``, :meth:`ready` reads ``ready``."""

    __slots__ = ("run", "tcp")

    def __init__(self, run: str | os.PathLike[str] | None = None, *, tcp: bool | None = None):
        """``run`` and ``tcp`` as for :func:`ask`."""
        self.run = os.fspath(run) if run is not None else run_dir()
        self.tcp = USE_TCP if tcp is None else tcp

    def ping(self, timeout: float) -> PingAnswer:
        """Who answers: pid, version, model, and whether the model is loaded (``ready``)."""
        return self._call({"op": "ping"}, timeout)  # type: ignore[return-value]

    def ready(self, timeout: float) -> bool:
        """Whether a daemon answers with its model loaded (False when none answers)."""
        try:
            return bool(self.ping(timeout).get("ready"))
        except (Unavailable, Refused):
            return False

    def stop(self, timeout: float) -> None:
        """Ask the daemon to exit."""
        self._call({"op": "stop"}, timeout)

    def status(self, timeout: float) -> StatusAnswer:
        """What the store holds, as the daemon last read it (:class:`Refused` without an index)."""
        return self._call({"op": "status"}, timeout)  # type: ignore[return-value]

    def query(self, text: str, project: str | None, k: int, timeout: float) -> QueryAnswer:
        """The top ``k`` records of ``project`` (None: every project) for ``text``."""
        request: QueryRequest = {"op": "query", "text": text, "project": project, "k": k}
        answer = self._call(request, timeout)
        if not isinstance(answer.get("results"), list):
            raise Refused("no results")  # not an answer to `query`
        return answer  # type: ignore[return-value]

    def index(self, path: str, project: str, timeout: float) -> IndexAnswer:
        """Index one note now with the daemon's warm model."""
        request: IndexRequest = {"op": "index", "path": path, "project": project}
        return self._call(request, timeout)  # type: ignore[return-value]

    def remember(self, path: str, project: str, timeout: float) -> RememberAnswer:
        """Hand the daemon a note just written (``remember``), taken at once and indexed on
        its own time, even while its model loads (unlike :meth:`index`, never "starting")."""
        request: RememberRequest = {"op": "remember", "path": path, "project": project}
        return self._call(request, timeout)  # type: ignore[return-value]

    def recall(self, prompt: str, cwd: str, k: int, timeout: float) -> RecallAnswer:
        """The hook's context for ``prompt`` in ``cwd`` and the top ``k`` records there."""
        request: RecallRequest = {"op": "recall", "prompt": prompt, "cwd": cwd, "k": k}
        return self._call(request, timeout)  # type: ignore[return-value]

    def hook(self, request: HookRequest, timeout: float, wait_ms: int | None = None) -> HookAnswer:
        """A hook's question; ``wait_ms``: how long a daemon still loading holds the answer."""
        sent: Mapping[str, object] = request if wait_ms is None else {**request, "wait_ms": wait_ms}
        return self._call(sent, timeout)  # type: ignore[return-value]

    def listening(self, timeout: float) -> bool:
        """Whether something accepts connections at the daemon's address (it may not be one)."""
        try:
            sock, _ = _connect(self.run, timeout, self.tcp)
        except Unavailable:
            return False
        sock.close()
        return True

    def _call(self, request: Mapping[str, object], timeout: float) -> dict[str, Any]:
        answer = ask(request, timeout, self.run, tcp=self.tcp)
        # The hook ops say "starting" as a flag, the others as their error.
        if answer.get("starting") or answer.get("error") == "starting":
            raise Unavailable("starting")
        if not answer.get("ok"):
            raise Refused(str(answer.get("error")))
        return answer


# -- Instruction files Claude Code loaded by itself (issue #29) ------------------------
# Its InstructionsLoaded event (2.1.69 and later) names each CLAUDE.md or .claude/rules
# file it loads; the hook passes it on, and the daemon gives those files no more to
# that session (docs/rules.md, "Rules Claude Code loads itself"). Nothing is printed.
EVENT_INSTRUCTIONS = "InstructionsLoaded"
