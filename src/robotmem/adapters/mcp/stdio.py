"""MCP over stdio that answers every line and every call, in front of the SDK's server loop.

The SDK's own stdio transport hands a line it cannot parse to the session as an exception, which is
logged and never answered, so a client that sent it waits forever; and when stdin closes it stops
the server at once, so a call sent just before the end is carried out but never answered. Here:

- each line is read (at most ``MAX_LINE_BYTES``), checked (UTF-8, nesting at most ``MAX_DEPTH``,
  no lone surrogates, a well-formed JSON-RPC envelope: ``envelope_problem``) and only then passed on;
  a line that fails any check gets a JSON-RPC error reply at once, with the request's id when it can
  be read and ``null`` otherwise;
- at end of input the server keeps running until every request read so far has been answered
  (at most ``DRAIN_TIMEOUT_S``), then stops.

stdout carries only protocol lines: while serving, file descriptor 1 points at stderr, so a stray
``print`` from a library cannot corrupt the stream.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, BinaryIO, cast

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

from robotmem.formats import strict_json

log = logging.getLogger("robotmem.mcp")
MAX_LINE_BYTES = 64 * 1024 * 1024  # above the largest valid call (4 MiB data + 64 KiB metadata, escaped)
MAX_DEPTH = 64
DRAIN_TIMEOUT_S = 60.0

RequestId = int | str


def _error_line(request_id: RequestId | None, code: int, message: str) -> bytes:
    reply = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return strict_json.dumps(reply, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r:.40}"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _is_id(value: Any) -> bool:
    """True for a JSON-RPC id MCP allows: a string or an integer (not a boolean, float or null)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _recover_id(value: Any) -> RequestId | None:
    if isinstance(value, dict):
        found = value.get("id")
        if _is_id(found):
            return cast(RequestId, found)
    return None


def envelope_problem(value: Any) -> str | None:
    """Return what makes ``value`` not a JSON-RPC 2.0 message MCP accepts, or None when it is one.

    The SDK's models allow extra fields, so ``{"id": true, "method": ...}`` would pass them as a
    notification (which is never answered); the envelope is checked here first. A message is an
    object with ``"jsonrpc": "2.0"``; a request or notification has a string ``method`` and, if any,
    object ``params``; a request's ``id`` (and a response's) is a string or an integer; a response
    carries exactly one of ``result`` and ``error``.
    """
    if isinstance(value, list):
        return "a batch (JSON array) is not supported; send one message per line"
    if not isinstance(value, dict):
        return f"a message is a JSON object, got {_json_type(value)}"
    if value.get("jsonrpc") != "2.0":
        return f'"jsonrpc" must be "2.0", got {json.dumps(value.get("jsonrpc"))[:40]}'
    if "method" in value:
        if not isinstance(value["method"], str):
            return f'"method" must be a string, got {_json_type(value["method"])}'
        if "params" in value and not isinstance(value["params"], dict):
            return f'"params" must be an object, got {_json_type(value["params"])}'
        if "id" in value and not _is_id(value["id"]):
            return f'"id" must be a string or an integer, got {_json_type(value["id"])}'
        if "result" in value or "error" in value:
            return 'a request has no "result" or "error"'
        return None
    if "id" not in value:
        return 'a message needs a "method" (request or notification) or an "id" (response)'
    if ("result" in value) == ("error" in value):
        return 'a response carries exactly one of "result" and "error"'
    if not _is_id(value["id"]) and not (value["id"] is None and "error" in value):
        return f'"id" must be a string or an integer, got {_json_type(value["id"])}'
    return None


def check_line(line: bytes) -> tuple[types.JSONRPCMessage | None, bytes | None]:
    """Return ``(message, None)`` for a valid JSON-RPC line, or ``(None, error reply line)``."""
    if strict_json.depth(line) > MAX_DEPTH:
        return None, _error_line(
            None, types.PARSE_ERROR, f"Parse error: JSON nests deeper than {MAX_DEPTH} levels"
        )
    try:
        text = line.decode("utf-8")
        value = json.loads(text)
    except UnicodeDecodeError as exc:
        return None, _error_line(None, types.PARSE_ERROR, f"Parse error: not UTF-8 (byte {exc.start})")
    except (ValueError, RecursionError) as exc:
        return None, _error_line(None, types.PARSE_ERROR, f"Parse error: not JSON ({exc})")
    request_id = _recover_id(value)
    problem = envelope_problem(value)
    if problem is not None:
        return None, _error_line(request_id, types.INVALID_REQUEST, f"Invalid Request: {problem}")
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return None, _error_line(
            request_id,
            types.INVALID_PARAMS,
            "Invalid params: a string holds a lone surrogate (\\ud800-\\udfff)",
        )
    try:
        message = types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except Exception as exc:  # pydantic's error: the line is JSON but not a JSON-RPC message
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return None, _error_line(request_id, types.INVALID_REQUEST, f"Invalid Request: {first}")
    return message, None


class _Wire:
    """The protocol's stdout: one writer at a time, and the ids of requests still unanswered."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._lock = anyio.Lock()
        self.pending: set[RequestId] = set()
        self.idle = anyio.Event()
        self.idle.set()

    async def write(self, data: bytes) -> None:
        async with self._lock:
            await anyio.to_thread.run_sync(self._write_now, data)

    def _write_now(self, data: bytes) -> None:
        self._out.write(data)
        self._out.flush()

    def started(self, request_id: RequestId) -> None:
        self.pending.add(request_id)
        self.idle = anyio.Event() if self.idle.is_set() else self.idle

    def answered(self, request_id: RequestId | None) -> None:
        if request_id is not None:
            self.pending.discard(request_id)
        if not self.pending:
            self.idle.set()


def _read_line(source: BinaryIO) -> bytes | None:
    """Return the next line (without its newline; ``b"\\x00"`` marks one too long), or None at EOF."""
    line = source.readline(MAX_LINE_BYTES + 1)
    if not line:
        return None
    if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
        while True:  # skip the rest of the oversized line
            rest = source.readline(1024 * 1024)
            if not rest or rest.endswith(b"\n"):
                break
        return b"\x00"
    return line.rstrip(b"\r\n")


@asynccontextmanager
async def stdio_streams(source: BinaryIO, sink: BinaryIO) -> AsyncIterator[tuple[Any, Any]]:
    """Yield the ``(read_stream, write_stream)`` pair the SDK's server loop runs on."""
    read_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, write_reader = create_context_streams[SessionMessage](0)
    wire = _Wire(sink)

    async def reader() -> None:
        async with read_writer:
            while (line := await anyio.to_thread.run_sync(_read_line, source)) is not None:
                if not line.strip():
                    continue
                if line == b"\x00":
                    await wire.write(
                        _error_line(
                            None,
                            types.INVALID_REQUEST,
                            f"Invalid Request: line longer than {MAX_LINE_BYTES} bytes",
                        )
                    )
                    continue
                message, refusal = check_line(line)
                if refusal is not None:
                    await wire.write(refusal)
                    continue
                assert message is not None
                if isinstance(message, types.JSONRPCRequest):
                    wire.started(message.id)
                await read_writer.send(SessionMessage(message))
            with anyio.move_on_after(DRAIN_TIMEOUT_S):
                await wire.idle.wait()  # answer what was asked before stopping
            if wire.pending:
                log.warning(
                    "stdin closed; %d request(s) still unanswered after %.0f s",
                    len(wire.pending),
                    DRAIN_TIMEOUT_S,
                )

    async def writer() -> None:
        async with write_reader:
            async for session_message in write_reader:
                message = session_message.message
                text = message.model_dump_json(by_alias=True, exclude_unset=True)
                await wire.write(text.encode("utf-8", "backslashreplace") + b"\n")
                if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)):
                    wire.answered(message.id)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(reader)
        tasks.start_soon(writer)
        yield read_stream, write_stream
        tasks.cancel_scope.cancel()


def claim_stdio() -> tuple[BinaryIO, BinaryIO]:
    """Return private handles on the protocol's stdin and stdout; fd 0 then reads EOF, fd 1 goes to stderr."""
    source = os.fdopen(os.dup(0), "rb")
    sink = os.fdopen(os.dup(1), "wb")
    sys.stdout.flush()
    with open(os.devnull, "rb") as null:
        os.dup2(null.fileno(), 0)
    os.dup2(2, 1)
    return source, sink


async def run_stdio(server: Any, source: BinaryIO, sink: BinaryIO) -> None:
    """Serve ``server`` (an ``MCPServer``) on ``source``/``sink`` until input ends and calls are answered."""
    lowlevel = server._lowlevel_server  # the SDK's server loop; MCPServer.run_stdio_async does the same
    async with stdio_streams(source, sink) as (read_stream, write_stream):
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
