"""Answer the MCP handshake at once, while the SDK loads; then hand the wire to it.

Why: importing the MCP SDK costs ~0.7 s of CPU (2.9 s to answer
``initialize`` on a busy 2-core machine), and Claude Code sends its first model
request without the tools of a server that has not answered by then (issue
#21: the tools were in 2 of 9 first requests). The answers to the handshake
do not depend on anything but the protocol version, so they are captured from
the SDK ahead of time (:mod:`precedents.mcp.handshake`, checked by a test) and
given from :mod:`precedents.mcp.answers` by this stdlib-only front.

How (POSIX): the real stdin and stdout become the wire, held by two threads
here; fds 0 and 1 become pipes to the SDK's own transport
(:mod:`precedents.mcp.transport`), which sees an ordinary stdio.

- The client's ``initialize`` (well formed, and the first thing it sends) is
  answered here; the same request goes to the SDK under a private id and the
  SDK's reply to it is dropped, so the SDK's session is initialized as if the
  client had spoken to it (any difference from the early answer is logged).
- ``tools/list``, ``prompts/list``, ``resources/list``,
  ``resources/templates/list`` and ``ping`` without params are answered here
  until the SDK is up; everything else goes to the SDK, in order.
- Anything unexpected (another first message, odd params, an SDK other than
  the one the answers came from) hands everything to the SDK untouched: slower,
  never different.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

REPLAY_ID = "precedents-front-initialize"
# Read the wire by at most this much: a longer line is no handshake message.
CHUNK = 1024 * 1024
# The requests answered here, without params: their results depend on nothing the
# client says but the protocol version (the server's tools are fixed at start).
LISTS = ("tools/list", "prompts/list", "resources/list", "resources/templates/list", "ping")


def sdk_version() -> str | None:
    """The installed ``mcp`` distribution's version, from its ``.dist-info`` folder name
    (importlib.metadata costs 40-100 ms, more than the whole early answer)."""
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.startswith("mcp-") and name.endswith(".dist-info"):
                return name[len("mcp-") : -len(".dist-info")]
    return None


def early_answers() -> dict[str, Any] | None:
    """The captured answers, or None when the installed SDK is not the one they came from."""
    from precedents.mcp.answers import ANSWERS_JSON

    answers: dict[str, Any] = json.loads(ANSWERS_JSON)
    return answers if answers.get("sdk") == sdk_version() else None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Front:
    """The two wire threads; :meth:`start` puts them in place, :meth:`finish` ends them."""

    def __init__(self, answers: dict[str, Any] | None, wire_in: int, wire_out: int) -> None:
        """``wire_in``/``wire_out``: the client's fds; ``answers``: None answers nothing."""
        self.answers = answers
        self._wire_in = io.BufferedReader(io.FileIO(wire_in, "rb"), buffer_size=CHUNK)
        self._wire_out = wire_out
        self._write_lock = threading.Lock()
        self._sdk_up = threading.Event()
        self._sdk_in = -1
        self._sdk_out = -1
        self._version: str | None = None  # agreed in the early initialize
        self._early_init: dict[str, Any] | None = None
        self._threads: list[threading.Thread] = []

    @classmethod
    def start(cls) -> Front | None:
        """Take stdin/stdout, start answering; None where this is not done (Windows)."""
        if os.name == "nt":
            return None
        try:
            answers = early_answers()
        except (ImportError, ValueError):
            answers = None
        if answers is None:
            return None  # the SDK answers everything itself, as before
        front = cls(answers, os.dup(0), os.dup(1))
        sdk_in_r, front._sdk_in = os.pipe()
        front._sdk_out, sdk_out_w = os.pipe()
        os.dup2(sdk_in_r, 0)
        os.dup2(sdk_out_w, 1)
        os.close(sdk_in_r)
        os.close(sdk_out_w)
        front._spawn(front._read_client, "mcp-front-in")
        front._spawn(front._copy_sdk, "mcp-front-out")
        return front

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def sdk_starting(self) -> None:
        """The SDK serves from now on: what arrives next is its to answer."""
        self._sdk_up.set()

    def finish(self, timeout: float = 5.0) -> None:
        """After the SDK's server returned: let its last replies out, then stop."""
        with contextlib.suppress(OSError):
            sys.stdout.flush()
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 1)  # the pipe's last writer: the copier sees its end
        finally:
            os.close(devnull)
        self._threads[1].join(timeout)

    # -- client -> here or the SDK -------------------------------------------------

    def _read_client(self) -> None:
        try:
            self._handshake()
            while chunk := self._wire_in.read1(CHUNK):
                _write_all(self._sdk_in, chunk)
        except OSError:
            pass  # the SDK's side is gone: the process is ending
        finally:
            with contextlib.suppress(OSError):
                os.close(self._sdk_in)  # the SDK reads the end of input

    def _handshake(self) -> None:
        """Answer what can be answered here until the SDK is up; pass the rest on."""
        first = True
        at_start = True  # at the start of a line
        while not self._sdk_up.is_set():
            line = self._wire_in.readline(CHUNK)
            if not line:
                return
            whole = at_start and line.endswith(b"\n")
            at_start = line.endswith(b"\n")
            if whole and not line.strip():  # a blank line: the transport skips it
                _write_all(self._sdk_in, line)
                continue
            message = _parse(line) if whole else None
            if first:
                first = False
                if message is None or not self._initialize(message):
                    _write_all(self._sdk_in, line)
                    self.answers = None  # not a handshake this front knows: hands off
                    return
                continue
            if message is None or not self._list(message):
                _write_all(self._sdk_in, line)

    def _initialize(self, message: dict[str, Any]) -> bool:
        """Answer a well-formed ``initialize`` and pass it on under :data:`REPLAY_ID`."""
        params = message.get("params")
        if (
            self.answers is None
            or message.get("method") != "initialize"
            or not _plain_id(message.get("id"))
            or not isinstance(params, dict)
            or "_meta" in params  # an envelope of a later protocol era: the SDK's to judge
            or not isinstance(params.get("protocolVersion"), str)
            or not isinstance(params.get("capabilities"), dict)
            or not _client_info(params.get("clientInfo"))
        ):
            return False
        versions = self.answers["versions"]
        asked = params["protocolVersion"]
        self._version = asked if asked in versions else self.answers["latest"]
        result = versions[self._version]["initialize"]
        self._early_init = result
        replay = {"jsonrpc": "2.0", "id": REPLAY_ID, "method": "initialize", "params": params}
        _write_all(self._sdk_in, json.dumps(replay).encode() + b"\n")
        self._reply(message["id"], result)
        return True

    def _list(self, message: dict[str, Any]) -> bool:
        """Answer a fixed list (or ping) asked without params; False to pass it on."""
        method = message.get("method")
        if (
            self.answers is None
            or self._version is None
            or method not in LISTS
            or not _plain_id(message.get("id"))
            or message.get("params") not in (None, {})
        ):
            return False
        result = self.answers["versions"][self._version].get(method)
        if result is None:
            return False
        self._reply(message["id"], result)
        return True

    def _reply(self, request_id: Any, result: Any) -> None:
        line = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result})
        with self._write_lock:
            _write_all(self._wire_out, line.encode("ascii") + b"\n")

    # -- the SDK -> client ---------------------------------------------------------

    def _copy_sdk(self) -> None:
        """Everything the SDK writes goes to the client, but its reply to the replayed
        ``initialize``."""
        source = io.BufferedReader(io.FileIO(self._sdk_out, "rb"), buffer_size=CHUNK)
        dropped = False
        at_start = True
        try:
            while line := source.readline(CHUNK):
                whole = at_start and line.endswith(b"\n")
                at_start = line.endswith(b"\n")
                if not dropped and whole and REPLAY_ID.encode() in line:
                    reply = _parse(line)
                    if reply is not None and reply.get("id") == REPLAY_ID:
                        dropped = True
                        self._compare(reply)
                        continue
                with self._write_lock:
                    _write_all(self._wire_out, line)
        except OSError:
            pass  # the client is gone

    def _compare(self, reply: dict[str, Any]) -> None:
        if reply.get("result") != self._early_init:
            print(
                "precedents mcp: the early initialize answer differs from the SDK's; "
                "run `python -m precedents.mcp.handshake` (src/precedents/mcp/answers.py)",
                file=sys.stderr,
            )


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) and value.get("jsonrpc") == "2.0" else None


def _plain_id(value: Any) -> bool:
    """An id answered here: a plain string or integer (the transport handles the rest)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, str):
        return value != REPLAY_ID and value.isprintable() and value.isascii()
    return isinstance(value, int) and abs(value) < 2**53


def _client_info(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("name"), str)
        and isinstance(value.get("version"), str)
    )
