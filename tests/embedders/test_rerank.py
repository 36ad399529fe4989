"""The HTTP reranker and recall's rerank hook, against a real /rerank server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from robotmem import RobotMemory, ValidationError
from robotmem.config import Settings
from robotmem.embedders.rerank import HttpReranker, parse_scores
from robotmem.errors import EmbeddingError

pytestmark = pytest.mark.slow

LESSONS = [
    "grip_force=12 N held the ceramic mug on the first try",
    "the ceramic mug slipped at grip_force=6 N during the lift",
    "swapped to silicone pads after the ceramic mug slipped",
    "the cereal box was crushed at grip_force=20 N",
]


@dataclass
class RerankServer:
    """Scores a document 1.0 when it holds ``favourite``, else 0.0; records every request body."""

    favourite: str = "pads"
    delay_s: float = 0.0
    fail_status: int | None = None
    raw_body: bytes | None = None
    bodies: list[Any] = field(default_factory=list)
    url: str = ""

    def answer(self, body: Any) -> tuple[int, bytes]:
        self.bodies.append(body)
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.fail_status is not None:
            return self.fail_status, json.dumps({"error": {"message": "model not loaded"}}).encode()
        if self.raw_body is not None:
            return 200, self.raw_body
        results = [
            {"index": i, "relevance_score": 1.0 if self.favourite in doc else -0.5 - i / 100}
            for i, doc in enumerate(body["documents"])
        ]
        results.sort(key=lambda r: -r["relevance_score"])  # servers answer best first
        return 200, json.dumps({"model": body.get("model", ""), "results": results}).encode()


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path != "/v1/rerank":
            status, content = 404, b"{}"
        else:
            status, content = self.server.fake.answer(body)
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)
        except OSError:
            pass  # the client gave up (timeout test)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, fake: RerankServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake


@pytest.fixture
def server() -> Iterator[RerankServer]:
    fake = RerankServer()
    httpd = _Server(fake)
    host, port = httpd.server_address[:2]
    fake.url = f"http://{host}:{port}/v1"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture
def lessons(tmp_path: Path, settings: Settings) -> Iterator[RobotMemory]:
    with RobotMemory(tmp_path / "rerank.db", settings=settings, embed_backend="none") as mem:
        for lesson in LESSONS:
            mem.learn(lesson, collection="arm")
        yield mem


def _contents(mem: RobotMemory, query: str, n: int = 3) -> list[str]:
    return [m["content"] for m in mem.recall(query, n=n, collection="arm")["memories"]]


def test_the_reranker_orders_recalls_best_candidates(lessons: RobotMemory, server: RerankServer) -> None:
    plain = _contents(lessons, "ceramic mug grip_force")
    assert plain[0] != LESSONS[2]
    lessons.settings = lessons.settings.replace(rerank_url=server.url, rerank_model="bge-reranker-v2-m3")
    result = lessons.recall("ceramic mug grip_force", n=3, collection="arm")
    assert [m["content"] for m in result["memories"]][0] == LESSONS[2]
    assert result["memories"][0]["score"] == 1.0 and len(result["memories"]) == 3
    (body,) = server.bodies
    assert body["model"] == "bge-reranker-v2-m3" and body["query"] == "ceramic mug grip_force"
    assert set(body["documents"]) == set(LESSONS)  # rerank_depth (20) candidates, not n


def test_reranking_is_off_by_default(lessons: RobotMemory, server: RerankServer) -> None:
    assert lessons.settings.rerank_url == ""
    _contents(lessons, "ceramic mug")
    assert server.bodies == []


def test_time_order_and_empty_queries_are_not_reranked(lessons: RobotMemory, server: RerankServer) -> None:
    lessons.settings = lessons.settings.replace(rerank_url=server.url)
    lessons.recall("ceramic mug", collection="arm", order="time")
    lessons.recall("", collection="arm")
    assert server.bodies == []


@pytest.mark.parametrize(
    "breakage",
    [
        {"delay_s": 1.5},
        {"fail_status": 503},
        {"raw_body": b"not json"},
        {"raw_body": json.dumps({"results": [{"index": 0, "relevance_score": 1.0}]}).encode()},
    ],
)
def test_a_failing_reranker_leaves_the_pipelines_order(
    lessons: RobotMemory, server: RerankServer, breakage: dict[str, Any]
) -> None:
    plain = _contents(lessons, "ceramic mug grip_force")
    for name, value in breakage.items():
        setattr(server, name, value)
    lessons.settings = lessons.settings.replace(rerank_url=server.url, rerank_timeout_s=0.3)
    assert _contents(lessons, "ceramic mug grip_force") == plain
    assert len(server.bodies) == 1
    # Cooling down after the failure: the next recall does not wait on the server again.
    assert _contents(lessons, "ceramic mug grip_force") == plain
    assert len(server.bodies) == 1


def test_the_reranker_reports_what_went_wrong(server: RerankServer) -> None:
    server.fail_status = 500
    reranker = HttpReranker(server.url)
    try:
        with pytest.raises(EmbeddingError, match="answered HTTP 500: model not loaded"):
            reranker.score("q", ["a", "b"])
        assert not reranker.available
        with pytest.raises(EmbeddingError, match="cooling down"):
            reranker.score("q", ["a"])
    finally:
        reranker.close()


def test_answers_are_checked_document_by_document() -> None:
    assert parse_scores(
        {"results": [{"index": 1, "relevance_score": 0.2}, {"index": 0, "score": 0.9}]}, 2
    ) == [
        0.9,
        0.2,
    ]
    for bad in [
        [],
        {"results": [{"index": 0, "relevance_score": 1.0}, {"index": 0, "relevance_score": 0.5}]},
        {"results": [{"index": 2, "relevance_score": 1.0}, {"index": 0, "relevance_score": 0.5}]},
        {"results": [{"index": 0, "relevance_score": float("nan")}, {"index": 1, "relevance_score": 0.5}]},
        {"results": [{"index": True, "relevance_score": 1.0}, {"index": 1, "relevance_score": 0.5}]},
    ]:
        with pytest.raises(EmbeddingError, match="reranker answer"):
            parse_scores(bad, 2)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"rerank_url": "localhost:8080"},
            r"setting 'rerank_url' is 'localhost:8080'; accepted: an http:// or https:// URL",
        ),
        (
            {"rerank_timeout_s": 0.0},
            r"setting 'rerank_timeout_s' is 0.0; accepted: a finite number within 0.001..600",
        ),
        ({"rerank_depth": 0}, r"setting 'rerank_depth' is 0; accepted: an integer within 1..100"),
    ],
)
def test_rerank_settings_are_checked(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Settings().replace(**changes)
