"""The Embedder protocol every backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns text into L2-normalised float32 vectors.

    ``model_id`` names the model (stored with every vector so a model change is detected);
    ``dim`` is the vector length. ``available`` is False while the backend cannot run (not
    installed, server down, cooling down after failures); ``status`` says why in one line.
    ``embed_one``/``embed_batch`` raise ``EmbeddingError`` when they fail; they never retry
    for longer than the backend's timeout. ``is_query`` selects the query form for models that
    embed queries and passages differently (e5); others ignore it.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    @property
    def available(self) -> bool: ...

    @property
    def status(self) -> str: ...

    def embed_one(self, text: str, *, is_query: bool = False) -> Vector: ...

    def embed_batch(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]: ...

    def close(self) -> None: ...


def normalize_rows(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Return ``matrix`` with every row scaled to unit length (zero rows stay zero)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    result: npt.NDArray[np.float32] = (matrix / norms).astype(np.float32, copy=False)
    return result
