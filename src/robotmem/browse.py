"""RobotMemory methods for browse (mixed into ``RobotMemory``).

Read-only views for dashboards and the web UI: totals, filtered listings with pagination, sessions
with their outcomes and timelines, collections, categories, failures and spatial positions. The
input models below carry the defaults and limits, so the REST schema is generated from them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from robotmem.errors import NotFoundError, ValidationError
from robotmem.records import Memory
from robotmem.serialize import memory_to_dict, session_to_dict
from robotmem.store import browse as browse_store
from robotmem.store import memories
from robotmem.validation import PerceptionType, parse_name, validate_input

JsonDict = dict[str, Any]
T = TypeVar("T")
MAX_PAGE = 500
_OUTCOME_KEYS = ("session_id", "created_at", "ended_at", "outcome_score", "success_rate", "memory_count")


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


def _listed(memory: Memory) -> JsonDict:
    record = memory_to_dict(memory)
    record["status"] = memory.status
    record["superseded_by"] = memory.superseded_by
    return record


def _session(row: browse_store.SessionRow) -> JsonDict:
    record = session_to_dict(row.session)
    judged = row.successes + row.failures
    record.update(
        memory_count=row.memory_count,
        successes=row.successes,
        failures=row.failures,
        success_rate=round(row.successes / judged, 6) if judged else None,
    )
    return record


def _arguments(local_names: dict[str, Any]) -> dict[str, Any]:
    """Return a method's arguments (its ``locals()`` at entry) without ``self``."""
    return {name: value for name, value in local_names.items() if name != "self"}


def _collection(raw: str | None) -> str | None:
    return None if raw is None else parse_name("collection", raw)


class BrowseMixin:
    """Methods that ``RobotMemory`` gains for browse; they use its ``_read``/``_write`` helpers."""

    if TYPE_CHECKING:

        def _read(self, work: Callable[[sqlite3.Connection], T]) -> T: ...

        def _now(self) -> str: ...

    def stats(self, collection: str | None = None) -> JsonDict:
        """Return dashboard totals: memories by status and type, the last 24 h, sessions, categories,
        collections, per-session outcomes over time (oldest first) and the spatial fields in use.

        ``collection`` None covers every collection. Raises ``ValidationError`` for a bad name.
        """
        args = validate_input(CollectionInput, {"collection": collection})
        target = _collection(args.collection)
        since = _iso(datetime.fromisoformat(self._now()) - timedelta(hours=24))
        assert since is not None

        def work(conn: sqlite3.Connection) -> JsonDict:
            counts = browse_store.totals(conn, target, since)
            outcomes, _ = browse_store.list_sessions(conn, target, "ended", 200, 0, newest_first=True)
            return {
                "collection": target,
                "memories": {
                    "total": sum(counts["by_status"].values()),
                    "active": counts["by_status"].get("active", 0),
                    "by_status": counts["by_status"],
                    "facts": counts["by_type"].get("fact", 0),
                    "perceptions": counts["by_type"].get("perception", 0),
                },
                "last_24h": counts["created_since"],
                "sessions": {
                    "total": sum(counts["sessions"].values()),
                    "active": counts["sessions"].get("active", 0),
                    "ended": counts["sessions"].get("ended", 0),
                },
                "categories": [
                    {"category": name, "count": n} for name, n in browse_store.category_counts(conn, target)
                ],
                "collections": browse_store.collection_rows(conn),
                "session_outcomes": [
                    {key: record[key] for key in _OUTCOME_KEYS}
                    for record in reversed([_session(row) for row in outcomes])
                ],
                "spatial_fields": browse_store.spatial_fields(conn, target),
            }

        return self._read(work)

    def list_memories(
        self,
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
    ) -> JsonDict:
        """Return ``{"memories", "total", "limit", "offset"}``: one page of memories in time order.

        ``status`` is active, superseded, invalidated or any; ``since``/``until`` bound ``created_at``
        (naive times are UTC); ``collection`` None covers every collection. Raises ``ValidationError``.
        """
        args = validate_input(ListMemoriesInput, _arguments(locals()))
        if (
            args.min_confidence is not None
            and args.max_confidence is not None
            and args.min_confidence > args.max_confidence
        ):
            raise ValidationError(
                f"min_confidence: {args.min_confidence} is above max_confidence {args.max_confidence}"
            )
        query = browse_store.MemoryQuery(
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
        page, total = self._read(
            lambda conn: browse_store.list_memories(conn, query, args.limit, args.offset)
        )
        return {
            "memories": [_listed(memory) for memory in page],
            "total": total,
            "limit": args.limit,
            "offset": args.offset,
        }

    def list_sessions(
        self,
        collection: str | None = None,
        status: str | None = None,
        limit: int = 50,
        offset: int = 0,
        order: str = "newest",
    ) -> JsonDict:
        """Return ``{"sessions", "total", "limit", "offset"}``; each session has its outcome score,
        memory count and the success rate of its judged memories. Raises ``ValidationError``."""
        args = validate_input(ListSessionsInput, _arguments(locals()))
        target = _collection(args.collection)
        page, total = self._read(
            lambda conn: browse_store.list_sessions(
                conn, target, args.status, args.limit, args.offset, newest_first=args.order == "newest"
            )
        )
        return {
            "sessions": [_session(row) for row in page],
            "total": total,
            "limit": args.limit,
            "offset": args.offset,
        }

    def session_memories(self, session_id: str) -> JsonDict:
        """Return ``{"session", "memories", "total"}``: the episode's memories of every status in time order.

        Raises ``NotFoundError`` when there is no such session.
        """
        target = parse_name("session_id", session_id)

        def work(conn: sqlite3.Connection) -> JsonDict:
            row = browse_store.session_row_by_id(conn, target)
            if row is None:
                raise NotFoundError(f"session_id {target!r}: no session with this id")
            ids = browse_store.session_memory_ids(conn, target)
            found = memories.fetch(conn, ids)
            timeline = [_listed(found[memory_id]) for memory_id in ids if memory_id in found]
            return {"session": _session(row), "memories": timeline, "total": len(timeline)}

        return self._read(work)

    def collections(self) -> JsonDict:
        """Return ``{"collections": [{"collection", "memories", "active", "sessions", "last_at"}]}``."""
        return {"collections": self._read(browse_store.collection_rows)}

    def categories(self, collection: str | None = None) -> JsonDict:
        """Return ``{"categories": [{"category", "count"}]}`` over active memories, largest first."""
        args = validate_input(CollectionInput, {"collection": collection})
        target = _collection(args.collection)
        rows = self._read(lambda conn: browse_store.category_counts(conn, target))
        return {"categories": [{"category": name, "count": n} for name, n in rows]}

    def recent_failures(
        self, collection: str | None = None, limit: int = 20, max_outcome: float = 0.5
    ) -> JsonDict:
        """Return ``{"sessions", "memories"}``: failed episodes (outcome below ``max_outcome`` or a
        failed task) and failure lessons (``task.success`` false, the failure tag, or the categories
        root_cause, postmortem and gotcha), newest first. Raises ``ValidationError``."""
        args = validate_input(RecentFailuresInput, _arguments(locals()))
        target = _collection(args.collection)

        def work(conn: sqlite3.Connection) -> JsonDict:
            failed = browse_store.failed_sessions(conn, target, args.max_outcome, args.limit)
            ids = browse_store.failure_memory_ids(conn, target, args.limit)
            found = memories.fetch(conn, ids)
            return {
                "sessions": [_session(row) for row in failed],
                "memories": [_listed(found[memory_id]) for memory_id in ids if memory_id in found],
            }

        return self._read(work)

    def spatial_points(self, field: str, collection: str | None = None, limit: int = 500) -> JsonDict:
        """Return ``{"field", "points": [{"memory_id", "content", "coordinates", "success"}]}`` for active
        memories whose context holds a list at ``field`` (``spatial.<key>``). Raises ``ValidationError``."""
        args = validate_input(SpatialPointsInput, _arguments(locals()))
        key = args.field.split(".", 1)[1]
        target = _collection(args.collection)
        rows = self._read(lambda conn: browse_store.spatial_points(conn, key, target, args.limit))
        return {
            "field": args.field,
            "points": [
                {"memory_id": memory_id, "content": content, "coordinates": coordinates, "success": success}
                for memory_id, content, coordinates, success in rows
            ],
        }
