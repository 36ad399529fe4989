"""A recall's candidate source that answers a question it was already asked from its first answer.

One recall asks its source the same two questions from two steps: which context values the query names
(scoring's named-value boost and the relevance gate), and which episodes hold some memories (scoring's
episode structure around the best candidates, and the gate's neighbours around the relevant pool, which
holds them). Both answers are fixed for the recall's snapshot and scope, so ``AskedOnce`` keeps them:
named values per candidate set, episodes per member, and asks the engine only about memories no earlier
answer placed. Every other question passes through.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from robotmem.query.spatial import SpatialSort
from robotmem.store.protocol import CandidateSource, ChannelQuery, Marks, NamedValues, Ranked


class AskedOnce:
    """``source`` (a ``CandidateSource``) with its named values and episodes kept for the recall."""

    def __init__(self, source: CandidateSource) -> None:
        self._source = source
        self._named: dict[tuple[frozenset[str], float], NamedValues] = {}
        self._episode_of: dict[int, tuple[int, ...] | None] = {}  # member → its episode (None: no session)

    def ranked(self, query: ChannelQuery) -> Ranked:
        return self._source.ranked(query)

    def text_matches(self, words: Sequence[str], min_coverage: float, ids: Collection[int]) -> set[int]:
        return self._source.text_matches(words, min_coverage, ids)

    def text_coverage(self, words: Sequence[str], ids: Collection[int]) -> dict[int, float] | None:
        return self._source.text_coverage(words, ids)

    def nearest(self, spatial: SpatialSort, n: int) -> dict[int, float]:
        return self._source.nearest(spatial, n)

    def listed(self, limit: int | None, *, order: str, exclude: Collection[int] = ()) -> list[int]:
        return self._source.listed(limit, order=order, exclude=exclude)

    def marks(self, ids: Iterable[int], robot_id: str | None) -> Marks:
        return self._source.marks(ids, robot_id)

    def named_values(self, candidates: Collection[str], max_share: float) -> NamedValues:
        key = (frozenset(candidates), max_share)
        if key not in self._named:
            self._named[key] = self._source.named_values(candidates, max_share)
        return self._named[key]

    def episodes(self, ids: Iterable[int]) -> list[list[int]]:
        wanted = list(dict.fromkeys(ids))
        found = {members for m in wanted if (members := self._episode_of.get(m)) is not None}
        unplaced = [m for m in wanted if m not in self._episode_of]
        if unplaced:
            for episode in self._source.episodes(unplaced):
                members = tuple(episode)
                found.add(members)
                self._episode_of.update((m, members) for m in members)
            # The steps ask about memories the scope allows: one its answer does not list has no session.
            self._episode_of.update((m, None) for m in unplaced if m not in self._episode_of)
        return [list(members) for members in sorted(found, key=min)]
