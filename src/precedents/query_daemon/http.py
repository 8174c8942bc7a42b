"""The daemon's HTTP listener: Claude Code's ``"type": "http"`` hook (docs/daemon.md).

Claude Code (2.1.63 and later) can POST a hook's JSON input to a URL instead of
running a command, and reads the response body as it reads a command hook's
stdout: empty, or a JSON object such as
``{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "..."}}``
(a plain-text body is rejected as "must return JSON"). This module serves that:

- ``POST /hook`` on 127.0.0.1 only (never another address), port
  ``settings.http_port``; UserPromptSubmit and SessionStart inputs get exactly
  what the command hook prints for them (:func:`protocol.hook_output`), through
  the daemon's own dispatch (the same batching worker, the same log line);
  nothing to say is ``{}``.
- Authentication: the per-install secret in ``<state>/http.secret`` (0600,
  :func:`ensure_secret`) must come in the ``X-Precedents-Token`` header; a
  wrong or missing one is a 403 and nothing is read or answered. A ``Host``
  that is not 127.0.0.1/localhost is a 403 too (DNS rebinding from a browser).
- Bad requests get a 4xx and no traceback: another path (404), another method
  (405), no length (411), over :data:`MAX_BODY_BYTES` (413, the body unread),
  not a JSON object (400). The prompt is never logged.
- No local user can starve it (issue #20): any process may connect to
  127.0.0.1, so a connection counts against :data:`MAX_CONNECTIONS` only once
  it has sent a whole request head with the token. Until then it is *pending*:
  it must complete its head within :data:`HEAD_DEADLINE_S` of being accepted
  (a total, not per read: a byte-a-second slowloris is cut too), and when more
  than :data:`MAX_PENDING` are pending the oldest is dropped to make room, so
  a newcomer (the owner's hook, whose head arrives in one write) is always read.
- :meth:`HttpListener.stop` closes the listening socket (the port is free when
  it returns) and every open connection.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from precedents import protocol
from precedents.config import HTTP_TOKEN_ENV
from precedents.protocol import PROTOCOL_VERSION, hook_output
from precedents.query_daemon.hook_input import EVENTS_OUT, MAX_PATH_CHARS
from precedents.query_daemon.hook_input import request_for as hook_request
from precedents.query_daemon.ops import Reply, Request

log = logging.getLogger("precedents.daemon.http")

HOST = "127.0.0.1"
PATH = "/hook"
TOKEN_HEADER = "X-Precedents-Token"
TOKEN_ENV = HTTP_TOKEN_ENV  # one spelling: config.py
SECRET_NAME = "http.secret"
MAX_BODY_BYTES = 5 * 1024 * 1024
# An idle keep-alive connection (the owner's, past its first request) is closed after this long.
CONNECTION_TIMEOUT_S = 10.0
# Connections that have shown the token: the owner's alone.
MAX_CONNECTIONS = 64
# A connection must have sent its whole first request head (with the token)
# this long after it was accepted. Claude Code sends it in one write; a busy
# 2-core box still reads it within milliseconds.
HEAD_DEADLINE_S = 2.0
# Connections still to show the token; past this, the oldest is dropped. Each
# holds a thread until then (~256 threads), well under a default 1,024 open files.
MAX_PENDING = 256
# At most one log line about dropped connections this often (an attacker must not fill the log).
DROP_LOG_S = 60.0
# The hook event an answer is printed for, by the daemon op that made it.
EVENT_OF_OP = {
    "context": EVENTS_OUT["prompt"],
    "file": EVENTS_OUT["file"],
    "session": EVENTS_OUT["session"],
}

Dispatch = Callable[[Request], Reply]


def secret_path(home: Path) -> Path:
    """Where the HTTP hook's secret lives: ``<state>/http.secret``."""
    return home / SECRET_NAME


def ensure_secret(home: Path) -> str:
    """The per-install secret (64 hex characters), created 0600 on first use.

    It outlives the daemon (the user's environment holds a copy), so it sits in
    the state folder, not in ``run/``, which a dying daemon's successor clears.
    """
    path = secret_path(home)
    with contextlib.suppress(FileNotFoundError):
        text = path.read_text(encoding="ascii").strip()
        if len(text) == 64:
            return text
    home.mkdir(parents=True, exist_ok=True)
    value = secrets.token_hex(32)
    tmp = path.with_name(f"{SECRET_NAME}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(value + "\n")
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return value


def request_for(data: dict[str, Any]) -> dict[str, object] | str | None:
    """The daemon request for a hook input, built as the command hook builds it.

    Returns the request; None when there is nothing to ask (a short prompt, a
    file tool without a path); a string saying what is wrong with the input.
    """
    cwd = data.get("cwd")
    if not isinstance(cwd, str) or not cwd or len(cwd) > MAX_PATH_CHARS:
        return "cwd missing"
    if data.get("hook_event_name") not in EVENTS_OUT.values():
        return "unsupported hook_event_name"
    _kind, request, why = hook_request(data, "prompt", cwd)
    if request is None:
        return {"bad-input": "prompt missing", "no-path": "tool_input file path missing"}.get(why)
    return {"v": PROTOCOL_VERSION, **request}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default backlog is 5: the 6th of 10 simultaneous connects
    # had its SYN dropped and waited out the client's 1 s retransmit (measured).
    # Room for a crowd of unauthenticated connects too, ahead of the owner's.
    request_queue_size = 256

    def __init__(self, port: int, secret: str, dispatch: Dispatch) -> None:
        self.secret = secret.encode("ascii")
        self.dispatch = dispatch
        # Accepted, token not yet shown: connection -> when it was accepted (oldest first).
        self.pending: dict[socket.socket, float] = {}
        # Token shown: these alone count against MAX_CONNECTIONS.
        self.trusted: set[socket.socket] = set()
        self.guard = threading.Lock()
        self.dropped = 0
        self._drop_logged = 0.0
        super().__init__((HOST, port), _Handler)

    def arrived(self, conn: socket.socket) -> None:
        """A new connection: pending until it shows the token; the oldest pending makes room."""
        with self.guard:
            self.pending[conn] = time.monotonic()
            evicted = []
            while len(self.pending) > MAX_PENDING:
                oldest = next(iter(self.pending))
                del self.pending[oldest]
                evicted.append(oldest)
        self._drop(evicted)

    def admit(self, conn: socket.socket) -> bool:
        """The token was shown: count ``conn`` as the owner's; False when it cannot be served."""
        with self.guard:
            if conn in self.trusted:
                return True
            if self.pending.pop(conn, None) is None:
                return False  # dropped while its head was read
            if len(self.trusted) >= MAX_CONNECTIONS:
                return False
            self.trusted.add(conn)
            return True

    def left(self, conn: socket.socket) -> None:
        with self.guard:
            self.pending.pop(conn, None)
            self.trusted.discard(conn)

    def service_actions(self) -> None:
        """Each turn of the accept loop (at least every poll interval): cut pending
        connections past their head deadline."""
        cutoff = time.monotonic() - HEAD_DEADLINE_S
        with self.guard:
            late = [conn for conn, since in self.pending.items() if since < cutoff]
            for conn in late:
                del self.pending[conn]
        self._drop(late)

    def _drop(self, conns: list[socket.socket]) -> None:
        if not conns:
            return
        for conn in conns:
            # The handler's thread, blocked reading, sees the end of the stream and exits.
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self.dropped += len(conns)
        now = time.monotonic()
        if now - self._drop_logged >= DROP_LOG_S:
            self._drop_logged = now
            log.warning(
                "http: dropped %d connection(s) that sent no authorized request within %.0fs "
                "(%d in all so far)",
                len(conns),
                HEAD_DEADLINE_S,
                self.dropped,
            )

    def open_connections(self) -> list[socket.socket]:
        with self.guard:
            return [*self.pending, *self.trusted]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive: a client may reuse its connection
    # Headers and body go out as two writes: with Nagle on, a kept-alive
    # connection waited ~40 ms for the client's delayed ACK each time (measured).
    disable_nagle_algorithm = True
    timeout = CONNECTION_TIMEOUT_S
    server_version = "precedents"
    sys_version = ""

    def setup(self) -> None:
        super().setup()
        self.server.arrived(self.connection)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.server.left(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # answers are logged by the dispatch; the request line is not

    def log_error(self, format: str, *args: Any) -> None:
        log.info("http: " + format, *args)

    def _send(self, code: int, body: bytes = b"{}", *, close: bool = False) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def _refuse(self, code: int, why: str) -> None:
        """A 4xx; the connection closes (its remainder is not read as more requests)."""
        self._send(code, protocol.dumps({"error": why}).encode("utf-8"), close=True)

    def _host_ok(self) -> bool:
        host = (self.headers.get("Host") or "").strip().lower()
        name, _, port = host.rpartition(":") if not host.startswith("[") else (host, "", "")
        if not port.isdigit():
            name = host
        return name in ("127.0.0.1", "localhost")

    def _authorized(self) -> bool:
        given = (self.headers.get(TOKEN_HEADER) or "").strip().encode("ascii", "replace")
        return hmac.compare_digest(given, self.server.secret)

    def do_POST(self) -> None:
        if self.path.split("?", 1)[0] != PATH:
            self._refuse(404, "not found")
            return
        if not self._host_ok() or not self._authorized():
            log.warning("http: refused a request (wrong or missing %s, or Host)", TOKEN_HEADER)
            self._refuse(403, "forbidden")
            return
        if not self.server.admit(self.connection):
            self._refuse(503, "busy")
            return
        if self.headers.get("Transfer-Encoding"):
            self._refuse(411, "length required")
            return
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self._refuse(411, "length required")
            return
        if length < 0:
            self._refuse(400, "bad length")
            return
        if length > MAX_BODY_BYTES:
            self._refuse(413, "too large")
            return
        raw = self.rfile.read(length)
        if len(raw) < length:
            self.close_connection = True
            return  # the client went away mid-body
        try:
            data = protocol.loads(raw.decode("utf-8"))
        except ValueError:  # UnicodeDecodeError and too-deep nesting included
            data = None
        if not isinstance(data, dict):
            self._refuse(400, "not a JSON object")
            return
        request = request_for(data)
        if isinstance(request, str):
            self._refuse(400, request)
            return
        body = "{}"
        if request is not None:
            context = self.server.dispatch(request).context
            if context:
                body = hook_output(context, EVENT_OF_OP[str(request["op"])])
        self._send(200, body.encode("utf-8"))

    def _not_allowed(self) -> None:
        self._refuse(405, "method not allowed")

    do_GET = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _not_allowed


class HttpListener:
    """The HTTP hook endpoint of one daemon: bound by the constructor, served by :meth:`start`."""

    def __init__(self, port: int, secret: str, dispatch: Dispatch) -> None:
        self._server = _Server(port, secret, dispatch)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (the one asked for, or the OS's pick for 0)."""
        return int(self._server.server_address[1])

    def start(self) -> None:
        """Serve on a thread of its own."""
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.25},
            name="http",
            daemon=True,
        )
        self._thread.start()
        log.info("http hook listening on %s:%d%s", HOST, self.port, PATH)

    def stop(self) -> None:
        """Stop serving, free the port, close every open connection."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5)
            self._thread = None
        self._server.server_close()
        for conn in self._server.open_connections():
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


# `install-hook --http` picks a fixed port below Linux's ephemeral range
# (32768-60999), so that outgoing connections never happen to hold it.
PORT_BASE = 27400
PORT_SPAN = 500


def pick_port(uid: int | None = None) -> int:
    """A free port on 127.0.0.1 for this user: ``PORT_BASE + uid % PORT_SPAN``, or the next free."""
    if uid is None:
        uid = os.getuid() if hasattr(os, "getuid") else 0
    start = uid % PORT_SPAN
    for i in range(PORT_SPAN):
        port = PORT_BASE + (start + i) % PORT_SPAN
        if port_free(port):
            return port
    raise OSError(f"no free port in {PORT_BASE}-{PORT_BASE + PORT_SPAN - 1} on {HOST}")


def port_free(port: int) -> bool:
    """Whether ``port`` can be bound on 127.0.0.1 now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def hook_url(port: int) -> str:
    """The URL the http hook POSTs to."""
    return f"http://{HOST}:{port}{PATH}"
