"""Web UI queries and maintenance on PostgreSQL: the ``BrowseQueries`` and ``Maintenance`` of the contract.

The queries are the SQLite engine's (``store/sqlite/browse.py``, ``maintenance.py``) in PostgreSQL's
JSON functions. The checks look at what can disagree here: the stored terms and the text, the inline
vectors and the marks, sessions, lineage, times and confidences. The server checks its own files, so
``integrity`` reports ``ok`` when every table could be read.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg

from robotmem.records import Memory, MemoryQuery, SessionRow
from robotmem.store.postgres.memories import Memories
from robotmem.store.protocol import CollectionRow
from robotmem.store.shared.rows import row_to_session

_SUCCESS = "(m.context -> 'task' -> 'success')"
_FAILED = f"({_SUCCESS} = 'false'::jsonb)"
_SUCCEEDED = f"({_SUCCESS} = 'true'::jsonb)"
_FAILURE_PREDICATE = (
    f"({_FAILED} OR EXISTS (SELECT 1 FROM memory_tags t WHERE t.memory_id = m.id AND t.tag = 'failure') "
    "OR m.category IN ('root_cause', 'postmortem', 'gotcha'))"
)
_SESSION_SELECT = (
    "SELECT s.id, s.collection, s.context, s.status, s.created_at, s.ended_at, o.outcome_score, s.summary, "
    "(SELECT COUNT(*) FROM memories m WHERE m.session_id = s.id AND m.status != 'invalidated'), "
    "(SELECT COUNT(*) FROM memories m WHERE m.session_id = s.id AND m.status != 'invalidated' "
    f" AND {_SUCCEEDED}), "
    "(SELECT COUNT(*) FROM memories m WHERE m.session_id = s.id AND m.status != 'invalidated' "
    f" AND {_FAILED}) "
    "FROM sessions s LEFT JOIN session_outcomes o ON o.session_id = s.id"
)


def memory_predicate(query: MemoryQuery) -> tuple[str, dict[str, Any]]:
    """Return the SQL predicate over ``memories m`` and its parameters for ``query``."""
    parts = ["TRUE"]
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
            parts.append(f"{column} = %(eq{number})s")
            params[f"eq{number}"] = value
    bounds = (
        ("m.confidence >=", "min_confidence", query.min_confidence),
        ("m.confidence <=", "max_confidence", query.max_confidence),
        ("m.created_at >=", "since", query.since),
        ("m.created_at <", "until", query.until),
    )
    for comparison, name, bound in bounds:
        if bound is not None:
            parts.append(f"{comparison} %({name})s")
            params[name] = bound
    return " AND ".join(parts), params


class Browse:
    """``BrowseQueries`` on PostgreSQL."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self._conn = conn

    def _one(self, sql: str, params: Any = None) -> int:
        row = self._conn.execute(sql, params).fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def list_memories(self, query: MemoryQuery, limit: int, offset: int) -> tuple[list[Memory], int]:
        where, params = memory_predicate(query)
        total = self._one(f"SELECT COUNT(*) FROM memories m WHERE {where}", params)
        order = "DESC" if query.newest_first else "ASC"
        ids = [
            int(r[0])
            for r in self._conn.execute(
                f"SELECT m.id FROM memories m WHERE {where} ORDER BY m.created_at {order}, m.id {order} "
                "LIMIT %(page_limit)s OFFSET %(page_offset)s",
                {**params, "page_limit": limit, "page_offset": offset},
            )
        ]
        found = Memories(self._conn).fetch(ids)
        return [found[m] for m in ids if m in found], total

    def totals(self, collection: str | None, since: str) -> dict[str, Any]:
        scope = "(%(collection)s::text IS NULL OR collection = %(collection)s)"
        bound = {"collection": collection, "since": since}

        def grouped(sql: str) -> dict[str, int]:
            return {str(key): int(count) for key, count in self._conn.execute(sql, bound)}

        return {
            "by_status": grouped(
                f"SELECT status, COUNT(*) FROM memories WHERE {scope} GROUP BY status ORDER BY 1"
            ),
            "by_type": grouped(
                f"SELECT type, COUNT(*) FROM memories WHERE {scope} AND status = 'active' GROUP BY type ORDER BY 1"
            ),
            "created_since": self._one(
                f"SELECT COUNT(*) FROM memories WHERE {scope} AND created_at >= %(since)s", bound
            ),
            "sessions": grouped(
                f"SELECT status, COUNT(*) FROM sessions WHERE {scope} GROUP BY status ORDER BY 1"
            ),
        }

    def category_counts(self, collection: str | None) -> list[tuple[str, int]]:
        rows = self._conn.execute(
            "SELECT category, COUNT(*) AS n FROM memories WHERE status = 'active' "
            "AND (%(c)s::text IS NULL OR collection = %(c)s) GROUP BY category ORDER BY n DESC, category",
            {"c": collection},
        )
        return [(str(category), int(count)) for category, count in rows]

    def collection_rows(self) -> list[CollectionRow]:
        rows = self._conn.execute(
            "SELECT name, SUM(total), SUM(active), SUM(sessions), MAX(last_at) FROM ("
            " SELECT collection AS name, COUNT(*) AS total, COUNT(*) FILTER (WHERE status = 'active') AS active, "
            " 0 AS sessions, MAX(created_at) AS last_at FROM memories GROUP BY collection"
            " UNION ALL"
            " SELECT collection, 0, 0, COUNT(*), MAX(created_at) FROM sessions GROUP BY collection"
            ") x GROUP BY name ORDER BY name"
        )
        return [
            (str(name), int(total or 0), int(active or 0), int(sessions or 0), last_at)
            for name, total, active, sessions, last_at in rows
        ]

    def _session_rows(self, where: str, params: dict[str, Any], tail: str) -> list[SessionRow]:
        rows = self._conn.execute(f"{_SESSION_SELECT} WHERE {where} {tail}", params)
        return [SessionRow(row_to_session(row), int(row[8]), int(row[9]), int(row[10])) for row in rows]

    def list_sessions(
        self, collection: str | None, status: str | None, limit: int, offset: int, newest_first: bool = True
    ) -> tuple[list[SessionRow], int]:
        where = (
            "(%(collection)s::text IS NULL OR s.collection = %(collection)s) "
            "AND (%(status)s::text IS NULL OR s.status = %(status)s)"
        )
        params: dict[str, Any] = {"collection": collection, "status": status}
        total = self._one(f"SELECT COUNT(*) FROM sessions s WHERE {where}", params)
        order = "DESC" if newest_first else "ASC"
        page = self._session_rows(
            where,
            {**params, "page_limit": limit, "page_offset": offset},
            f"ORDER BY s.created_at {order}, s.id {order} LIMIT %(page_limit)s OFFSET %(page_offset)s",
        )
        return page, total

    def session_row(self, session_id: str) -> SessionRow | None:
        found = self._session_rows("s.id = %(id)s", {"id": session_id}, "")
        return found[0] if found else None

    def session_memory_ids(self, session_id: str) -> list[int]:
        rows = self._conn.execute(
            "SELECT id FROM memories WHERE session_id = %s ORDER BY created_at, id", (session_id,)
        )
        return [int(r[0]) for r in rows]

    def failed_sessions(self, collection: str | None, max_outcome: float, limit: int) -> list[SessionRow]:
        where = (
            "(%(collection)s::text IS NULL OR s.collection = %(collection)s) AND s.status = 'ended' AND "
            "(o.outcome_score < %(max_outcome)s OR EXISTS (SELECT 1 FROM memories m WHERE m.session_id = s.id "
            f" AND m.status != 'invalidated' AND {_FAILED}))"
        )
        return self._session_rows(
            where,
            {"collection": collection, "max_outcome": max_outcome, "limit": limit},
            "ORDER BY s.created_at DESC, s.id DESC LIMIT %(limit)s",
        )

    def failure_memory_ids(self, collection: str | None, limit: int) -> list[int]:
        rows = self._conn.execute(
            "SELECT m.id FROM memories m WHERE m.status = 'active' "
            f"AND (%(collection)s::text IS NULL OR m.collection = %(collection)s) AND {_FAILURE_PREDICATE} "
            "ORDER BY m.created_at DESC, m.id DESC LIMIT %(limit)s",
            {"collection": collection, "limit": limit},
        )
        return [int(r[0]) for r in rows]

    def spatial_fields(self, collection: str | None) -> list[str]:
        rows = self._conn.execute(
            # Keys in byte order, as SQLite sorts them (DISTINCT needs the sort key in the select list).
            "SELECT DISTINCT j.key COLLATE \"C\" AS key FROM memories m, jsonb_each(m.context -> 'spatial') AS j "
            "WHERE m.status = 'active' AND jsonb_typeof(m.context -> 'spatial') = 'object' "
            "AND (%(c)s::text IS NULL OR m.collection = %(c)s) AND jsonb_typeof(j.value) = 'array' "
            "ORDER BY 1",
            {"c": collection},
        )
        return [f"spatial.{r[0]}" for r in rows]

    def spatial_points(
        self, key: str, collection: str | None, limit: int
    ) -> list[tuple[int, str, list[Any], Any]]:
        point = "(m.context -> 'spatial' -> %(key)s::text)"
        rows = self._conn.execute(
            f"SELECT m.id, m.content, (m.context_text::json -> 'spatial' -> %(key)s::text)::text, "
            f"{_SUCCESS}::text, jsonb_typeof({_SUCCESS}) FROM memories m "
            f"WHERE m.status = 'active' AND jsonb_typeof({point}) = 'array' "
            "AND (%(c)s::text IS NULL OR m.collection = %(c)s) ORDER BY m.id DESC LIMIT %(limit)s",
            {"key": key, "c": collection, "limit": limit},
        )
        points: list[tuple[int, str, list[Any], Any]] = []
        for memory_id, content, raw, success, success_type in rows:
            flag = None if success_type != "boolean" else success == "true"
            points.append((int(memory_id), str(content), json.loads(raw), flag))
        return points
