"""Rank fusion and score normalisation (pure functions)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def fuse_rrf(
    rankings: Sequence[Sequence[int]], *, k: int = 60, weights: Sequence[float] | None = None
) -> dict[int, float]:
    """Combine ranked id lists with weighted Reciprocal Rank Fusion.

    An id at 0-based rank r of list i gains ``weights[i] / (k + r + 1)``. Returns id → score in
    first-seen order (so equal scores keep the order in which ids were first ranked).
    """
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError("one weight per ranking is required")
    scores: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, item in enumerate(ranking):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank + 1)
    return scores


def normalize_scores(scores: Mapping[int, float]) -> dict[int, float]:
    """Return ``scores`` divided by their maximum, so the best is 1.0 (all zero stays zero)."""
    if not scores:
        return {}
    best = max(scores.values())
    if best <= 0:
        return {key: 0.0 for key in scores}
    return {key: value / best for key, value in scores.items()}
