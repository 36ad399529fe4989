"""Read-only views for dashboards and the web UI: totals, filtered listings with pagination, sessions
with their outcomes and timelines, collections, categories, failures and spatial positions.

The input models below carry the defaults and limits, so the REST schema is generated from them.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from robotmem.errors import NotFoundError, ValidationError
from robotmem.formats.results import (
    CategoriesResult,
    CollectionsResult,
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
    failures_result,
    memory_page,
    session_page,
    session_timeline,
    spatial_points_result,
    stats_result,
)
from robotmem.formats.validation import PerceptionType, parse_name, validate_input
from robotmem.records import MemoryQuery
from robotmem.service.engine import Engine
from robotmem.store.protocol import StoreTx

MAX_PAGE = 500


class _BrowseInput(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)


class CollectionInput(_BrowseInput):
    """Which collection to summarise (all collections when omitted)."""

    collection: str | None = Field(default=None, min_length=1, max_length=200, description="Collection name.")


class ListMemoriesInput(_BrowseInput):
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
    limit: int = Field(default=50, ge=1, le=MAX_PAGE, description="Page size.")
    offset: int = Field(default=0, ge=0, le=10**9, description="Memories to skip.")
    order: Literal["newest", "oldest"] = Field(default="newest", description="Time order.")


class ListSessionsInput(_BrowseInput):
    """Filters and page of the session list."""

    collection: str | None = Field(default=None, min_length=1, max_length=200, description="Collection name.")
    status: Literal["active", "ended"] | None = Field(default=None, description="active or ended.")
    limit: int = Field(default=50, ge=1, le=MAX_PAGE, description="Page size.")
    offset: int = Field(default=0, ge=0, le=10**9, description="Sessions to skip.")
    order: Literal["newest", "oldest"] = Field(default="newest", description="Time order.")


class RecentFailuresInput(_BrowseInput):
    """Failed episodes and the lessons drawn from failures."""

    collection: str | None = Field(default=None, min_length=1, max_length=200, description="Collection name.")
    limit: int = Field(default=20, ge=1, le=MAX_PAGE, description="How many of each kind.")
    max_outcome: float = Field(
        default=0.5, ge=0.0, le=1.0, description="Sessions scoring below this count as failed."
    )


class SpatialPointsInput(_BrowseInput):
    """Positions stored under one ``spatial.*`` key of the context."""

    field: str = Field(
        min_length=9,
        max_length=200,
        pattern=r"^spatial\.[^.\"\\\[\]]+$",
        description="e.g. spatial.object_position",
    )
    collection: str | None = Field(default=None, min_length=1, max_length=200, description="Collection name.")
    limit: int = Field(default=500, ge=1, le=5000, description="Most recent memories to plot.")


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


def _collection(raw: str | None) -> str | None:
    return None if raw is None else parse_name("collection", raw)


def stats(engine: Engine, collection: str | None = None) -> Stats:
    """Return dashboard totals; see ``RobotMemory.stats``."""
    args = validate_input(CollectionInput, {"collection": collection})
    target = _collection(args.collection)
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


def list_memories(
    engine: Engine,
    collection: str | None = None,
    type: str | None = None,
    status: str = "active",
    category: str | None = None,
    perception_type: str | None = None,
    session_id: str | None = None,
    min_confidence: float | None = None,
    max_confidence: float | None = None,
    since: datetime | str | None = None,
    until: datetime | str | None = None,
    limit: int = 50,
    offset: int = 0,
    order: str = "newest",
) -> MemoryPage:
    """Return one page of memories in time order; see ``RobotMemory.list_memories``."""
    args = validate_input(
        ListMemoriesInput,
        {
            "collection": collection,
            "type": type,
            "status": status,
            "category": category,
            "perception_type": perception_type,
            "session_id": session_id,
            "min_confidence": min_confidence,
            "max_confidence": max_confidence,
            "since": since,
            "until": until,
            "limit": limit,
            "offset": offset,
            "order": order,
        },
    )
    if (
        args.min_confidence is not None
        and args.max_confidence is not None
        and args.min_confidence > args.max_confidence
    ):
        raise ValidationError(
            f"min_confidence: {args.min_confidence} is above max_confidence {args.max_confidence}"
        )
    query = MemoryQuery(
        collection=_collection(args.collection),
        type=args.type,
        status=None if args.status == "any" else args.status,
        category=args.category,
        perception_type=args.perception_type,
        session_id=None if args.session_id is None else parse_name("session_id", args.session_id),
        min_confidence=args.min_confidence,
        max_confidence=args.max_confidence,
        since=_iso(args.since, "since"),
        until=_iso(args.until, "until"),
        newest_first=args.order == "newest",
    )
    page, total = engine.read(lambda tx: tx.browse.list_memories(query, args.limit, args.offset))
    return memory_page(page, total, args.limit, args.offset)


def list_sessions(
    engine: Engine,
    collection: str | None = None,
    status: str | None = None,
    limit: int = 50,
    offset: int = 0,
    order: str = "newest",
) -> SessionPage:
    """Return one page of sessions with their counts; see ``RobotMemory.list_sessions``."""
    args = validate_input(
        ListSessionsInput,
        {"collection": collection, "status": status, "limit": limit, "offset": offset, "order": order},
    )
    target = _collection(args.collection)
    page, total = engine.read(
        lambda tx: tx.browse.list_sessions(
            target, args.status, args.limit, args.offset, newest_first=args.order == "newest"
        )
    )
    return session_page(page, total, args.limit, args.offset)


def session_memories(engine: Engine, session_id: str) -> SessionTimeline:
    """Return an episode's memories of every status in time order; see ``RobotMemory.session_memories``."""
    target = parse_name("session_id", session_id)

    def work(tx: StoreTx) -> SessionTimeline:
        row = tx.browse.session_row(target)
        if row is None:
            raise NotFoundError(f"session_id {target!r}: no session with this id")
        ids = tx.browse.session_memory_ids(target)
        found = tx.memories.fetch(ids)
        return session_timeline(row, [found[memory_id] for memory_id in ids if memory_id in found])

    return engine.read(work)


def collections(engine: Engine) -> CollectionsResult:
    """Return every collection with its counts; see ``RobotMemory.collections``."""
    return collections_result(engine.read(lambda tx: tx.browse.collection_rows()))


def categories(engine: Engine, collection: str | None = None) -> CategoriesResult:
    """Return the categories of active memories, largest first; see ``RobotMemory.categories``."""
    args = validate_input(CollectionInput, {"collection": collection})
    target = _collection(args.collection)
    return categories_result(engine.read(lambda tx: tx.browse.category_counts(target)))


def recent_failures(
    engine: Engine, collection: str | None = None, limit: int = 20, max_outcome: float = 0.5
) -> FailuresResult:
    """Return failed episodes and failure lessons, newest first; see ``RobotMemory.recent_failures``."""
    args = validate_input(
        RecentFailuresInput, {"collection": collection, "limit": limit, "max_outcome": max_outcome}
    )
    target = _collection(args.collection)

    def work(tx: StoreTx) -> FailuresResult:
        failed = tx.browse.failed_sessions(target, args.max_outcome, args.limit)
        ids = tx.browse.failure_memory_ids(target, args.limit)
        found = tx.memories.fetch(ids)
        return failures_result(failed, [found[memory_id] for memory_id in ids if memory_id in found])

    return engine.read(work)


def spatial_points(
    engine: Engine, field: str, collection: str | None = None, limit: int = 500
) -> SpatialPointsResult:
    """Return the positions at a ``spatial.<key>`` field; see ``RobotMemory.spatial_points``."""
    args = validate_input(SpatialPointsInput, {"field": field, "collection": collection, "limit": limit})
    key = args.field.split(".", 1)[1]
    target = _collection(args.collection)
    rows = engine.read(lambda tx: tx.browse.spatial_points(key, target, args.limit))
    return spatial_points_result(args.field, rows)
