"""Duplicate detection on learn: exact text, then word Jaccard, then embedding cosine (pure functions).

Similarity only proposes: every stage, and consolidation after it, accepts a candidate only when the two
texts are the same experience (``same_experience``): the same numbers and the same content words in the
same order (``wording.content_words``), so the texts differ at most in case, punctuation, spacing,
contractions, a plural "-s" and filler words. Any other word decides, listed or not: "Episode 12 … success"
and "… failed" share 80% of their words and reach cosine 0.99 under multilingual-e5-small, and so do
"use a large gripper" and "use a small gripper", "门是开的" and "门是关的".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from robotmem.text.tokens import jaccard, numbers, word_set
from robotmem.text.wording import content_words

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
    """Return True when the texts have the same numbers and the same content words in the same order.

    Only case, punctuation, spacing, contractions, a plural "-s" and the words of ``filler`` may differ;
    a negator, an antonym, another object or state, or reordered words keep the texts apart.
    """
    return same_numbers(left, right) and content_words(left) == content_words(right)


def same_experience_as(text: str) -> Callable[[str], bool]:
    """Return a test of ``same_experience(text, other)`` that reads ``text`` once, for many others."""
    text_numbers, text_words = numbers(text), content_words(text)
    return lambda other: numbers(other) == text_numbers and content_words(other) == text_words


def find_jaccard_duplicate(
    text: str, candidates: Iterable[tuple[int, str]], threshold: float
) -> Duplicate | None:
    """Return the candidate describing the same experience whose wording is closest (highest word Jaccard).

    ``threshold`` bounds the Jaccard of the content words (``wording.content_words``), not of every word:
    filler does not count, so "Grip the mug" repeats "Grip mug" though their word Jaccard is 0.67, and a
    short lesson is not kept apart from its repeat by an article. The same experience has the same content
    words (Jaccard 1.0), so a threshold up to 1 admits every such candidate and one above 1 turns the check
    off. ``similarity`` is the word Jaccard: how close the wording is.
    """
    if threshold > 1.0:
        return None
    words = word_set(text)
    same = same_experience_as(text)
    best: Duplicate | None = None
    for memory_id, content in candidates:
        if not same(content):
            continue
        similarity = jaccard(words, word_set(content))
        if best is None or similarity > best.similarity:
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
