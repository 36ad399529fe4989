"""Real HTTP servers on 127.0.0.1 that speak the Ollama and OpenAI embedding APIs, and a fake clock.

Each server answers with deterministic, not-normalised vectors (``fake_vector``) and records every
request. Tests change its behaviour through attributes: ``delay_s`` (sleep before answering),
``fail_status`` (answer every embed request with that HTTP status), ``raw_body`` (send these bytes
instead of the normal answer), ``mutate`` (edit the normal payload before it is sent) and
``trickle_s`` (send the whole answer, status line and headers included, one byte every ``trickle_s``
seconds: each socket read returns quickly, yet the answer takes minutes).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAKE_DIM = 8


def fake_vector(text: str, dim: int = FAKE_DIM) -> list[float]:
    """A deterministic vector of ``text`` with values in 1..4, deliberately not unit length."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=dim).digest()
    return [1.0 + byte / 85.0 for byte in digest]


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeServer:
    api: str  # "ollama" or "openai"
    models: list[str] = field(default_factory=lambda: ["nomic-embed-text:latest", "llama3:8b"])
    api_key: str | None = None  # openai: the only key accepted, None accepts any
    dim: int = FAKE_DIM
    delay_s: float = 0.0
    trickle_s: float = 0.0
    hangups: int = 0  # trickled answers the client stopped reading
    fail_status: int | None = None
    raw_body: bytes | None = None
    mutate: Callable[[dict[str, Any]], Any] | None = None
    embed_path: str = "/api/embed"  # ollama: an old server serves only /api/embeddings
    requests: list[RecordedRequest] = field(default_factory=list)
    url: str = ""

    def embed_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == "POST"]

    def answer(self, method: str, path: str, body: Any, headers: dict[str, str]) -> tuple[int, bytes]:
        self.requests.append(RecordedRequest(method, path, headers, body))
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.api == "ollama":
            return self._answer_ollama(method, path, body)
        return self._answer_openai(method, path, body, headers)

    def _answer_ollama(self, method: str, path: str, body: Any) -> tuple[int, bytes]:
        if method == "GET" and path == "/api/tags":
            return 200, _json({"models": [{"name": name, "model": name} for name in self.models]})
        if method != "POST" or path != self.embed_path:
            return 404, b"404 page not found"
        model = body.get("model", "")
        if model not in self.models and f"{model}:latest" not in self.models:
            return 404, _json({"error": f'model "{model}" not found, try pulling it first'})
        payload = {"model": model, "embeddings": [fake_vector(text, self.dim) for text in body["input"]]}
        return self._finish(payload)

    def _answer_openai(self, method: str, path: str, body: Any, headers: dict[str, str]) -> tuple[int, bytes]:
        if method != "POST" or path != "/v1/embeddings":
            return 404, _json({"error": {"message": f"no route {method} {path}"}})
        auth = headers.get("authorization", "")
        if self.api_key is not None and auth != f"Bearer {self.api_key}":
            return 401, _json({"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}})
        if body.get("model") not in self.models:
            return 404, _json({"error": {"message": f"The model `{body.get('model')}` does not exist"}})
        # Answer in reverse order: clients must sort by "index".
        data = [
            {"object": "embedding", "index": i, "embedding": fake_vector(text, self.dim)}
            for i, text in enumerate(body["input"])
        ]
        payload = {"object": "list", "data": data[::-1], "model": body["model"]}
        return self._finish(payload)

    def _finish(self, payload: dict[str, Any]) -> tuple[int, bytes]:
        if self.fail_status is not None:
            return self.fail_status, _json({"error": "simulated failure"})
        if self.raw_body is not None:
            return 200, self.raw_body
        if self.mutate is not None:
            payload = self.mutate(payload)
        return 200, _json(payload)


@dataclass
class RerankServer:
    """A ``/rerank`` API: a document holding ``favourite`` scores 1.0, others less; records every body.

    ``delay_s``, ``fail_status``, ``raw_body`` and ``trickle_s`` work as for ``FakeServer``.
    """

    favourite: str = "pads"
    delay_s: float = 0.0
    trickle_s: float = 0.0
    hangups: int = 0
    fail_status: int | None = None
    raw_body: bytes | None = None
    bodies: list[Any] = field(default_factory=list)
    url: str = ""

    def answer(self, method: str, path: str, body: Any, headers: dict[str, str]) -> tuple[int, bytes]:
        if method != "POST" or path != "/v1/rerank":
            return 404, b"{}"
        self.bodies.append(body)
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.fail_status is not None:
            return self.fail_status, _json({"error": {"message": "model not loaded"}})
        if self.raw_body is not None:
            return 200, self.raw_body
        results = [
            {"index": i, "relevance_score": 1.0 if self.favourite in doc else -0.5 - i / 100}
            for i, doc in enumerate(body["documents"])
        ]
        results.sort(key=lambda r: -r["relevance_score"])  # servers answer best first
        return 200, _json({"model": body.get("model", ""), "results": results})


def _json(payload: Any) -> bytes:
    return json.dumps(payload).encode("utf-8")  # allow_nan: a test may send NaN on purpose


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        self._respond("GET")

    def do_POST(self) -> None:
        self._respond("POST")

    def _respond(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        headers = {key.lower(): value for key, value in self.headers.items()}
        status, content = self.server.fake.answer(method, self.path, body, headers)
        if self.server.fake.trickle_s:
            if not trickle(self, status, content, self.server.fake.trickle_s):
                self.server.fake.hangups += 1
            return
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


def trickle(handler: BaseHTTPRequestHandler, status: int, content: bytes, every_s: float) -> bool:
    """Send a complete HTTP answer one byte every ``every_s`` seconds; False when the client hung up."""
    head = (
        f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\nContent-Length: {len(content)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode("ascii")
    # The server closes the connection after the answer and says so: a client that reused it for its
    # next request would race the close ("Server disconnected without sending a response").
    handler.close_connection = True
    try:
        for byte in head + content:
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
            time.sleep(every_s)
    except OSError:
        return False  # the client gave up: what a deadline is for
    return True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, fake: FakeServer | RerankServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake


def serve(fake: Any, base_path: str) -> Iterator[Any]:
    server = _Server(fake)
    host, port = server.server_address[:2]
    fake.url = f"http://{host}:{port}{base_path}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
