"""A cross-encoder reranker behind an HTTP endpoint: the ``/rerank`` API of OpenAI-compatible servers.

llama.cpp's ``llama-server --reranking``, vLLM, LocalAI and Jina-style services answer
``POST {rerank_url}/rerank`` with ``{"model", "query", "documents", "top_n"}`` by
``{"results": [{"index": i, "relevance_score": s}, ...]}``. Recall sends the query and the texts of its
best candidates and orders them by those scores (``service/recall/rerank.py``). Failures count in a
``Cooldown`` like the HTTP embedders': while it runs, ``available`` is False and recall keeps its own
order without touching the network. ``rerank_timeout_s`` bounds the whole request, however slowly
the server answers (``deadline.DeadlineClient``). Ollama serves no rerank endpoint, so it cannot be a reranker
(docs/embedders.md, "Reranking").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import httpx

from robotmem.embedders.cooldown import Cooldown
from robotmem.embedders.deadline import DeadlineClient
from robotmem.embedders.remote import body_excerpt, decode_json
from robotmem.errors import EmbeddingError, ValidationError


class HttpReranker:
    """Scores documents against a query with a cross-encoder served over HTTP."""

    def __init__(
        self,
        url: str,
        *,
        model: str = "",
        timeout_s: float = 2.0,
        api_key: str = "",
        cooldown: Cooldown | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValidationError(f"rerank_url must start with http:// or https://, got {url!r}")
        if not timeout_s > 0 or math.isinf(timeout_s):
            raise ValidationError(f"rerank_timeout_s must be a positive number of seconds, got {timeout_s!r}")
        if not api_key.isascii():
            raise ValidationError(
                "rerank_api_key: holds characters other than ASCII, which an HTTP header cannot carry"
            )
        self.url = url.rstrip("/") + "/rerank"
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout_s = timeout_s
        self._client = DeadlineClient(
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 5.0)), headers=headers, trust_env=True
        )
        self.cooldown = cooldown or Cooldown()

    @property
    def available(self) -> bool:
        """False while a failure's back-off runs."""
        return self.cooldown.ready

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        """Return one relevance score per document (higher is more relevant).

        Raises ``EmbeddingError`` when the server cannot be reached, times out, answers with an error
        status or with a body that does not score every document once; each failure starts the back-off.
        """
        if not documents:
            return []
        if not self.available:
            raise EmbeddingError(
                f"reranker at {self.url} is cooling down for {self.cooldown.remaining_s:.0f} s after: "
                f"{self.cooldown.last_error}"
            )
        try:
            scores = self._request(query, documents)
        except EmbeddingError as exc:
            self.cooldown.record_failure(str(exc))
            raise
        self.cooldown.record_success()
        return scores

    def _request(self, query: str, documents: Sequence[str]) -> list[float]:
        body: dict[str, Any] = {"query": query, "documents": list(documents), "top_n": len(documents)}
        if self.model:
            body["model"] = self.model
        try:
            response = self._client.request("POST", self.url, within_s=self._timeout_s, json=body)
        except httpx.TimeoutException:
            raise EmbeddingError(
                f"reranker at {self.url} did not answer within {self._timeout_s:g} s"
            ) from None
        except (httpx.HTTPError, RuntimeError) as exc:
            raise EmbeddingError(f"reranker at {self.url} failed: {type(exc).__name__}: {exc}") from None
        if response.status_code >= 400:
            raise EmbeddingError(
                f"reranker at {self.url} answered HTTP {response.status_code}: {body_excerpt(response)}"
            )
        return parse_scores(decode_json(response, f"reranker at {self.url}"), len(documents))

    def close(self) -> None:
        self._client.close()


def parse_scores(payload: Any, count: int) -> list[float]:
    """Return the scores of a ``/rerank`` answer in document order; raises ``EmbeddingError`` when malformed."""
    results = payload.get("results") if isinstance(payload, dict) else None
    if not isinstance(results, list):
        raise EmbeddingError('reranker answer: expected an object with a "results" list')
    scores: dict[int, float] = {}
    for item in results:
        index = item.get("index") if isinstance(item, dict) else None
        value = item.get("relevance_score", item.get("score")) if isinstance(item, dict) else None
        if (
            not isinstance(index, int)
            or isinstance(index, bool)
            or not 0 <= index < count
            or index in scores
            or not isinstance(value, (int, float))
            or isinstance(value, bool)
            or not math.isfinite(value)
        ):
            raise EmbeddingError(
                f"reranker answer: bad result {item!r}; expected a distinct index and a finite score"
            )
        scores[index] = float(value)
    if len(scores) != count:
        raise EmbeddingError(f"reranker answer: scored {len(scores)} of {count} documents")
    return [scores[i] for i in range(count)]
