"""A time limit bounds the whole request: servers that trickle their answer a byte at a time.

Each socket read returns quickly from such a server, so a per-read timeout never fires; the answer
itself would take tens of seconds. The limits here are 1 s and the bound asserted is the limit plus a
margin that holds on a loaded two-core machine, far below the trickle's own duration.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import numpy as np
import pytest

from robotmem.embedders.ollama import OllamaEmbedder
from robotmem.embedders.openai import OpenAIEmbedder
from robotmem.embedders.rerank import HttpReranker
from robotmem.errors import EmbeddingError

from .servers import FAKE_DIM, FakeServer, RerankServer, serve

LIMIT_S = 1.0
TRICKLE_S = 0.2  # an answer of 100+ bytes takes 20+ s
MARGIN_S = 4.0


def timed(call: Callable[[], Any]) -> tuple[float, BaseException | None]:
    started = time.monotonic()
    try:
        call()
    except Exception as exc:
        return time.monotonic() - started, exc
    return time.monotonic() - started, None


Closable = TypeVar("Closable", OllamaEmbedder, OpenAIEmbedder)


@pytest.fixture
def closing() -> Iterator[Callable[[Closable], Closable]]:
    """Close each embedder handed to it at the end of the test: a pooled connection left open would be
    collected later, in whatever test runs then, as an unclosed transport."""
    opened: list[OllamaEmbedder | OpenAIEmbedder] = []

    def track(embedder: Closable) -> Closable:
        opened.append(embedder)
        return embedder

    yield track
    for embedder in opened:
        embedder.close()


@pytest.fixture
def trickling_ollama() -> Iterator[FakeServer]:
    yield from serve(FakeServer(api="ollama", trickle_s=TRICKLE_S), "")


@pytest.fixture
def trickling_openai() -> Iterator[FakeServer]:
    yield from serve(FakeServer(api="openai", models=["m"], trickle_s=TRICKLE_S), "/v1")


@pytest.fixture
def trickling_reranker() -> Iterator[RerankServer]:
    yield from serve(RerankServer(trickle_s=TRICKLE_S), "/v1")


def test_a_trickling_ollama_is_cut_off_at_the_limit(
    trickling_ollama: FakeServer, closing: Callable[[Any], Any]
) -> None:
    embedder = closing(OllamaEmbedder(trickling_ollama.url, "nomic-embed-text", LIMIT_S))
    elapsed, error = timed(lambda: embedder.embed_one("grip the mug"))
    assert isinstance(error, EmbeddingError)
    assert "did not answer within 1 s" in error.message
    assert LIMIT_S * 0.9 <= elapsed < LIMIT_S + MARGIN_S
    assert not embedder.available  # the failure starts the cooldown: the next call does not wait
    elapsed, error = timed(lambda: embedder.embed_one("grip the mug"))
    assert isinstance(error, EmbeddingError) and elapsed < 0.5


def test_a_trickling_openai_server_is_cut_off_at_the_limit(
    trickling_openai: FakeServer, closing: Callable[[Any], Any]
) -> None:
    embedder = closing(OpenAIEmbedder(trickling_openai.url, "sk-test", "m", LIMIT_S))
    elapsed, error = timed(lambda: embedder.embed_batch(["a", "b", "c"]))
    assert isinstance(error, EmbeddingError)
    assert "did not answer within 1 s" in error.message
    assert LIMIT_S * 0.9 <= elapsed < LIMIT_S + MARGIN_S


def test_the_dimension_probe_is_cut_off_at_the_limit(
    trickling_ollama: FakeServer, closing: Callable[[Any], Any]
) -> None:
    embedder = closing(OllamaEmbedder(trickling_ollama.url, "nomic-embed-text", LIMIT_S))
    elapsed, error = timed(lambda: embedder.dim)
    assert isinstance(error, EmbeddingError)
    assert elapsed < LIMIT_S + MARGIN_S


def test_the_model_check_and_the_first_batch_share_one_limit(
    ollama_server: FakeServer, closing: Callable[[Any], Any]
) -> None:
    """Two requests (GET /api/tags, POST /api/embed) each just under the limit still fail at the limit."""
    ollama_server.delay_s = 0.7
    embedder = closing(OllamaEmbedder(ollama_server.url, "nomic-embed-text", LIMIT_S))
    elapsed, error = timed(lambda: embedder.embed_one("x"))
    assert isinstance(error, EmbeddingError)
    assert [(r.method, r.path) for r in ollama_server.requests] == [
        ("GET", "/api/tags"),
        ("POST", "/api/embed"),
    ]
    assert elapsed < LIMIT_S + MARGIN_S


def test_a_slow_but_complete_answer_within_the_limit_is_used(
    ollama_server: FakeServer, closing: Callable[[Any], Any]
) -> None:
    ollama_server.trickle_s = 0.0005  # a few hundred bytes: well under a second
    embedder = closing(OllamaEmbedder(ollama_server.url, "nomic-embed-text", 10.0))
    vectors = embedder.embed_batch([f"text {i}" for i in range(3)])
    assert vectors.shape == (3, FAKE_DIM)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_every_batch_gets_its_own_limit(ollama_server: FakeServer, closing: Callable[[Any], Any]) -> None:
    """Backfill sends many batches: the limit is per request, not for the whole backfill."""
    ollama_server.delay_s = 1.0
    embedder = closing(OllamaEmbedder(ollama_server.url, "nomic-embed-text", 3.0, batch_size=1))
    embedder.embed_one("warm")  # the model check is done
    matrix = embedder.embed_batch(["a", "b", "c", "d"])  # 4 × 1 s: more than one limit in all
    assert matrix.shape == (4, FAKE_DIM)


def test_a_trickling_reranker_is_cut_off_at_the_limit(trickling_reranker: RerankServer) -> None:
    reranker = HttpReranker(trickling_reranker.url, timeout_s=LIMIT_S)
    try:
        elapsed, error = timed(lambda: reranker.score("mug", ["a", "b"]))
        assert isinstance(error, EmbeddingError)
        assert "did not answer within 1 s" in error.message
        assert LIMIT_S * 0.9 <= elapsed < LIMIT_S + MARGIN_S
        assert not reranker.available
    finally:
        reranker.close()


def test_the_cut_off_request_closes_its_connection(
    trickling_ollama: FakeServer, closing: Callable[[Any], Any]
) -> None:
    """The server sees the client hang up at the deadline: nothing keeps reading in the background."""
    embedder = closing(OllamaEmbedder(trickling_ollama.url, "nomic-embed-text", LIMIT_S))
    timed(lambda: embedder.embed_one("x"))
    waited = time.monotonic() + MARGIN_S
    while trickling_ollama.hangups < 1 and time.monotonic() < waited:
        time.sleep(0.05)
    assert trickling_ollama.hangups == 1
    embedder.close()
