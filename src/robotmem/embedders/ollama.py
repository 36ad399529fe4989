"""Embeddings from a local Ollama server (``POST /api/embed``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from robotmem.embedders.remote import DEFAULT_BATCH_SIZE, RemoteEmbedder, body_excerpt, decode_json
from robotmem.errors import EmbeddingError

DEFAULT_OLLAMA_MODEL = "nomic-embed-text"
DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"


class OllamaEmbedder(RemoteEmbedder):
    """Embeds text with a model served by Ollama.

    On first use it asks ``GET /api/tags`` whether the model is pulled, then sends texts in batches
    of ``batch_size`` to ``POST /api/embed`` (``{"model", "input": [...]}`` answered by
    ``{"embeddings": [[...], ...]}``). ``dim`` is the expected vector length, 0 to learn it from the
    first answer (reading ``dim`` before any embedding then sends one probe request). nomic-embed-text
    gets its ``search_query: `` / ``search_document: `` prefixes (see ``prefixes``). Failures start
    the service cooldown (60 s, 120 s, 240 s, then 300 s); see ``RemoteEmbedder``.
    """

    backend = "ollama"

    def __init__(
        self,
        url: str = DEFAULT_OLLAMA_URL,
        model: str = DEFAULT_OLLAMA_MODEL,
        timeout_s: float = 10.0,
        *,
        dim: int = 0,
        batch_size: int = DEFAULT_BATCH_SIZE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(
            base_url=url or DEFAULT_OLLAMA_URL,
            model=model or DEFAULT_OLLAMA_MODEL,
            timeout_s=timeout_s,
            dim=dim,
            batch_size=batch_size,
            clock=clock,
        )
        self._model_checked = False

    def _what(self) -> str:
        return f"Ollama at {self._base_url}"

    def _check_ready(self, deadline: float) -> None:
        if self._model_checked:
            return
        response = self._send("GET", f"{self._base_url}/api/tags", self._what(), deadline)
        if response.status_code != 200:
            raise EmbeddingError(
                f"{self._what()}: GET /api/tags failed with HTTP {response.status_code}: "
                f"{body_excerpt(response)}"
            )
        payload = decode_json(response, f"{self._what()} (GET /api/tags)")
        models = payload.get("models") if isinstance(payload, dict) else None
        if not isinstance(models, list):
            raise EmbeddingError(f"{self._what()}: GET /api/tags did not return a 'models' list")
        names = _model_names(models)
        if not _has_model(names, self._model):
            present = ", ".join(sorted(names)) or "none"
            raise EmbeddingError(
                f"{self._what()} does not have the model {self._model!r}; run `ollama pull {self._model}` "
                f"on that machine (models present: {present})"
            )
        self._model_checked = True

    def _post_batch(self, texts: list[str], deadline: float) -> Any:
        response = self._send(
            "POST",
            f"{self._base_url}/api/embed",
            self._what(),
            deadline,
            json={"model": self._model, "input": texts},
        )
        if response.status_code == 404:
            detail = body_excerpt(response)
            if "model" not in detail.lower():
                raise EmbeddingError(
                    f"{self._what()}: POST /api/embed is not there (HTTP 404: {detail}); "
                    "robotmem needs Ollama 0.3.4 or newer"
                )
            # The model was removed after the check: check again on the next attempt.
            self._model_checked = False
            raise EmbeddingError(
                f"{self._what()} does not have the model {self._model!r}; run `ollama pull {self._model}` "
                f"({detail})"
            )
        if response.status_code != 200:
            raise EmbeddingError(
                f"{self._what()}: POST /api/embed failed with HTTP {response.status_code}: "
                f"{body_excerpt(response)}"
            )
        payload = decode_json(response, f"{self._what()} (POST /api/embed)")
        if not isinstance(payload, dict) or "embeddings" not in payload:
            raise EmbeddingError(f"{self._what()}: POST /api/embed answered without an 'embeddings' field")
        return payload["embeddings"]


def _model_names(models: list[Any]) -> set[str]:
    names: set[str] = set()
    for entry in models:
        if isinstance(entry, dict):
            for key in ("name", "model"):
                value = entry.get(key)
                if isinstance(value, str):
                    names.add(value)
    return names


def _has_model(names: set[str], model: str) -> bool:
    # Ollama lists "nomic-embed-text:latest" for a model pulled as "nomic-embed-text".
    wanted = {model} if ":" in model else {model, f"{model}:latest"}
    return bool(names & wanted)
