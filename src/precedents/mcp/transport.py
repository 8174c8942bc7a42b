"""The MCP server's stdio transport: every JSON-RPC request it reads gets a reply (issue #20).

The SDK's own transport (``mcp.server.stdio``) hands each line to pydantic's
JSON parser, which refuses a lone surrogate escape (``"\\ud800"``: valid JSON,
no valid UTF-8), nesting past its limit and anything not shaped like a
message; the refusal is dropped at debug level, so the client waits for ever
(4/4 calls with ``"\\ud800"`` never answered). And one result holding an
unencodable string (a file name read with ``surrogateescape``) kills its
writer task, after which nothing is answered at all.

Here each line is read as bytes and parsed by Python's ``json`` first:

- a lone surrogate anywhere becomes U+FFFD before the SDK sees the message
  (an id holding one is aliased, and the reply carries the client's own id);
- JSON that is valid but cannot be a message (nested too deeply, a batch, an
  id of the wrong type, params of the wrong shape) gets a JSON-RPC error
  carrying its id (``null`` when there is none to carry), as JSON-RPC 2.0
  asks; text that is not JSON gets a parse error;
- a line over :data:`MAX_LINE_BYTES` is skipped to its end and answered with
  an error for the id found at its start;
- a reply that cannot be encoded is encoded again with U+FFFD in place of
  what could not be.

While it serves, fd 0 reads the null device and fd 1 writes to stderr (as the
SDK does): a stray ``print`` or a child process cannot corrupt the wire.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sys
from collections.abc import AsyncIterator
from typing import IO, Any

import anyio
import anyio.to_thread
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

MAX_LINE_BYTES = 16 * 1024 * 1024
# Where the id of an over-long line is looked for.
ID_SCAN_CHARS = 64 * 1024
SURROGATE = re.compile("[\ud800-\udfff]")
ALIAS_PREFIX = "precedents-id-"

Outgoing = SessionMessage | dict[str, Any]


def top_level_id(text: str) -> tuple[bool, Any]:
    """The ``id`` member of the JSON object ``text`` starts with, without parsing the rest.

    Iterative (no depth limit): it serves the lines ``json`` cannot parse
    (nested too deeply, cut short). Returns (found, value); a value that is not
    a string or a number counts as not found.
    """
    depth, i, n = 0, 0, len(text)
    expect_key = False
    while i < n:
        c = text[i]
        if c == '"':
            end = _string_end(text, i)
            if end < 0:
                return False, None
            if depth == 1 and expect_key and text[i : end + 1] == '"id"':
                return _id_value(text, end + 1)
            expect_key = False
            i = end + 1
            continue
        if c in "{[":
            depth += 1
            expect_key = c == "{" and depth == 1
        elif c in "}]":
            depth -= 1
        elif c == "," and depth == 1:
            expect_key = True
        i += 1
    return False, None


def _string_end(text: str, start: int) -> int:
    i = start + 1
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            return i
        i += 1
    return -1


def _id_value(text: str, after_key: int) -> tuple[bool, Any]:
    found = re.compile(r'\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)').match(
        text, after_key
    )
    if found is None:
        return False, None
    try:
        return True, json.loads(found.group(1))
    except ValueError:
        return False, None


def usable_id(value: Any) -> Any:
    """An id a reply may carry: a string or a finite number (JSON-RPC 2.0), else None (``null``)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None  # 1e999 parses as inf, which JSON cannot carry back
    return value


def error_reply(request_id: Any, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC error object, its message on one line."""
    one_line = " ".join(message.split())[:300]
    return {
        "jsonrpc": "2.0",
        "id": usable_id(request_id),
        "error": {"code": code, "message": one_line},
    }


class Reader:
    """Turns lines from the client into SDK messages or error replies."""

    def __init__(self) -> None:
        self.aliases: dict[str, Any] = {}
        self._next_alias = 0

    def message(self, line: bytes) -> SessionMessage | dict[str, Any] | None:
        """The message in ``line``; an error reply when there is none to hand on;
        None for a blank line or an invalid message nobody waits on."""
        text = line.decode("utf-8", "replace").strip()
        if not text:
            return None
        try:
            value = json.loads(text)
        except RecursionError:
            return error_reply(top_level_id(text)[1], types.INVALID_REQUEST, "nested too deeply")
        except json.JSONDecodeError:
            return error_reply(None, types.PARSE_ERROR, "not JSON")
        except ValueError:  # valid JSON Python will not hold: an integer of 4,300+ digits
            found = top_level_id(text)[1]
            return error_reply(found, types.INVALID_REQUEST, "a number too long to read")
        if isinstance(value, list):
            return self._batch(value)
        if not isinstance(value, dict):
            return error_reply(None, types.INVALID_REQUEST, "not a JSON-RPC message")
        has_id = "id" in value
        request_id = value.get("id")
        if isinstance(request_id, str) and SURROGATE.search(request_id):
            value["id"] = self._alias(request_id)
        try:
            clean = SURROGATE.sub("\ufffd", json.dumps(value, ensure_ascii=False))
            message = types.jsonrpc_message_adapter.validate_json(clean, by_name=False)
        except (ValueError, RecursionError) as exc:  # pydantic's ValidationError is a ValueError
            if isinstance(value.get("id"), str) and value["id"].startswith(ALIAS_PREFIX):
                self.aliases.pop(value["id"], None)
            if "result" in value or "error" in value:
                return None  # a malformed reply to one of our requests: nobody waits on it
            if not has_id and "method" in value:
                return None  # a notification: never answered, even when malformed
            return error_reply(request_id, types.INVALID_REQUEST, _first_error(exc))
        if has_id and isinstance(message, types.JSONRPCNotification):
            # The id was dropped as the wrong type (null, a list...): a request all the same.
            return error_reply(
                request_id, types.INVALID_REQUEST, "id must be a string or an integer"
            )
        return SessionMessage(message)

    def _batch(self, items: list[Any]) -> dict[str, Any] | None:
        # MCP has no batches (since 2025-06-18); each request in one gets its error.
        ids = [item["id"] for item in items if isinstance(item, dict) and "id" in item]
        if not ids:
            return error_reply(None, types.INVALID_REQUEST, "batches are not supported")
        return {
            "batch": [
                error_reply(i, types.INVALID_REQUEST, "batches are not supported") for i in ids
            ]
        }

    def _alias(self, request_id: str) -> str:
        self._next_alias += 1
        alias = f"{ALIAS_PREFIX}{self._next_alias}"
        self.aliases[alias] = request_id
        return alias


def _first_error(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    errors = getattr(exc, "errors", None)
    if callable(errors):
        with contextlib.suppress(Exception):
            first = errors(include_input=False, include_url=False)[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            return f"invalid request: {first.get('msg', 'invalid')}" + (
                f" at {where}" if where else ""
            )
    return "invalid request"


def encode(item: Outgoing, aliases: dict[str, Any]) -> bytes:
    """One outgoing message as a line of JSON; never raises."""
    if isinstance(item, dict):
        batch = item.get("batch")
        lines = batch if isinstance(batch, list) else [item]
        return b"".join(json.dumps(x, ensure_ascii=True).encode("ascii") + b"\n" for x in lines)
    message = item.message
    try:
        text = message.model_dump_json(by_alias=True, exclude_unset=True)
    except Exception:  # an unencodable string (a surrogate): replace it, keep the reply
        try:
            data = message.model_dump(by_alias=True, exclude_unset=True, mode="python")
            text = SURROGATE.sub("\ufffd", json.dumps(data, ensure_ascii=False, default=str))
        except Exception:
            request_id = getattr(message, "id", None)
            text = json.dumps(error_reply(request_id, types.INTERNAL_ERROR, "unencodable reply"))
    request_id = getattr(message, "id", None)
    if isinstance(request_id, str) and request_id in aliases:
        data = json.loads(text)
        data["id"] = aliases.pop(request_id)
        text = json.dumps(data, ensure_ascii=True)
    return text.encode("utf-8") + b"\n"


def read_line(stream: IO[bytes]) -> tuple[bytes, bool]:
    """The next line (at most :data:`MAX_LINE_BYTES` of it) and whether it was longer;
    b"" at the end of input."""
    line = stream.readline(MAX_LINE_BYTES + 1)
    if len(line) <= MAX_LINE_BYTES or line.endswith(b"\n"):
        return line, False
    head = line[:ID_SCAN_CHARS]
    while line and not line.endswith(b"\n"):  # skip to the end of the over-long line
        line = stream.readline(MAX_LINE_BYTES)
    return head, True


@contextlib.contextmanager
def _claimed_stdio() -> Any:
    """Private duplicates of fds 0 and 1 for the wire; fd 0 then reads the null device
    and fd 1 writes to stderr until the block ends (POSIX; elsewhere the streams as they are)."""
    if os.name == "nt":
        yield sys.stdin.buffer, sys.stdout.buffer
        return
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    try:
        with (
            os.fdopen(wire_in, "rb", closefd=False) as stdin,
            os.fdopen(wire_out, "wb", closefd=False) as stdout,
        ):
            yield stdin, stdout
    finally:
        with contextlib.suppress(OSError):
            os.dup2(wire_in, 0)
        with contextlib.suppress(OSError):
            os.dup2(wire_out, 1)
        # wire_in is left open: a reader thread may still be blocked on it.
        with contextlib.suppress(OSError):
            os.close(wire_out)


@contextlib.asynccontextmanager
async def stdio_transport() -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[Outgoing]]
]:
    """(read stream, write stream) for ``Server.run``, over this process's stdin and stdout."""
    reader = Reader()
    in_send, in_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    out_send, out_recv = anyio.create_memory_object_stream[Outgoing](64)
    replies = out_send.clone()
    reading = anyio.CancelScope()
    with _claimed_stdio() as (stdin, stdout):

        async def read_loop() -> None:
            with reading:
                async with in_send, replies:
                    while True:
                        line, too_long = await anyio.to_thread.run_sync(
                            read_line, stdin, abandon_on_cancel=True
                        )
                        if not line:
                            return
                        if too_long:
                            found = top_level_id(line.decode("utf-8", "replace"))[1]
                            limit = f"over {MAX_LINE_BYTES // (1024 * 1024)} MiB"
                            await replies.send(error_reply(found, types.INVALID_REQUEST, limit))
                            continue
                        item = reader.message(line)
                        if isinstance(item, SessionMessage):
                            await in_send.send(item)
                        elif item is not None:
                            await replies.send(item)

        def write(data: bytes) -> None:
            stdout.write(data)
            stdout.flush()

        async def write_loop() -> None:
            async with out_recv:
                async for item in out_recv:
                    with contextlib.suppress(OSError):  # the client is gone: drain and end
                        await anyio.to_thread.run_sync(write, encode(item, reader.aliases))

        async with anyio.create_task_group() as tg:
            tg.start_soon(read_loop)
            tg.start_soon(write_loop)
            try:
                yield in_recv, out_send
            finally:
                # The server is done: stop reading (a blocked read is abandoned), then let
                # the writer send what is queued and end with the last sender closed.
                reading.cancel()
                await replies.aclose()
                await out_send.aclose()
