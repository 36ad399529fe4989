"""An HTTP embedder that goes down and comes back, seen through RobotMemory in one process."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from tests.conftest import without_vector
from tests.embedders.servers import FakeClock, FakeServer, serve

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.embedders.ollama import OllamaEmbedder


@pytest.fixture
def ollama() -> Iterator[FakeServer]:
    with contextlib.contextmanager(serve)(FakeServer(api="ollama"), "") as server:
        yield server


def test_recall_stays_available_during_an_outage_and_is_hybrid_after_recovery(
    locate: Callable[[str], Any], settings: Settings, ollama: FakeServer
) -> None:
    clock = FakeClock()
    db = locate("memory.db")
    embedder = OllamaEmbedder(ollama.url, "nomic-embed-text", timeout_s=2.0, clock=clock)
    with RobotMemory(db, settings=settings, embedder=embedder) as mem:
        before = mem.learn("the gripper slips on wet glass cups")["memory_id"]
        assert mem.recall("gripper wet glass")["mode"] == "hybrid"

        ollama.fail_status = 500
        during = mem.learn("lidar misses glass doors in the hallway")
        assert during["status"] == "created"  # the experience is kept without a vector
        assert without_vector(db) == 1
        requests = len(ollama.embed_requests())
        for _ in range(3):
            result = mem.recall("glass doors lidar", n=2)
            assert result["mode"] == "bm25_only"
            assert result["memories"][0]["id"] == during["memory_id"]
        assert len(ollama.embed_requests()) == requests  # cooling down: the server is left alone
        assert "cooling down" in mem.doctor()["search_mode_reason"]

        ollama.fail_status = None
        clock.advance(30)
        assert mem.recall("glass doors lidar")["mode"] == "bm25_only"
        clock.advance(31)
        recovered = mem.recall("glass doors lidar", n=2)
        assert recovered["mode"] == "hybrid"
        assert during["memory_id"] in [m["id"] for m in recovered["memories"]]

        assert mem.backfill()["embedded"] == 1
        assert without_vector(db) == 0
        assert {m["id"] for m in mem.recall("glass", n=5)["memories"]} == {before, during["memory_id"]}
        assert mem.doctor()["ok"]


def test_background_backfill_fills_vectors_once_the_embedder_is_back(
    locate: Callable[[str], Any], settings: Settings, ollama: FakeServer
) -> None:
    clock = FakeClock()
    db = locate("memory.db")
    embedder = OllamaEmbedder(ollama.url, "nomic-embed-text", timeout_s=2.0, clock=clock)
    with RobotMemory(db, settings=settings, embedder=embedder) as mem:
        mem.learn("the charger is behind the blue door")
        ollama.fail_status = 503
        for text in ("arm stalls at joint 3 above 40 degrees", "camera exposure drops under the skylight"):
            mem.learn(text)
        assert without_vector(db) == 2
        assert mem.start_background_backfill(interval_s=0.05)
        time.sleep(0.3)
        assert without_vector(db) == 2  # still cooling down
        ollama.fail_status = None
        clock.advance(61)
        deadline = time.monotonic() + 10
        while without_vector(db) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert without_vector(db) == 0
        thread = mem._background._thread
    assert thread is not None and not thread.is_alive()


def test_a_fresh_process_with_the_server_down_recalls_with_bm25(
    locate: Callable[[str], Any], settings: Settings, ollama: FakeServer
) -> None:
    db = locate("memory.db")
    with RobotMemory(db, settings=settings, embedder=OllamaEmbedder(ollama.url, "nomic-embed-text")) as mem:
        created = mem.learn("the ramp to dock 2 is too steep for the cart")["memory_id"]
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    host, port = server.server_address[:2]
    server.server_close()
    down = OllamaEmbedder(f"http://{host}:{port}", "nomic-embed-text", timeout_s=1.0)
    with RobotMemory(db, settings=settings, embedder=down) as mem:
        started = time.perf_counter()
        result = mem.recall("ramp dock steep")
        assert result["mode"] == "bm25_only" and result["memories"][0]["id"] == created
        assert mem.recall("ramp dock steep")["mode"] == "bm25_only"
        assert time.perf_counter() - started < 2.0
        assert "cannot reach" in mem.doctor()["search_mode_reason"]
