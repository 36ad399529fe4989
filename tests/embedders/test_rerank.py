"""The HTTP reranker and recall's rerank hook, against a real /rerank server on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from robotmem import RobotMemory, ValidationError
from robotmem.config import Settings
from robotmem.embedders.rerank import HttpReranker, parse_scores
from robotmem.errors import EmbeddingError

from .servers import RerankServer, serve


@pytest.fixture
def server() -> Iterator[RerankServer]:
    yield from serve(RerankServer(), "/v1")


pytestmark = pytest.mark.slow

LESSONS = [
    "grip_force=12 N held the ceramic mug on the first try",
    "the ceramic mug slipped at grip_force=6 N during the lift",
    "swapped to silicone pads after the ceramic mug slipped",
    "the cereal box was crushed at grip_force=20 N",
]


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
