"""Read-only views for dashboards and the web UI: totals, filtered listings with pagination, episodes
with their robot, task, outcome and timelines, collections, categories, failures and spatial positions.

The input models below are the parameters of each view, declared once: the REST schema is generated from
them, ``RobotMemory``'s methods build them, and each checks itself (``OperationInput``) before the view runs.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Literal

from pydantic import Field

from robotmem.config import Settings
from robotmem.errors import NotFoundError, ValidationError
from robotmem.formats.inputs import OperationInput, Whole
from robotmem.formats.results import (
    CategoriesResult,
    CollectionsResult,
    EpisodeFacets,
    FailuresResult,
    MemoryPage,
    SessionPage,
    SessionTimeline,
    SpatialPointsResult,
    Stats,
)
from robotmem.formats.serialize import (
    categories_result,
    collections_result,
    episode_facets_result,
    failures_result,
    memory_page,
    session_page,
    session_timeline,
    spatial_points_result,
    stats_result,
)
from robotmem.formats.validation import PerceptionType, optional_name, parse_name
from robotmem.records import EpisodeQuery, MemoryQuery
from robotmem.service.engine import Engine
from robotmem.store.protocol import StoreTx

MAX_PAGE = 500
# An episode's outcome_score (or, without one, its judged memories' success rate) below this is a failure.
FAILURE_THRESHOLD = 0.5


class _CollectionInput(OperationInput):
    """A view of one collection (every collection when omitted)."""

    collection: str | None = Field(default=None, min_length=1, max_length=200, description="Collection name.")

    def _check(self, settings: Settings) -> None:
        self._check_name("collection")


class CollectionInput(_CollectionInput):
    """Which collection to summarise (all collections when omitted)."""


class CategoriesInput(_CollectionInput):
    """Which collection's categories to count (all collections when omitted)."""


class EpisodeFacetsInput(_CollectionInput):
    """Which collection's robots and tasks to count (all collections when omitted)."""


class ListMemoriesInput(OperationInput):
    """Filters and page of a memory listing (newest first unless ``order`` is ``oldest``)."""

    collection: str | None = Field(default=None, min_length=1, max_length=200, description="Collection name.")
    type: Literal["fact", "perception"] | None = Field(default=None, description="fact or perception.")
    status: Literal["active", "superseded", "invalidated", "any"] = Field(
        default="active", description="Lifecycle status; any lists every status."
    )
    category: str | None = Field(default=None, min_length=1, max_length=200, description="Category name.")
    perception_type: PerceptionType | None = Field(default=None, description="Kind of perception.")
    session_id: str | None = Field(default=None, min_length=1, max_length=200, description="Session id.")
    min_confidence: float | None = Field(default=None, ge=0.0, le=1.0, description="Lowest confidence.")
    max_confidence: float | None = Field(default=None, ge=0.0, le=1.0, description="Highest confidence.")
    since: datetime | None = Field(default=None, description="Created at or after (ISO 8601; UTC if naive).")
    until: datetime | None = Field(default=None, description="Created before (ISO 8601; UTC if naive).")
    limit: Whole = Field(default=50, ge=1, le=MAX_PAGE, description="Page size.")
    offset: Whole = Field(default=0, ge=0, le=10**9, description="Memories to skip.")
    order: Literal["newest", "oldest"] = Field(default="newest", description="Time order.")
    __slots__ = ("_query",)

    @property
    def query(self) -> MemoryQuery:
        """What the listing selects, once checked."""
        return self._query

    def _check(self, settings: Settings) -> None:
        low, high = self.min_confidence, self.max_confidence
        if low is not None and high is not None and low > high:
            raise ValidationError(f"min_confidence: {low} is above max_confidence {high}")
        self._query = MemoryQuery(
            collection=optional_name("collection", self.collection),
            type=self.type,
            status=None if self.status == "any" else self.status,
            category=self.category,
            perception_type=self.perception_type,
            session_id=optional_name("session_id", self.session_id),
            min_confidence=self.min_confidence,
            max_confidence=self.max_confidence,
            since=_iso(self.since, "since"),
            until=_iso(self.until, "until"),
            newest_first=self.order == "newest",
        )


class ListSessionsInput(_CollectionInput):
    """Filters and page of the session list."""

    status: Literal["active", "ended"] | None = Field(default=None, description="active or ended.")
    limit: Whole = Field(default=50, ge=1, le=MAX_PAGE, description="Page size.")
    offset: Whole = Field(default=0, ge=0, le=10**9, description="Sessions to skip.")
    order: Literal["newest", "oldest"] = Field(default="newest", description="Time order.")
    robot: str | None = Field(default=None, min_length=1, max_length=200, description="The session's robot.")
    task: str | None = Field(default=None, min_length=1, max_length=200, description="The session's task.")
    outcome: Literal["success", "failure", "unknown"] | None = Field(
        default=None, description="The session's outcome (docs/web.md: outcome_score, else judged memories)."
    )
    threshold: float = Field(
        default=FAILURE_THRESHOLD,
        ge=0.0,
        le=1.0,
        description="An outcome_score (or, without one, a success rate) below this is a failure.",
    )


class RecentFailuresInput(_CollectionInput):
    """Failed episodes and the lessons drawn from failures."""

    limit: Whole = Field(default=20, ge=1, le=MAX_PAGE, description="How many of each kind.")
    max_outcome: float = Field(
        default=FAILURE_THRESHOLD,
        ge=0.0,
        le=1.0,
        description="An outcome_score (or, without one, a success rate) below this is a failed episode.",
    )


class SpatialPointsInput(OperationInput):
    """Positions stored under one ``spatial.*`` key of the context."""

    field: str = Field(
        min_length=9,
        max_length=200,
        pattern=r"^spatial\.[^.\"\\\[\]]+$",
        description="e.g. spatial.object_position",
    )
    collection: str | None = Field(default=None, min_length=1, max_length=200, description="Collection name.")
    limit: Whole = Field(default=500, ge=1, le=5000, description="Most recent memories to plot.")

    def _check(self, settings: Settings) -> None:
        self._check_name("collection")


def _iso(moment: datetime | None, field: str = "time") -> str | None:
    """Return ``moment`` as the UTC text stored in ``created_at`` (naive means UTC)."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")
    except OverflowError:
        raise ValidationError(
            f"{field}: {moment.isoformat()} is outside the representable UTC range"
        ) from None


def stats(engine: Engine, args: CollectionInput) -> Stats:
    """Return dashboard totals; see ``RobotMemory.stats``."""
    target = args.collection
    since = _iso(datetime.fromisoformat(engine.now()) - timedelta(hours=24))
    assert since is not None

    def work(tx: StoreTx) -> Stats:
        outcomes, _ = tx.browse.list_sessions(target, "ended", 200, 0, newest_first=True)
        return stats_result(
            target,
            tx.browse.totals(target, since),
            tx.browse.category_counts(target),
            tx.browse.collection_rows(),
            outcomes,
            tx.browse.spatial_fields(target),
        )

    return engine.read(work)


def list_memories(engine: Engine, args: ListMemoriesInput) -> MemoryPage:
    """Return one page of memories in time order; see ``RobotMemory.list_memories``."""
    page, total = engine.read(lambda tx: tx.browse.list_memories(args.query, args.limit, args.offset))
    return memory_page(page, total, args.limit, args.offset)


def list_sessions(engine: Engine, args: ListSessionsInput) -> SessionPage:
    """Return one page of sessions with their counts; see ``RobotMemory.list_sessions``."""
    query = EpisodeQuery(
        collection=args.collection,
        status=args.status,
        robot=args.robot,
        task=args.task,
        outcome=args.outcome,
        threshold=args.threshold,
        newest_first=args.order == "newest",
    )
    page, total = engine.read(lambda tx: tx.browse.episodes(query, args.limit, args.offset))
    return session_page(page, total, args.limit, args.offset)


def session_memories(engine: Engine, session_id: str) -> SessionTimeline:
    """Return an episode's memories of every status in time order; see ``RobotMemory.session_memories``."""
    target = parse_name("session_id", session_id)

    def work(tx: StoreTx) -> SessionTimeline:
        rows, _ = tx.browse.episodes(EpisodeQuery(session_id=target), 1, 0)
        if not rows:
            raise NotFoundError(f"session_id {target!r}: no session with this id")
        ids = tx.browse.session_memory_ids(target)
        found = tx.memories.fetch(ids)
        return session_timeline(rows[0], [found[memory_id] for memory_id in ids if memory_id in found])

    return engine.read(work)


def episode_facets(engine: Engine, args: EpisodeFacetsInput) -> EpisodeFacets:
    """Return the robots and tasks of the sessions with their counts; see ``RobotMemory.episode_facets``."""
    return episode_facets_result(*engine.read(lambda tx: tx.browse.episode_facets(args.collection)))


def collections(engine: Engine) -> CollectionsResult:
    """Return every collection with its counts; see ``RobotMemory.collections``."""
    return collections_result(engine.read(lambda tx: tx.browse.collection_rows()))


def categories(engine: Engine, args: CategoriesInput) -> CategoriesResult:
    """Return the categories of active memories, largest first; see ``RobotMemory.categories``."""
    return categories_result(engine.read(lambda tx: tx.browse.category_counts(args.collection)))


def recent_failures(engine: Engine, args: RecentFailuresInput) -> FailuresResult:
    """Return failed episodes and failure lessons, newest first; see ``RobotMemory.recent_failures``."""

    def work(tx: StoreTx) -> FailuresResult:
        query = EpisodeQuery(
            collection=args.collection, status="ended", outcome="failure", threshold=args.max_outcome
        )
        failed, _ = tx.browse.episodes(query, args.limit, 0)
        ids = tx.browse.failure_memory_ids(args.collection, args.limit)
        found = tx.memories.fetch(ids)
        return failures_result(failed, [found[memory_id] for memory_id in ids if memory_id in found])

    return engine.read(work)


def spatial_points(engine: Engine, args: SpatialPointsInput) -> SpatialPointsResult:
    """Return the positions at a ``spatial.<key>`` field; see ``RobotMemory.spatial_points``."""
    key = args.field.split(".", 1)[1]
    rows = engine.read(lambda tx: tx.browse.spatial_points(key, args.collection, args.limit))
    return spatial_points_result(args.field, rows)
