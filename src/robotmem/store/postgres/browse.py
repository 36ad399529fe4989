"""Read-only queries behind the web UI on PostgreSQL: the ``BrowseQueries`` of the contract.

The views whose SQL is the same in both dialects are ``SharedBrowse``'s (the episodes among them); here are
PostgreSQL's JSON operators: the test of a task's success, a session's robot and task, and the views that
read positions and parameters inside a context, answering as SQLite's (keys and names in byte order,
numbers as written).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import psycopg

from robotmem.records import MapPoint, MapSighting, Memory, ParamValue, ViewScope
from robotmem.store.postgres.memories import FRAME, Memories, object_text
from robotmem.store.shared.browse import VIEW_TIME_COLUMNS, SharedBrowse, scope_predicate, success_of
from robotmem.store.shared.checks import PYFORMAT

_SUCCESS = "(m.context -> 'task' -> 'success')"
# A memory that names an object at a position: an object sighting.
_SIGHTING = (
    "(jsonb_typeof(m.context -> 'object') = 'object' "
    "AND jsonb_typeof(m.context -> 'spatial' -> 'position') = 'array')"
)


def _text_at(*path: str) -> str:
    """SQL over the session context ``x.c``: the string or number at ``path``, as text."""
    node = "x.c -> " + " -> ".join(f"'{step}'" for step in path)
    return f"CASE WHEN jsonb_typeof({node}) IN ('string', 'number') THEN {node} #>> '{{}}' END"


class Browse(SharedBrowse):
    """``BrowseQueries`` on PostgreSQL."""

    _mark = PYFORMAT
    _SUCCEEDED = f"({_SUCCESS} = 'true'::jsonb)"
    _FAILED = f"({_SUCCESS} = 'false'::jsonb)"
    # Sessions keep their context as text: read it as jsonb once per session.
    _SESSION_JOIN = " CROSS JOIN LATERAL (SELECT s.context::jsonb AS c) x"
    _SESSION_ROBOT = (
        f"COALESCE({_text_at('robot', 'id')}, "
        "CASE WHEN jsonb_typeof(x.c -> 'robot') = 'string' THEN x.c ->> 'robot' END, "
        f"{_text_at('robot_id')}, "
        "(SELECT MIN(m.robot_id COLLATE \"C\") FROM memories m WHERE m.session_id = s.id AND m.robot_id != '')"
        ') COLLATE "C"'
    )
    _SESSION_TASK = (
        f"COALESCE({_text_at('task', 'name')}, "
        "CASE WHEN jsonb_typeof(x.c -> 'task') = 'string' THEN x.c ->> 'task' END"
        ') COLLATE "C"'
    )

    def __init__(self, conn: psycopg.Connection) -> None:
        self._conn: psycopg.Connection = conn

    def _fetch(self, ids: Sequence[int]) -> dict[int, Memory]:
        return Memories(self._conn).fetch(ids)

    def spatial_fields(self, collection: str | None) -> list[str]:
        rows = self._conn.execute(
            # Keys in byte order, as SQLite sorts them (DISTINCT needs the sort key in the select list).
            "SELECT DISTINCT j.key COLLATE \"C\" AS key FROM memories m, jsonb_each(m.context -> 'spatial') AS j "
            "WHERE m.status = 'active' AND jsonb_typeof(m.context -> 'spatial') = 'object' "
            "AND (%(collection)s::text IS NULL OR m.collection = %(collection)s) "
            "AND jsonb_typeof(j.value) = 'array' ORDER BY 1",
            {"collection": collection},
        )
        return [f"spatial.{row[0]}" for row in rows]

    def spatial_points(
        self, key: str, collection: str | None, limit: int
    ) -> list[tuple[int, str, list[Any], Any]]:
        rows = self._conn.execute(
            "SELECT m.id, m.content, (m.context_text::json -> 'spatial' -> %(key)s::text)::text, "
            f"{_SUCCESS}::text, jsonb_typeof({_SUCCESS}) FROM memories m "
            "WHERE m.status = 'active' AND jsonb_typeof(m.context -> 'spatial' -> %(key)s::text) = 'array' "
            "AND (%(collection)s::text IS NULL OR m.collection = %(collection)s) "
            "ORDER BY m.id DESC LIMIT %(limit)s",
            {"key": key, "collection": collection, "limit": limit},
        )
        return [
            (int(memory_id), str(content), json.loads(raw), None if kind != "boolean" else success == "true")
            for memory_id, content, raw, success, kind in rows
        ]

    def spatial_field_counts(self, scope: ViewScope) -> list[tuple[str, int]]:
        where, params = scope_predicate(scope, self._mark)
        rows = self._conn.execute(
            # Keys in byte order, as SQLite sorts them.
            'SELECT j.key COLLATE "C" AS key, COUNT(*) AS n FROM memories m, '
            "jsonb_each(m.context -> 'spatial') AS j "
            f"WHERE {where} AND jsonb_typeof(m.context -> 'spatial') = 'object' "
            "AND jsonb_typeof(j.value) = 'array' GROUP BY 1 ORDER BY n DESC, 1",
            params,
        )
        return [(str(key), int(count)) for key, count in rows]

    def map_frame_counts(self, key: str, scope: ViewScope) -> list[tuple[str, int]]:
        where, params = scope_predicate(scope, self._mark)
        rows = self._conn.execute(
            f"SELECT frame, COUNT(*) AS n FROM (SELECT {FRAME} AS frame FROM memories m WHERE {where} "
            f"AND (jsonb_typeof(m.context -> 'spatial' -> %(key)s::text) = 'array' OR {_SIGHTING})) x "
            "WHERE frame IS NOT NULL GROUP BY frame ORDER BY n DESC, frame",
            {**params, "key": key},
        )
        return [(str(frame), int(count)) for frame, count in rows]

    def map_points(
        self, key: str, scope: ViewScope, limit: int, frame: str | None = None
    ) -> tuple[list[MapPoint], int]:
        where, params = scope_predicate(scope, self._mark)
        params = {**params, "key": key, "limit": limit, "frame": frame}
        where += " AND jsonb_typeof(m.context -> 'spatial' -> %(key)s::text) = 'array'"
        if frame is not None:
            where += f" AND {FRAME} = %(frame)s"
        time = VIEW_TIME_COLUMNS[scope.time_field]
        total = self._count(f"SELECT COUNT(*) FROM memories m WHERE {where}", params)
        rows = self._conn.execute(
            # The stored text keeps numbers as written (jsonb would print 1e2 as 100).
            "SELECT m.id, m.type, m.content, (m.context_text::json -> 'spatial' -> %(key)s::text)::text, "
            f"{self._success_flag()}, {time}, m.session_id FROM memories m "
            f"WHERE {where} ORDER BY {time} DESC, m.id DESC LIMIT %(limit)s",
            params,
        )
        points = [
            MapPoint(
                int(i), str(kind), str(content), json.loads(raw), success_of(success), str(time), session
            )
            for i, kind, content, raw, success, time, session in rows
        ]
        return points, total

    def object_sightings(self, scope: ViewScope, frame: str, limit: int) -> tuple[list[MapSighting], int]:
        where, params = scope_predicate(scope, self._mark)
        where += f" AND {_SIGHTING} AND {FRAME} = %(frame)s"
        params = {**params, "frame": frame, "limit": limit}
        total = self._count(f"SELECT COUNT(*) FROM memories m WHERE {where}", params)
        rows = self._conn.execute(
            f"SELECT m.id, m.collection, {object_text('id')}, {object_text('label')}, "
            "(m.context_text::json -> 'spatial' -> 'position')::text, m.observed_at FROM memories m "
            f"WHERE {where} ORDER BY m.observed_at DESC, m.id DESC LIMIT %(limit)s",
            params,
        )
        sightings = [
            MapSighting(int(i), str(collection), object_id, label, json.loads(raw), str(observed))
            for i, collection, object_id, label, raw, observed in rows
        ]
        return sightings, total

    def param_field_counts(self, scope: ViewScope) -> list[tuple[str, str | None, int]]:
        where, params = scope_predicate(scope, self._mark)
        rows = self._conn.execute(
            "SELECT j.key COLLATE \"C\" AS key, CASE WHEN jsonb_typeof(j.value -> 'unit') = 'string' "
            "THEN j.value ->> 'unit' END COLLATE \"C\" AS unit, COUNT(*) AS n "
            "FROM memories m, jsonb_each(m.context -> 'params') AS j "
            f"WHERE {where} AND jsonb_typeof(m.context -> 'params') = 'object' "
            "AND (jsonb_typeof(j.value) = 'number' OR (jsonb_typeof(j.value) = 'object' "
            "AND jsonb_typeof(j.value -> 'value') = 'number')) "
            "GROUP BY 1, 2 ORDER BY n DESC, 1, 2 NULLS FIRST",
            params,
        )
        return [(str(key), None if unit is None else str(unit), int(count)) for key, unit, count in rows]

    def param_values(self, key: str, scope: ViewScope) -> list[ParamValue]:
        where, params = scope_predicate(scope, self._mark)
        rows = self._conn.execute(
            "SELECT id, value, unit, success FROM (SELECT m.id, m.context -> 'params' -> %(key)s::text AS p, "
            f"{self._success_flag()} AS success FROM memories m WHERE {where}) x, "
            "LATERAL (SELECT CASE WHEN jsonb_typeof(p) = 'number' THEN p::float8 "
            " WHEN jsonb_typeof(p) = 'object' AND jsonb_typeof(p -> 'value') = 'number' "
            " THEN (p -> 'value')::float8 END AS value, "
            " CASE WHEN jsonb_typeof(p -> 'unit') = 'string' THEN p ->> 'unit' END AS unit) v "
            "WHERE value IS NOT NULL ORDER BY id",
            {**params, "key": key},
        )
        return [
            ParamValue(int(i), float(value), unit, success_of(success)) for i, value, unit, success in rows
        ]
