"""Read-only queries behind the web UI: totals, filtered listings, sessions, collections, failures.

Every function takes an open connection (inside the caller's read snapshot), uses named parameters
only, and returns records or plain rows; serialization happens in the service.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from robotmem.records import Memory, MemoryQuery, SessionRow
from robotmem.store.protocol import CollectionRow
from robotmem.store.shared.rows import row_to_session
from robotmem.store.sqlite.memories import Memories

# Categories that hold lessons drawn from a failure.
FAILURE_CATEGORIES = ("root_cause", "postmortem", "gotcha")

# A memory whose stored context says the task failed, or that carries the failure tag or a failure category.
_FAILURE_PREDICATE = (
    "(json_type(m.context, '$.task.success') = 'false' "
    "OR EXISTS (SELECT 1 FROM memory_tags t WHERE t.memory_id = m.id AND t.tag = 'failure') "
    "OR m.category IN ('root_cause', 'postmortem', 'gotcha'))"
)

_SESSION_SELECT = (
    "SELECT s.id, s.collection, s.context, s.status, s.created_at, s.ended_at, o.outcome_score, s.summary, "
    "(SELECT COUNT(*) FROM memories m WHERE m.session_id = s.id AND m.status != 'invalidated') AS memory_count, "
    "(SELECT COUNT(*) FROM memories m WHERE m.session_id = s.id AND m.status != 'invalidated' "
    " AND json_type(m.context, '$.task.success') = 'true') AS successes, "
    "(SELECT COUNT(*) FROM memories m WHERE m.session_id = s.id AND m.status != 'invalidated' "
    " AND json_type(m.context, '$.task.success') = 'false') AS failures "
    "FROM sessions s LEFT JOIN session_outcomes o ON o.session_id = s.id"
)


def memory_predicate(query: MemoryQuery) -> tuple[str, dict[str, Any]]:
    """Return the SQL predicate over ``memories m`` and its parameters for ``query``."""
    parts = ["1 = 1"]
    params: dict[str, Any] = {}
    equal = {
        "m.collection": query.collection,
        "m.type": query.type,
        "m.status": query.status,
        "m.category": query.category,
        "m.perception_type": query.perception_type,
        "m.session_id": query.session_id,
    }
    for number, (column, value) in enumerate(equal.items()):
        if value is not None:
            parts.append(f"{column} = :eq{number}")
            params[f"eq{number}"] = value
    bounds = (
        ("m.confidence >=", "min_confidence", query.min_confidence),
        ("m.confidence <=", "max_confidence", query.max_confidence),
        ("m.created_at >=", "since", query.since),
        ("m.created_at <", "until", query.until),
    )
    for comparison, name, bound in bounds:
        if bound is not None:
            parts.append(f"{comparison} :{name}")
            params[name] = bound
    return " AND ".join(parts), params


def list_memories(
    conn: sqlite3.Connection, query: MemoryQuery, limit: int, offset: int
) -> tuple[list[Memory], int]:
    """Return one page of memories passing ``query`` (time order) and how many pass in all."""
    where, params = memory_predicate(query)
    total = int(conn.execute(f"SELECT COUNT(*) FROM memories m WHERE {where}", params).fetchone()[0])
    order = "DESC" if query.newest_first else "ASC"
    ids = [
        int(row[0])
        for row in conn.execute(
            f"SELECT m.id FROM memories m WHERE {where} ORDER BY m.created_at {order}, m.id {order} "
            "LIMIT :page_limit OFFSET :page_offset",
            {**params, "page_limit": limit, "page_offset": offset},
        )
    ]
    found = Memories(conn).fetch(ids)
    return [found[memory_id] for memory_id in ids if memory_id in found], total


def totals(conn: sqlite3.Connection, collection: str | None, since: str) -> dict[str, Any]:
    """Return counts for the dashboard: by status, by type (active), created since ``since``, sessions."""
    scope = "(:collection IS NULL OR collection = :collection)"
    bound = {"collection": collection, "since": since}
    by_status = {
        str(status): int(count)
        for status, count in conn.execute(
            f"SELECT status, COUNT(*) FROM memories WHERE {scope} GROUP BY status", bound
        )
    }
    by_type = {
        str(kind): int(count)
        for kind, count in conn.execute(
            f"SELECT type, COUNT(*) FROM memories WHERE {scope} AND status = 'active' GROUP BY type", bound
        )
    }
    recent = conn.execute(
        f"SELECT COUNT(*) FROM memories WHERE {scope} AND created_at >= :since", bound
    ).fetchone()[0]
    session_counts = {
        str(status): int(count)
        for status, count in conn.execute(
            f"SELECT status, COUNT(*) FROM sessions WHERE {scope} GROUP BY status", bound
        )
    }
    return {
        "by_status": by_status,
        "by_type": by_type,
        "created_since": int(recent),
        "sessions": session_counts,
    }


def category_counts(conn: sqlite3.Connection, collection: str | None) -> list[tuple[str, int]]:
    """Return ``(category, active count)`` pairs, largest first."""
    rows = conn.execute(
        "SELECT category, COUNT(*) AS n FROM memories WHERE status = 'active' "
        "AND (:collection IS NULL OR collection = :collection) GROUP BY category ORDER BY n DESC, category",
        {"collection": collection},
    )
    return [(str(category), int(count)) for category, count in rows]


def collection_rows(conn: sqlite3.Connection) -> list[tuple[str, int, int, int, str | None]]:
    """Return ``(collection, memories, active, sessions, latest activity)`` of every collection, by name."""
    rows = conn.execute(
        "SELECT name, SUM(total), SUM(active), SUM(sessions), MAX(last_at) FROM ("
        " SELECT collection AS name, COUNT(*) AS total, SUM(status = 'active') AS active, 0 AS sessions, "
        " MAX(created_at) AS last_at FROM memories GROUP BY collection"
        " UNION ALL"
        " SELECT collection, 0, 0, COUNT(*), MAX(created_at) FROM sessions GROUP BY collection"
        ") GROUP BY name ORDER BY name"
    )
    return [
        (str(name), int(total or 0), int(active or 0), int(session_count or 0), last_at)
        for name, total, active, session_count, last_at in rows
    ]


def _session_rows(
    conn: sqlite3.Connection, where: str, params: dict[str, Any], tail: str
) -> list[SessionRow]:
    rows = conn.execute(f"{_SESSION_SELECT} WHERE {where} {tail}", params)
    return [SessionRow(row_to_session(row), int(row[8]), int(row[9]), int(row[10])) for row in rows]


def list_sessions(
    conn: sqlite3.Connection,
    collection: str | None,
    status: str | None,
    limit: int,
    offset: int,
    newest_first: bool = True,
) -> tuple[list[SessionRow], int]:
    """Return one page of sessions with counts (time order) and how many match in all."""
    where = "(:collection IS NULL OR s.collection = :collection) AND (:status IS NULL OR s.status = :status)"
    params: dict[str, Any] = {"collection": collection, "status": status}
    total = int(conn.execute(f"SELECT COUNT(*) FROM sessions s WHERE {where}", params).fetchone()[0])
    order = "DESC" if newest_first else "ASC"
    page = _session_rows(
        conn,
        where,
        {**params, "page_limit": limit, "page_offset": offset},
        f"ORDER BY s.created_at {order}, s.id {order} LIMIT :page_limit OFFSET :page_offset",
    )
    return page, total


def session_row_by_id(conn: sqlite3.Connection, session_id: str) -> SessionRow | None:
    """Return the session with its counts, or None when there is no such session."""
    found = _session_rows(conn, "s.id = :id", {"id": session_id}, "")
    return found[0] if found else None


def session_memory_ids(conn: sqlite3.Connection, session_id: str) -> list[int]:
    """Return the ids of every memory of the session (any status) in time order."""
    rows = conn.execute(
        "SELECT id FROM memories WHERE session_id = :id ORDER BY created_at, id", {"id": session_id}
    )
    return [int(row[0]) for row in rows]


def failed_sessions(
    conn: sqlite3.Connection, collection: str | None, max_outcome: float, limit: int
) -> list[SessionRow]:
    """Return ended sessions with ``outcome_score < max_outcome`` or a failed task, newest first."""
    where = (
        "(:collection IS NULL OR s.collection = :collection) AND s.status = 'ended' AND "
        "(o.outcome_score < :max_outcome OR EXISTS (SELECT 1 FROM memories m WHERE m.session_id = s.id "
        " AND m.status != 'invalidated' AND json_type(m.context, '$.task.success') = 'false'))"
    )
    return _session_rows(
        conn,
        where,
        {"collection": collection, "max_outcome": max_outcome, "limit": limit},
        "ORDER BY s.created_at DESC, s.id DESC LIMIT :limit",
    )


def failure_memory_ids(conn: sqlite3.Connection, collection: str | None, limit: int) -> list[int]:
    """Return active memories that record a failure or a lesson from one, newest first."""
    rows = conn.execute(
        "SELECT m.id FROM memories m WHERE m.status = 'active' "
        f"AND (:collection IS NULL OR m.collection = :collection) AND {_FAILURE_PREDICATE} "
        "ORDER BY m.created_at DESC, m.id DESC LIMIT :limit",
        {"collection": collection, "limit": limit},
    )
    return [int(row[0]) for row in rows]


def spatial_fields(conn: sqlite3.Connection, collection: str | None) -> list[str]:
    """Return the ``spatial.*`` keys whose values are coordinate lists in active memories."""
    rows = conn.execute(
        "SELECT DISTINCT j.key FROM memories m, json_each(m.context, '$.spatial') AS j "
        "WHERE m.status = 'active' AND json_type(m.context, '$.spatial') = 'object' "
        "AND (:collection IS NULL OR m.collection = :collection) AND j.type = 'array' ORDER BY j.key",
        {"collection": collection},
    )
    return [f"spatial.{row[0]}" for row in rows]


def spatial_points(
    conn: sqlite3.Connection, key: str, collection: str | None, limit: int
) -> list[tuple[int, str, list[Any], Any]]:
    """Return ``(id, content, coordinates, task.success)`` for active memories with ``spatial.<key>`` as a list."""
    path = "$.spatial." + json.dumps(key, ensure_ascii=False)
    rows = conn.execute(
        "SELECT m.id, m.content, json_extract(m.context, :path), json_extract(m.context, '$.task.success'), "
        "json_type(m.context, '$.task.success') FROM memories m "
        "WHERE m.status = 'active' AND json_type(m.context, :path) = 'array' "
        "AND (:collection IS NULL OR m.collection = :collection) ORDER BY m.id DESC LIMIT :limit",
        {"path": path, "collection": collection, "limit": limit},
    )
    points: list[tuple[int, str, list[Any], Any]] = []
    for memory_id, content, raw, success, success_type in rows:
        coordinates = json.loads(raw)
        flag = None if success_type not in ("true", "false") else bool(success)
        points.append((int(memory_id), str(content), coordinates, flag))
    return points


class Browse:
    """``BrowseQueries`` on SQLite."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def list_memories(self, query: MemoryQuery, limit: int, offset: int) -> tuple[list[Memory], int]:
        return list_memories(self._conn, query, limit, offset)

    def totals(self, collection: str | None, since: str) -> dict[str, Any]:
        return totals(self._conn, collection, since)

    def category_counts(self, collection: str | None) -> list[tuple[str, int]]:
        return category_counts(self._conn, collection)

    def collection_rows(self) -> list[CollectionRow]:
        return collection_rows(self._conn)

    def list_sessions(
        self, collection: str | None, status: str | None, limit: int, offset: int, newest_first: bool = True
    ) -> tuple[list[SessionRow], int]:
        return list_sessions(self._conn, collection, status, limit, offset, newest_first)

    def session_row(self, session_id: str) -> SessionRow | None:
        return session_row_by_id(self._conn, session_id)

    def session_memory_ids(self, session_id: str) -> list[int]:
        return session_memory_ids(self._conn, session_id)

    def failed_sessions(self, collection: str | None, max_outcome: float, limit: int) -> list[SessionRow]:
        return failed_sessions(self._conn, collection, max_outcome, limit)

    def failure_memory_ids(self, collection: str | None, limit: int) -> list[int]:
        return failure_memory_ids(self._conn, collection, limit)

    def spatial_fields(self, collection: str | None) -> list[str]:
        return spatial_fields(self._conn, collection)

    def spatial_points(
        self, key: str, collection: str | None, limit: int
    ) -> list[tuple[int, str, list[Any], Any]]:
        return spatial_points(self._conn, key, collection, limit)
