"""A deterministic feature-hashing embedder for tests: no meaning, no model, no network."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from robotmem.embedders.base import Vector, normalize_rows

_TOKEN = re.compile(r"\w+", re.UNICODE)
_TOKEN_WEIGHT = 1.0
_TRIGRAM_WEIGHT = 0.5


class HashingEmbedder:
    """Hashes word tokens and character trigrams into ``dim`` buckets (blake2b, signed), then L2-normalises.

    Identical texts get identical vectors on every machine and Python run, and texts that share
    words or word pieces get a higher cosine than unrelated ones. A text without word characters
    maps to the zero vector. ``is_query`` is ignored.
    """

    def __init__(self, dim: int = 256) -> None:
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        self._dim = dim

    @property
    def model_id(self) -> str:
        """``hash-<dim>``."""
        return f"hash-{self._dim}"

    @property
    def dim(self) -> int:
        """The vector length given to the constructor."""
        return self._dim

    @property
    def available(self) -> bool:
        """Always True."""
        return True

    @property
    def status(self) -> str:
        """One line naming the embedder."""
        return f"{self.model_id}: feature hashing, deterministic, no semantic meaning (for tests)"

    def embed_one(self, text: str, *, is_query: bool = False) -> Vector:
        """Return the unit-length hashed vector of ``text`` (all zeros when it has no word characters)."""
        vector: Vector = self.embed_batch([text])[0]
        return vector

    def embed_batch(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        """Return one hashed row per text, as a ``(len(texts), dim)`` float32 matrix; raises nothing."""
        if isinstance(texts, str):
            raise TypeError("embed_batch takes a sequence of texts, not a single str; use embed_one")
        matrix = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in _features(text):
                bucket, sign = self._slot(feature)
                matrix[row, bucket] += sign * weight
        return normalize_rows(matrix)

    def close(self) -> None:
        """Nothing to release."""

    def _slot(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        sign = 1.0 if value >> 63 == 0 else -1.0
        return value % self._dim, sign


def _features(text: str) -> list[tuple[str, float]]:
    features: list[tuple[str, float]] = []
    for token in _TOKEN.findall(text.lower()):
        features.append((f"w:{token}", _TOKEN_WEIGHT))
        padded = f"#{token}#"
        for start in range(len(padded) - 2):
            features.append((f"c:{padded[start : start + 3]}", _TRIGRAM_WEIGHT))
    return features
