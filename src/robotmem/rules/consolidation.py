"""Consolidation of a session's redundant memories, and confidence decay (pure functions)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from robotmem.rules.dedup import same_experience
from robotmem.text.tokens import jaccard, word_set

PROTECTED_CATEGORIES = ("constraint", "postmortem", "gotcha")
NON_DECAYING_CATEGORIES = ("constraint", "preference", "worldview")
MIN_CANDIDATES = 3
CONFIDENCE_KEEP = 0.95
CONFIDENCE_FLOOR = 0.01


@dataclass(frozen=True, slots=True)
class Candidate:
    """A memory that consolidation may merge."""

    id: int
    category: str
    confidence: float
    access_count: int
    created_at: str
    content: str


@dataclass(frozen=True, slots=True)
class Merge:
    """One cluster: ``representative`` stays, ``merged`` become superseded by it."""

    representative: int
    merged: tuple[int, ...]
    similarities: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class ConsolidationPlan:
    """The merges to apply and the figures end_session reports."""

    merges: tuple[Merge, ...]
    candidate_count: int

    @property
    def superseded_count(self) -> int:
        return sum(len(merge.merged) for merge in self.merges)

    @property
    def compression_ratio(self) -> float:
        """The share of candidates that remain, to 4 places (1.0 = nothing merged)."""
        remaining = self.candidate_count - self.superseded_count
        return round(remaining / self.candidate_count, 4) if self.candidate_count else 1.0

    @property
    def avg_similarity(self) -> float:
        """The mean similarity of the merged pairs, to 4 places (0.0 without a merge)."""
        pairs = [s for merge in self.merges for s in merge.similarities]
        return round(sum(pairs) / len(pairs), 4) if pairs else 0.0


def _similarity(left: Candidate, right: Candidate, words: dict[int, frozenset[str]]) -> float:
    """Word Jaccard of two candidates of the same experience, -1.0 for two experiences.

    Only the same experience merges, whatever filler makes the wordings differ ("Basically, …, of
    course"): the threshold bounds the Jaccard of the content words, 1.0 for the same experience.
    """
    if not same_experience(left.content, right.content):
        return -1.0  # another number or outcome is another experience
    return jaccard(words[left.id], words[right.id])


def plan_consolidation(candidates: Sequence[Candidate], threshold: float = 0.5) -> ConsolidationPlan:
    """Group ``candidates`` by category into clusters of one experience each (``dedup.same_experience``).

    ``threshold`` bounds the Jaccard of the content words, 1.0 for the same experience: below 1 every
    repeat merges whatever filler its wording adds, 1 or above merges nothing. Each merge reports the word
    Jaccard of its pairs (how close the wordings are).

    Clusters grow greedily in representative order; the representative is the member with the highest
    confidence, then access count, then the newest. Fewer than three candidates plan nothing.
    """
    eligible = [
        c for c in candidates if c.category not in PROTECTED_CATEGORIES and c.confidence < CONFIDENCE_KEEP
    ]
    if len(eligible) < MIN_CANDIDATES:
        return ConsolidationPlan((), len(eligible))
    words = {c.id: word_set(c.content) for c in eligible}
    by_category: dict[str, list[Candidate]] = {}
    for candidate in eligible:
        by_category.setdefault(candidate.category, []).append(candidate)
    merges: list[Merge] = []
    for group in by_category.values():
        ordered = sorted(
            group, key=lambda c: (c.confidence, c.access_count, c.created_at, c.id), reverse=True
        )
        assigned: set[int] = set()
        for seed in ordered:
            if seed.id in assigned:
                continue
            cluster = [seed]
            for other in ordered:
                if other.id in assigned or other is seed:
                    continue
                if threshold < 1.0 and all(_similarity(other, member, words) >= 0.0 for member in cluster):
                    cluster.append(other)
            if len(cluster) < 2:
                continue
            assigned.update(c.id for c in cluster)
            sims = tuple(round(_similarity(a, b, words), 4) for a, b in combinations(cluster, 2))
            merges.append(Merge(cluster[0].id, tuple(c.id for c in cluster[1:]), sims))
    return ConsolidationPlan(tuple(merges), len(eligible))


def decayed_confidence(base: float, elapsed_days: float, rate: float) -> float:
    """Return ``base`` decayed by ``rate`` per whole day elapsed (never compounding, floor 0.01).

    The value depends only on ``base`` and the elapsed time, so recomputing it at every session end
    gives the same result as computing it once.
    """
    days = math.floor(elapsed_days)
    if days <= 0 or rate <= 0:
        return base
    return min(base, round(max(CONFIDENCE_FLOOR, base * math.pow(1.0 - min(rate, 1.0), days)), 6))
