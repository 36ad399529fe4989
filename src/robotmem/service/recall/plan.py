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
    since: str | None = None  # stored times bounding ``observed_at`` (inclusive); None: unbounded
    until: str | None = None
    # With a query, memories less relevant are left out (0: none is); None: the default floor decides only
    # whether anything at all is relevant (relevance.default_min_relevance, pipeline.relevant_pool).
    min_relevance: float | None = 0.0
    region: Region | None = None

    @property
    def scope(self) -> RecallScope:
        """The memories this recall may return (robot scoping and the time window are more filter
        conditions, so they restrict every channel before any limit)."""
        conditions: list[Node] = []
        if self.robots is not None:
            conditions.append(Condition(("robot_id",), "$in", self.robots))
        if self.since is not None:
            conditions.append(Condition(("observed_at",), "$gte", self.since))
        if self.until is not None:
            conditions.append(Condition(("observed_at",), "$lte", self.until))
        return RecallScope(
            collection=self.collection,
            min_confidence=self.min_confidence,
            session_id=self.session_id,
            exclude_session=self.exclude_session,
            filter=_joined(self.filter, conditions),
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


def _joined(filter: Node | None, conditions: list[Node]) -> Node | None:
    parts = ([] if filter is None else [filter]) + conditions
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else All(tuple(parts))
