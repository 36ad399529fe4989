"""The embedder used when none is configured: recall runs on BM25 alone."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from robotmem.embedders.base import Vector
from robotmem.errors import EmbeddingError

NULL_STATUS = "no embedder configured (embed_backend=none)"


class NullEmbedder:
    """Never available; ``embed_*`` raise ``EmbeddingError``. ``dim`` is 0 and ``model_id`` is ``none``."""

    @property
    def model_id(self) -> str:
        """``none``."""
        return "none"

    @property
    def dim(self) -> int:
        """0: there are no vectors."""
        return 0

    @property
    def available(self) -> bool:
        """Always False."""
        return False

    @property
    def status(self) -> str:
        """Says that no embedder is configured."""
        return NULL_STATUS

    def embed_one(self, text: str, *, is_query: bool = False) -> Vector:
        """Never returns; raises ``EmbeddingError``."""
        raise EmbeddingError(self._message())

    def embed_batch(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        """Never returns; raises ``EmbeddingError``."""
        raise EmbeddingError(self._message())

    def close(self) -> None:
        """Nothing to release."""

    @staticmethod
    def _message() -> str:
        return f"{NULL_STATUS}; set ROBOTMEM_EMBED_BACKEND (e.g. onnx, ollama, openai) for vector search"
