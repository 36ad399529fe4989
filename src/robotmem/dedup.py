"""Duplicate detection on learn: exact text, then word Jaccard, then embedding cosine (pure functions).

Texts that differ in any number record different experiences (another force, episode, distance) and
are never duplicates, whatever their similarity.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from robotmem.text import jaccard, numbers, word_set

# Cosine above which two texts are the same statement, per model. Distinct robot sentences reach
# 0.93 under multilingual-e5-small (docs/embedders.md), so its threshold sits well above that.
COSINE_THRESHOLDS = {"multilingual-e5-small-q4": 0.975}
DEFAULT_COSINE_THRESHOLD = 0.95


@dataclass(frozen=True, slots=True)
class Duplicate:
    """An existing memory that a new text repeats."""

    method: str  # "exact" | "jaccard" | "cosine"
    existing_id: int
    similarity: float


def cosine_threshold(model_id: str, configured: float) -> float:
    """Return the configured threshold if set (> 0), else the calibrated one for ``model_id``."""
    if configured > 0:
        return configured
    return COSINE_THRESHOLDS.get(model_id, DEFAULT_COSINE_THRESHOLD)


def same_numbers(left: str, right: str) -> bool:
    """Return True when both texts mention the same numbers in the same order."""
    return numbers(left) == numbers(right)


def find_jaccard_duplicate(
    text: str, candidates: Iterable[tuple[int, str]], threshold: float
) -> Duplicate | None:
    """Return the most similar candidate with word Jaccard ≥ ``threshold`` and the same numbers, if any."""
    words = word_set(text)
    best: Duplicate | None = None
    for memory_id, content in candidates:
        if not same_numbers(text, content):
            continue
        similarity = jaccard(words, word_set(content))
        if similarity >= threshold and (best is None or similarity > best.similarity):
            best = Duplicate("jaccard", memory_id, round(similarity, 4))
    return best


def find_cosine_duplicate(
    text: str, candidates: Iterable[tuple[int, str, float]], threshold: float
) -> Duplicate | None:
    """Return the first ``(id, content, cosine)`` candidate at or above ``threshold`` with the same numbers."""
    for memory_id, content, similarity in candidates:
        if similarity >= threshold and same_numbers(text, content):
            return Duplicate("cosine", memory_id, round(float(similarity), 4))
    return None
