"""Embeddings from an OpenAI-compatible API (``POST {base_url}/embeddings``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from robotmem.embedders.remote import DEFAULT_BATCH_SIZE, RemoteEmbedder, body_excerpt, decode_json
from robotmem.errors import EmbeddingError

DEFAULT_OPENAI_MODEL = "text-embedding-3-small"
DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"


class OpenAIEmbedder(RemoteEmbedder):
    """Embeds text with the OpenAI embeddings API or any server that speaks it.

    Sends ``{"model", "input": [...], "encoding_format": "float"}`` with ``Authorization: Bearer
    <api_key>`` in batches of ``batch_size`` and reads ``{"data": [{"index", "embedding"}, ...]}``,
    ordered by ``index``. ``dim`` is the expected vector length, 0 to learn it from the first answer
    (reading ``dim`` before any embedding then sends one probe request). Without an API key the
    embedder is unavailable and says so. Failures start the service cooldown; see ``RemoteEmbedder``.
    """

    backend = "openai"

    def __init__(
        self,
        base_url: str = DEFAULT_OPENAI_BASE_URL,
        api_key: str = "",
        model: str = DEFAULT_OPENAI_MODEL,
        timeout_s: float = 10.0,
        dim: int = 0,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api_key = api_key.strip()
        usable = self._api_key and self._api_key.isascii()
        headers = {"Authorization": f"Bearer {self._api_key}"} if usable else {}
        super().__init__(
            base_url=base_url or DEFAULT_OPENAI_BASE_URL,
            model=model or DEFAULT_OPENAI_MODEL,
            timeout_s=timeout_s,
            dim=dim,
            batch_size=batch_size,
            clock=clock,
            headers=headers,
        )

    def _what(self) -> str:
        return f"the embeddings API at {self._base_url}"

    def _config_error(self) -> str | None:
        if not self._api_key:
            return "no API key; set ROBOTMEM_OPENAI_API_KEY (or openai_api_key in config.toml)"
        if not self._api_key.isascii():
            return "the API key holds characters other than ASCII, which an HTTP header cannot carry"
        return None

    def _post_batch(self, texts: list[str], deadline: float) -> Any:
        response = self._send(
            "POST",
            f"{self._base_url}/embeddings",
            self._what(),
            deadline,
            json={"model": self._model, "input": texts, "encoding_format": "float"},
        )
        if response.status_code in (401, 403):
            raise EmbeddingError(
                f"{self._what()} rejected the API key (HTTP {response.status_code}: "
                f"{body_excerpt(response)}); check ROBOTMEM_OPENAI_API_KEY"
            )
        if response.status_code == 404:
            raise EmbeddingError(
                f"{self._what()}: HTTP 404 for model {self._model!r} ({body_excerpt(response)}); "
                "check ROBOTMEM_EMBED_MODEL and ROBOTMEM_OPENAI_BASE_URL"
            )
        if response.status_code != 200:
            raise EmbeddingError(
                f"{self._what()}: POST /embeddings failed with HTTP {response.status_code}: "
                f"{body_excerpt(response)}"
            )
        payload = decode_json(response, f"{self._what()} (POST /embeddings)")
        return _ordered_rows(payload, len(texts), self._what())


def _ordered_rows(payload: Any, expected: int, what: str) -> list[Any]:
    """The ``embedding`` rows of ``payload["data"]`` sorted by ``index``, which must be 0..expected-1."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        raise EmbeddingError(f"{what}: POST /embeddings answered without a 'data' list")
    if len(data) != expected:
        raise EmbeddingError(f"{what}: sent {expected} texts but got {len(data)} vectors")
    by_index: dict[int, Any] = {}
    for item in data:
        index = item.get("index") if isinstance(item, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or "embedding" not in item:
            raise EmbeddingError(f"{what}: every item of 'data' needs an integer 'index' and an 'embedding'")
        by_index[index] = item["embedding"]
    if sorted(by_index) != list(range(expected)):
        raise EmbeddingError(f"{what}: the 'index' values are not 0..{expected - 1}")
    return [by_index[index] for index in range(expected)]
