"""``RecallPlan``: a validated recall request, and the scope of memories it may return."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from robotmem.query.filters import All, Condition, Node
from robotmem.query.regions import Region, in_frame
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
    region: Region | None = None

    @property
    def scope(self) -> RecallScope:
        """The memories this recall may return (robot scoping is one more filter condition)."""
        return RecallScope(
            collection=self.collection,
            min_confidence=self.min_confidence,
            session_id=self.session_id,
            exclude_session=self.exclude_session,
            filter=_with_robots(self.filter, self.robots),
            region=self.region,
        )

    @property
    def frame_scope(self) -> RecallScope:
        """The scope of the memories a spatial sort measures: those whose position is in its frame."""
        scope = self.scope
        if self.spatial is None:
            return scope
        frame = in_frame(self.spatial.path, self.spatial.frame)
        return dataclasses.replace(
            scope, filter=frame if scope.filter is None else All((scope.filter, frame))
        )


def _with_robots(filter: Node | None, robots: tuple[str, ...] | None) -> Node | None:
    if robots is None:
        return filter
    condition = Condition(("robot_id",), "$in", robots)
    return condition if filter is None else All((filter, condition))
