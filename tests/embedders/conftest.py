"""Fixtures of the embedder tests: fake Ollama and OpenAI servers (see ``servers.py``) and a fake clock."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from .servers import FakeClock, FakeServer, serve


@pytest.fixture
def ollama_server() -> Iterator[FakeServer]:
    """An Ollama API at ``ollama_server.url`` with ``nomic-embed-text:latest`` pulled."""
    yield from serve(FakeServer(api="ollama"), "")


@pytest.fixture
def openai_server() -> Iterator[FakeServer]:
    """An OpenAI-compatible API at ``openai_server.url`` (ends in /v1) accepting only key ``sk-test``."""
    yield from serve(FakeServer(api="openai", models=["text-embedding-3-small"], api_key="sk-test"), "/v1")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (the port was just released)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    host, port = server.server_address[:2]
    server.server_close()
    return f"http://{host}:{port}"
