"""Duplicate detection on learn: exact text, then word Jaccard, then embedding cosine (pure functions).

Texts that differ in any number (another force, episode, distance) or in polarity (success or failure,
safe or unsafe, open or closed, allowed or forbidden, 允许 or 禁止: ``polarity.opposed``) record different
experiences and are never duplicates, whatever their similarity: on the evaluation set, "Episode 12 …
success" and "… failed" share 80% of their words and reach cosine 0.99 under multilingual-e5-small.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from robotmem.polarity import opposed, polarity
from robotmem.text import jaccard, numbers, word_set

# Cosine above which two texts are the same statement, per model. Under multilingual-e5-small,
# distinct robot memories reach 0.997 and rephrasings 0.95-0.995 (docs/embedders.md): no threshold
# separates them, so cosine only catches near-verbatim repeats and the guards below do the rest.
COSINE_THRESHOLDS = {"multilingual-e5-small-q4": 0.998}
DEFAULT_COSINE_THRESHOLD = 0.95
# Stored texts that may share every number of a new one, checked one by one before the ranked dedup search
# runs; with more of them, the search runs unscreened.
SCREEN_LIMIT = 100


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


def same_experience(left: str, right: str) -> bool:
    """Return True unless the texts differ in a number or in polarity (then they never merge).

    Polarity is ``polarity.opposed``: a decisive word (outcome, negation, antonym, direction, on/off state)
    differs, or one text negates a word of the other with a prefix ("unsafe" against "safe").
    """
    return same_numbers(left, right) and not opposed(polarity(left), polarity(right))


def same_experience_as(text: str) -> Callable[[str], bool]:
    """Return a test of ``same_experience(text, other)`` that reads ``text`` once, for many others."""
    text_numbers, text_polarity = numbers(text), polarity(text)
    return lambda other: numbers(other) == text_numbers and not opposed(text_polarity, polarity(other))


def find_jaccard_duplicate(
    text: str, candidates: Iterable[tuple[int, str]], threshold: float
) -> Duplicate | None:
    """Return the most similar candidate with word Jaccard ≥ ``threshold`` describing the same experience."""
    words = word_set(text)
    same = same_experience_as(text)
    best: Duplicate | None = None
    for memory_id, content in candidates:
        similarity = jaccard(words, word_set(content))
        if similarity >= threshold and (best is None or similarity > best.similarity) and same(content):
            best = Duplicate("jaccard", memory_id, round(similarity, 4))
    return best


def find_cosine_duplicate(
    text: str, candidates: Iterable[tuple[int, str, float]], threshold: float
) -> Duplicate | None:
    """Return the first ``(id, content, cosine)`` candidate at or above ``threshold`` describing the same experience."""
    same = same_experience_as(text)
    for memory_id, content, similarity in candidates:
        if similarity >= threshold and same(content):
            return Duplicate("cosine", memory_id, round(float(similarity), 4))
    return None
