"""Which memories are relevant to a query: the relevance gate of a recall that orders by distance.

A spatial recall with a query returns the nearest memories relevant to the query, not the nearest of all
and not only the nearest of the best text matches: every relevant memory competes on distance.
"""

from __future__ import annotations

from collections.abc import Iterable

from robotmem.query.spatial import SpatialSort
from robotmem.store.protocol import CandidateSource, ChannelQuery, StoreTx, VectorQuery
from robotmem.text.tokens import or_match

# Cosine at or above which a memory counts as relevant to a query (the vector half of the relevance gate
# of a spatial recall), per embedding model. multilingual-e5-small puts every pair of texts between 0.7
# and 0.9: on robot memories a query and its answer measured 0.85-0.89, a paraphrase 0.86, while
# nonsense queries ("zebra quantum xylophone", "asdf qwer") and unrelated ones reached at most 0.79 and
# related-but-different experiences 0.80-0.83. Models without a measured floor (the hashing test
# embedder, Ollama, OpenAI-compatible, FastEmbed) leave the gate to the text channel.
RELEVANCE_FLOORS = {"multilingual-e5-small-q4": 0.84}


class RelevanceGate:
    """Which memories are relevant to the query.

    A memory is relevant when its cosine to the query reaches the model's floor in ``RELEVANCE_FLOORS``,
    or when it contains query words — beside that vector test, words carrying ``min_coverage`` of the
    query's IDF, as the text channel asks beside vectors (a paraphrase shares only incidental words, and
    the cosine finds it; a source that cannot weigh words counts any match); without it (no embedder, or a
    model with no floor), any query word. The words are tested only on the memories asked about (the
    nearest, and the pool), never on every memory holding a query word; the vector index answers over
    every stored vector, and ``among`` keeps only the ids it is asked about.
    """

    def __init__(
        self,
        source: CandidateSource,
        tx: StoreTx,
        words: list[str],
        vector: VectorQuery | None,
        min_coverage: float,
    ) -> None:
        floor = RELEVANCE_FLOORS.get(vector.model_id) if vector is not None else None
        self._source = source
        self._words = words if or_match(words) is not None else []
        self._coverage = min_coverage if floor is not None else 0.0
        self._known: dict[int, bool] = {}
        self._matches_any: bool | None = None  # whether any memory in scope holds the words, once known
        self._similar: set[int] = set()
        if vector is not None and floor is not None:
            # Few memories clear the floor: ask for a short ranked head and widen it only while it fills.
            first = 256
            while len(similar := tx.vectors.most_similar(vector, first, floor)) >= first:
                first *= 4
            self._similar = {m for m, _ in similar}

    def heard(self, coverage: float, found: bool) -> None:
        """Learn from the recall's text channel over the same words and scope, which asked for matches
        covering ``coverage`` of the query and ``found`` some or none."""
        if found and coverage >= self._coverage:
            self._matches_any = True
        elif not found and coverage <= self._coverage:
            self._matches_any = False

    def any(self) -> bool:
        """Whether any memory the scope allows is relevant (one text match is enough to know)."""
        if self._similar:
            return True
        if self._matches_any is None:
            query = ChannelQuery(self._words, depth=1, min_coverage=self._coverage)
            self._matches_any = bool(self._words and self._source.ranked(query).text)
        return self._matches_any

    def among(self, ids: Iterable[int]) -> set[int]:
        """The relevant ones of ``ids`` (memories the recall's scope allows)."""
        wanted = list(dict.fromkeys(ids))
        unknown = [m for m in wanted if m not in self._known and m not in self._similar]
        if unknown:
            matched = (
                self._source.text_matches(self._words, self._coverage, unknown) if self._words else set()
            )
            self._known.update((m, m in matched) for m in unknown)
        return {m for m in wanted if m in self._similar or self._known.get(m, False)}


def nearest_relevant(
    source: CandidateSource, spatial: SpatialSort, n: int, relevant: RelevanceGate
) -> dict[int, float]:
    """Return id → distance of the ``n`` nearest relevant memories with the field, with every tie at the n-th."""
    if not relevant.any():
        return {}
    # Ask for the nearest of all and widen until n relevant ones are among them (or every point is): the
    # answer holds every point up to its farthest, so the n nearest relevant and their ties are in it.
    ask = max(4 * n, 64)
    while True:
        nearest = source.nearest(spatial, ask)
        kept = relevant.among(nearest)
        near = {m: d for m, d in nearest.items() if m in kept}
        if len(near) >= n or len(nearest) < ask:
            break
        ask *= 4
    if len(near) <= n:
        return near
    nth = sorted(near.values())[n - 1]
    return {m: d for m, d in near.items() if d <= nth}
