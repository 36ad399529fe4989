"""``embed_timeout_s`` and ``rerank_timeout_s`` are deadlines on every door: SDK, CLI, MCP and REST.

The embedder (and the reranker) is a real HTTP server on 127.0.0.1 that sends its answer one byte every
0.2 s, so each socket read returns at once while the whole answer takes more than 40 s. Every operation
must be done within the limit plus a margin that holds on a loaded two-core machine (process start-up
included for the CLI), and an operation that needs no embedding must not wait for one that does.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from tests.embedders.servers import FakeServer, RerankServer, serve

import robotmem
from robotmem import RobotMemory
from robotmem.config import Settings

pytestmark = pytest.mark.slow

TRICKLE_S = 0.2  # the shortest answer (a status line, headers and a body) takes over 40 s
LIMIT_S = 2.0
IN_PROCESS_MARGIN_S = 4.0
PROCESS_MARGIN_S = 10.0  # process start-up and imports on a busy machine
SOURCES = str(Path(robotmem.__file__).resolve().parents[1])


@pytest.fixture
def trickling_ollama() -> Iterator[FakeServer]:
    yield from serve(FakeServer(api="ollama", trickle_s=TRICKLE_S), "")


@pytest.fixture
def trickling_reranker() -> Iterator[RerankServer]:
    yield from serve(RerankServer(trickle_s=TRICKLE_S), "/v1")


def _env(tmp_path: Path, server: FakeServer) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": SOURCES,
        "ROBOTMEM_HOME": str(tmp_path / "home"),
        "ROBOTMEM_EMBED_BACKEND": "ollama",
        "ROBOTMEM_OLLAMA_URL": server.url,
        "ROBOTMEM_EMBED_TIMEOUT_S": str(LIMIT_S),
    }


def _timed(call: Any) -> tuple[float, Any]:
    started = time.monotonic()
    result = call()
    return time.monotonic() - started, result


def test_sdk_learn_and_recall_end_by_the_embed_deadline(tmp_path: Path, trickling_ollama: FakeServer) -> None:
    settings = Settings(home=tmp_path / "home", ollama_url=trickling_ollama.url, embed_timeout_s=LIMIT_S)
    with RobotMemory(tmp_path / "a.db", embed_backend="ollama", settings=settings) as mem:
        elapsed, learned = _timed(lambda: mem.learn("grip_force=12 N held the mug"))
        assert learned["status"] == "created"  # stored without a vector; backfill adds it later
        assert elapsed < LIMIT_S + IN_PROCESS_MARGIN_S
    with RobotMemory(tmp_path / "a.db", embed_backend="ollama", settings=settings) as mem:
        elapsed, found = _timed(lambda: mem.recall("mug grip force"))
        assert found["mode"] == "bm25_only" and found["total"] == 1
        assert elapsed < LIMIT_S + IN_PROCESS_MARGIN_S


def test_sdk_recall_ends_by_the_rerank_deadline(tmp_path: Path, trickling_reranker: RerankServer) -> None:
    settings = Settings(home=tmp_path / "home", rerank_url=trickling_reranker.url, rerank_timeout_s=LIMIT_S)
    with RobotMemory(tmp_path / "r.db", embed_backend="none", settings=settings) as mem:
        mem.learn("grip_force=12 N held the mug")
        mem.learn("silicone pads stop the mug slipping")
        elapsed, found = _timed(lambda: mem.recall("mug"))
        assert found["total"] == 2 and len(trickling_reranker.bodies) == 1
        assert elapsed < LIMIT_S + IN_PROCESS_MARGIN_S


def test_cli_learn_and_recall_end_by_the_deadline(tmp_path: Path, trickling_ollama: FakeServer) -> None:
    env = _env(tmp_path, trickling_ollama)
    db = str(tmp_path / "cli.db")
    for command in (["learn", "grip_force=12 N held the mug"], ["recall", "mug"]):
        elapsed, done = _timed(
            lambda command=command: subprocess.run(
                [sys.executable, "-m", "robotmem", *command, "--db", db],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
        )
        assert done.returncode == 0, done.stderr
        assert elapsed < LIMIT_S + PROCESS_MARGIN_S, (command, elapsed)


def test_mcp_tools_end_by_the_deadline_and_others_do_not_wait(
    tmp_path: Path, trickling_ollama: FakeServer
) -> None:
    """learn waits for the embedder (at most the limit); start_session and forget, sent while learn and
    the server's own warm-up are waiting on it, answer at once."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = _env(tmp_path, trickling_ollama)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "robotmem", "mcp", "--db", str(tmp_path / "mcp.db")], env=env
    )
    times: dict[str, float] = {}

    async def timed_call(session: ClientSession, name: str, arguments: dict[str, Any]) -> Any:
        started = time.monotonic()
        result = await session.call_tool(name, arguments)
        times[name] = time.monotonic() - started
        assert not result.is_error, result.content
        return result.structured_content

    async def main() -> None:
        with open(tmp_path / "mcp-stderr.log", "w", encoding="utf-8") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(
                        timed_call, session, "learn", {"insight": "grip_force=12 N held the mug"}
                    )
                    await anyio.sleep(0.3)
                    started = await timed_call(session, "start_session", {"context": {"task": "push"}})
                    assert started["session_id"]
                    assert "learn" not in times  # learn is still waiting on the embedder
                memory_id = (await timed_call(session, "learn", {"insight": "a second lesson, later"}))[
                    "memory_id"
                ]
                await timed_call(session, "forget", {"memory_id": memory_id, "reason": "test"})
                await timed_call(session, "recall", {"query": "mug"})

    anyio.run(main)
    assert times["start_session"] < LIMIT_S / 2, times
    for name in ("learn", "recall", "forget"):
        assert times[name] < LIMIT_S + IN_PROCESS_MARGIN_S, times


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_rest_operations_end_by_the_deadline_and_others_do_not_wait(
    tmp_path: Path, trickling_ollama: FakeServer
) -> None:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "robotmem", "web", "--port", str(port), "--db", str(tmp_path / "web.db")],
        env=_env(tmp_path, trickling_ollama),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/api"
    try:
        ready_by = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{url}/stats", timeout=5)
                break
            except httpx.TransportError:
                assert process.poll() is None, process.communicate()[1]
                assert time.monotonic() < ready_by, "the web server did not start"
                time.sleep(0.2)
        times: dict[str, float] = {}

        def post(name: str, body: dict[str, Any]) -> None:
            started = time.monotonic()
            response = httpx.post(f"{url}/{name}", json=body, timeout=120)
            times[name] = time.monotonic() - started
            assert response.status_code == 200, response.text

        learner = threading.Thread(target=post, args=("learn", {"insight": "grip_force=12 N held the mug"}))
        learner.start()
        time.sleep(0.3)
        post("start_session", {"context": {"task": "push"}})
        learner.join()
        post("recall", {"query": "mug"})
        assert times["start_session"] < LIMIT_S / 2, times
        for name in ("learn", "recall"):
            assert times[name] < LIMIT_S + IN_PROCESS_MARGIN_S, times
    finally:
        process.terminate()
        process.communicate(timeout=30)
