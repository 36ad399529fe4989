"""``RecallPlan``: a validated recall request, and the scope of memories it may return."""

from __future__ import annotations

from dataclasses import dataclass

from robotmem.query.filters import All, Condition, Node
from robotmem.query.spatial import SpatialSort
from robotmem.store.protocol import RecallScope


@dataclass(frozen=True, slots=True)
class RecallPlan:
    """A validated recall request."""

    query: str
    n: int
    min_confidence: float
    collection: str
    session_id: str | None = None
    exclude_session: str | None = None
    filter: Node | None = None
    spatial: SpatialSort | None = None
    include_data: bool = False
    order: str = "relevance"
    robots: tuple[str, ...] | None = None  # None: every robot's memories
    own_robot: str = ""  # whose memories the own-robot boost favours ("" = none)
    # With a query, memories less relevant are left out (0: none is; None: relevance.default_min_relevance).
    min_relevance: float | None = 0.0

    @property
    def scope(self) -> RecallScope:
        """The memories this recall may return (robot scoping is one more filter condition)."""
        return RecallScope(
            collection=self.collection,
            min_confidence=self.min_confidence,
            session_id=self.session_id,
            exclude_session=self.exclude_session,
            filter=_with_robots(self.filter, self.robots),
        )


def _with_robots(filter: Node | None, robots: tuple[str, ...] | None) -> Node | None:
    if robots is None:
        return filter
    condition = Condition(("robot_id",), "$in", robots)
    return condition if filter is None else All((filter, condition))
