"""The MCP stdio transport byte by byte: every line gets a reply, and a call sent before EOF is answered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.adapters.test_mcp import call, connect, run

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _mcp_installed() -> None:
    """Skip without the MCP extra (checked per test: a fast run collects this module without loading it)."""
    pytest.importorskip("mcp")


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def learn_call(request_id: int, insight: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "learn", "arguments": {"insight": insight}},
    }


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def start(tmp_path: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "ROBOTMEM_HOME": str(tmp_path / "home"), "ROBOTMEM_EMBED_BACKEND": "hash"}
    return subprocess.Popen(
        [sys.executable, "-m", "robotmem", "mcp", "--db", str(tmp_path / "m.db")],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def reply(process: subprocess.Popen[bytes], timeout: float = 60) -> dict[str, Any]:
    """Return the next line the server writes; fail (not hang) when none comes within ``timeout``."""
    assert process.stdout is not None
    stdout = process.stdout
    lines: list[bytes] = []
    reader = threading.Thread(target=lambda: lines.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if reader.is_alive():
        process.kill()
        pytest.fail(f"no reply within {timeout} s: the line went unanswered")
    raw = lines[0]
    assert raw, process.stderr.read().decode() if process.stderr else "no reply"
    value: dict[str, Any] = json.loads(raw)
    return value


def test_every_unparseable_line_gets_an_error_reply(tmp_path: Path) -> None:
    process = start(tmp_path)
    assert process.stdin is not None
    try:
        process.stdin.write(line(INITIALIZE))
        process.stdin.flush()
        assert reply(process)["id"] == 1
        process.stdin.write(line(INITIALIZED))
        hostile = [
            (b"{not json\n", None, -32700),
            (b"\xff\xfe{}\n", None, -32700),
            (b"[" * 5000 + b"]" * 5000 + b"\n", None, -32700),
            (line(learn_call(7, "x"))[:-1].replace(b'"x"', b'"\\ud800 arm"') + b"\n", 7, -32602),
            (b'{"id": 8, "hello": "world"}\n', 8, -32600),
            (b"42\n", None, -32600),
        ]
        for raw, request_id, code in hostile:
            process.stdin.write(raw)
            process.stdin.flush()
            answer = reply(process)
            assert answer["id"] == request_id and answer["error"]["code"] == code, (raw[:40], answer)
        process.stdin.write(line(learn_call(9, "the lid opens after a quarter turn")))
        process.stdin.flush()
        answer = reply(process)
        assert answer["id"] == 9 and answer["result"]["structuredContent"]["status"] == "created"
    finally:
        process.stdin.close()
        process.wait(timeout=60)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    assert process.returncode == 0


MALFORMED_ENVELOPES = [
    # An id of the wrong type: the SDK's models would take these for notifications, never answered.
    ({"jsonrpc": "2.0", "id": True, "method": "tools/list"}, '"id" must be a string or an integer'),
    ({"jsonrpc": "2.0", "id": 9.5, "method": "tools/list"}, '"id" must be a string or an integer'),
    ({"jsonrpc": "2.0", "id": 1.0, "method": "tools/list"}, '"id" must be a string or an integer'),
    ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}, '"id" must be a string or an integer'),
    ({"jsonrpc": "2.0", "id": [1], "method": "tools/list"}, '"id" must be a string or an integer'),
    ({"jsonrpc": "2.0", "id": None, "method": "tools/list"}, '"id" must be a string or an integer'),
    ({"jsonrpc": "2.0", "method": 5}, '"method" must be a string'),
    ({"jsonrpc": "2.0", "method": "notifications/x", "params": "s"}, '"params" must be an object'),
    ({"jsonrpc": "2.0", "method": "notifications/x", "params": [1]}, '"params" must be an object'),
    ({"jsonrpc": "2.0", "method": "notifications/x", "params": None}, '"params" must be an object'),
    ({"jsonrpc": "1.0", "method": "notifications/initialized"}, '"jsonrpc" must be "2.0"'),
    ({"method": "notifications/initialized"}, '"jsonrpc" must be "2.0"'),
    ([{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}], "batch"),
    ([], "batch"),
    ({}, '"jsonrpc" must be "2.0"'),
    ({"jsonrpc": "2.0"}, 'needs a "method"'),
    ({"jsonrpc": "2.0", "method": "notifications/x", "result": {}}, 'no "result" or "error"'),
    ({"jsonrpc": "2.0", "id": True, "result": {}}, '"id" must be a string or an integer'),
    ({"jsonrpc": "2.0", "id": 5, "result": {}, "error": {"code": 1, "message": "m"}}, "exactly one of"),
    ("tools/list", "a JSON object, got a string"),
]


def test_every_malformed_envelope_gets_exactly_one_invalid_request_reply(tmp_path: Path) -> None:
    """A line that is JSON but not a JSON-RPC message is answered once; a valid notification is not."""
    process = start(tmp_path)
    assert process.stdin is not None
    try:
        process.stdin.write(line(INITIALIZE))
        process.stdin.flush()
        assert reply(process)["id"] == 1
        for message, problem in MALFORMED_ENVELOPES:
            process.stdin.write(json.dumps(message).encode() + b"\n")
            process.stdin.write(line(INITIALIZED))  # a valid notification: no reply of its own
            process.stdin.flush()
            answer = reply(process)
            expected_id = message.get("id") if isinstance(message, dict) and message.get("id") == 5 else None
            assert answer["id"] == expected_id, (message, answer)
            assert answer["error"]["code"] == -32600 and problem in answer["error"]["message"], (
                message,
                answer,
            )
        process.stdin.write(line({"jsonrpc": "2.0", "id": "last", "method": "tools/list"}))
        process.stdin.flush()
        answer = reply(process)  # the next line out answers this request: nothing extra was sent
        assert answer["id"] == "last" and "tools" in answer["result"], answer
        process.stdin.write(line({"jsonrpc": "2.0", "id": 2**70, "method": "ping"}))
        process.stdin.flush()
        assert reply(process) == {"jsonrpc": "2.0", "id": 2**70, "result": {}}
    finally:
        process.stdin.close()
        process.wait(timeout=60)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    assert process.returncode == 0


def test_a_call_sent_just_before_stdin_closes_is_answered(tmp_path: Path) -> None:
    process = start(tmp_path)
    requests = [
        INITIALIZE,
        INITIALIZED,
        *(learn_call(n, f"lesson {n}: the valve {n} sticks") for n in range(2, 6)),
    ]
    out, err = process.communicate(b"".join(line(m) for m in requests), timeout=120)
    answers = {message["id"]: message for message in map(json.loads, out.splitlines())}
    assert sorted(answers) == [1, 2, 3, 4, 5], err.decode()
    assert all(answers[n]["result"]["structuredContent"]["status"] == "created" for n in range(2, 6))
    assert process.returncode == 0


def test_a_huge_coordinate_gives_the_same_finite_distance_in_text_and_structure(tmp_path: Path) -> None:
    async def main() -> None:
        async with connect(tmp_path, tmp_path / "far.db") as session:
            await call(
                session, "learn", insight="the far beacon blinks", context={"spatial": {"p": [1e200, 0]}}
            )
            found = await call(
                session, "recall", query="beacon", spatial_sort={"field": "spatial.p", "target": [-1e200, 0]}
            )
            assert found["memories"][0]["spatial_distance"] == 2e200  # call() checked text == structure

    run(main)
