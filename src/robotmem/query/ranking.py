"""Rank fusion and score normalisation (pure functions)."""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence


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


FUSION_METHODS = ("rrf", "zscore", "minmax")


def fuse_scores(
    channels: Sequence[Sequence[tuple[int, float]]], *, method: str, weights: Sequence[float] | None = None
) -> dict[int, float]:
    """Combine scored id lists (best first, higher score better) by normalised, weighted scores.

    ``method="zscore"``: each channel's scores become (s − mean) / std over the ids it returned;
    ``method="minmax"``: (s − min) / (max − min). A channel with one id, or equal scores, gives each of
    them 1.0. An id a channel did not return counts as that channel's lowest normalised score (0 for
    min-max). The weighted sums are shifted so the lowest in the pool is a small positive number (later
    steps multiply and divide scores). Returns id → score in first-seen order.
    """
    if method not in ("zscore", "minmax"):
        raise ValueError(f"method: expected zscore or minmax, got {method!r}")
    if weights is None:
        weights = [1.0] * len(channels)
    if len(weights) != len(channels):
        raise ValueError("one weight per channel is required")
    normalised: list[tuple[dict[int, float], float, float]] = []
    for channel in channels:
        values = [score for _, score in channel]
        if not values:
            normalised.append(({}, 0.0, 0.0))
            continue
        if method == "zscore":
            mean = sum(values) / len(values)
            spread = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
            scaled = {m: (s - mean) / spread if spread > 0 else 1.0 for m, s in channel}
            floor = min(scaled.values())
        else:
            low, high = min(values), max(values)
            scaled = {m: (s - low) / (high - low) if high > low else 1.0 for m, s in channel}
            floor = 0.0
        normalised.append((scaled, floor, 1.0))
    pool: dict[int, None] = {}
    for channel in channels:
        for memory_id, _ in channel:
            pool.setdefault(memory_id, None)
    fused = {
        m: sum(w * scaled.get(m, floor) for (scaled, floor, _), w in zip(normalised, weights, strict=True))
        for m in pool
    }
    if not fused:
        return {}
    low, high = min(fused.values()), max(fused.values())
    lift = 0.01 * (high - low) if high > low else 1.0
    return {m: s - low + lift for m, s in fused.items()}


def spread_to_neighbours(
    scores: Mapping[int, float],
    episodes: Sequence[Sequence[int]],
    share: float,
    span: int = 1,
    sources: Collection[int] | None = None,
) -> dict[int, float]:
    """Return ``scores`` where each memory gains ``share`` × the scores of its episode neighbours.

    ``episodes`` lists the memories of each episode in order; the neighbours of a memory are those within
    ``span`` positions of it. Only the scores of ``sources`` (default: every scored memory) are spread. A
    neighbour outside ``scores`` joins with what it gains. Gains are computed from the scores given, not
    from scores already raised.
    """
    out = dict(scores)
    if share <= 0:
        return out
    for members in episodes:
        for position, memory_id in enumerate(members):
            if memory_id not in scores or (sources is not None and memory_id not in sources):
                continue
            gain = share * scores[memory_id]
            for other in range(max(0, position - span), min(len(members), position + span + 1)):
                if other != position:
                    out[members[other]] = out.get(members[other], 0.0) + gain
    return out


def shift_along_episodes(
    scores: Mapping[int, float],
    episodes: Sequence[Sequence[int]],
    share: float,
    direction: int,
    sources: Collection[int] | None = None,
) -> dict[int, float]:
    """Return ``scores`` where every memory keeps ``1 − share`` of its score and passes ``share`` of it to
    the memory ``direction`` places later in its episode (1: the next one, -1: the previous one).

    For a query asking what came after (before) the step it describes: the described step matches the
    words, its successor (predecessor) is the answer. Only the scores of ``sources`` (default: every
    scored memory) pass on; the rest only keep their part. A receiver outside ``scores`` joins.
    """
    share = min(max(share, 0.0), 1.0)
    if share <= 0 or direction == 0:
        return dict(scores)
    out = {m: (1.0 - share) * s for m, s in scores.items()}
    for members in episodes:
        for position, memory_id in enumerate(members):
            if memory_id not in scores or (sources is not None and memory_id not in sources):
                continue
            other = position + direction
            if 0 <= other < len(members):
                receiver = members[other]
                out[receiver] = out.get(receiver, 0.0) + share * scores[memory_id]
    return out


def add_episode_scores(
    scores: Mapping[int, float], episodes: Sequence[Sequence[int]], share: float
) -> dict[int, float]:
    """Return ``scores`` where each scored memory of an episode gains ``share`` × its episode's best score."""
    out = dict(scores)
    if share <= 0:
        return out
    for members in episodes:
        best = max((scores.get(m, 0.0) for m in members), default=0.0)
        for memory_id in members:
            if memory_id in out:
                out[memory_id] += share * best
    return out


def group_in_order(members: Sequence[tuple[int, Hashable]]) -> list[list[int]]:
    """Return the ids of ``members`` (id, key) grouped by key, each group in the order given, groups in
    order of their smallest id (as ``CandidateSource.episodes`` orders sessions). An id listed twice
    counts once, under its first key."""
    groups: dict[Hashable, list[int]] = {}
    seen: set[int] = set()
    for memory_id, key in members:
        if memory_id not in seen:
            seen.add(memory_id)
            groups.setdefault(key, []).append(memory_id)
    return sorted(groups.values(), key=min)


def add_share_of_best(scores: Mapping[int, float], chosen: Collection[int], share: float) -> dict[int, float]:
    """Return ``scores`` where each scored memory of ``chosen`` gains ``share`` × the best score."""
    out = dict(scores)
    if share <= 0 or not scores:
        return out
    gain = share * max(scores.values())
    for memory_id in chosen:
        if memory_id in out:
            out[memory_id] += gain
    return out
