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

from robotmem.records import Memory, ParamValue, ViewScope
from robotmem.store.postgres.memories import FRAME, Memories, object_text
from robotmem.store.shared.browse import SharedBrowse, scope_predicate, success_of
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

    _FRAME = FRAME
    _SIGHTING = _SIGHTING
    _OBJECT_ID = object_text("id")
    _OBJECT_LABEL = object_text("label")
    # The stored text keeps numbers as written (jsonb would print 1e2 as 100).
    _POSITION = "(m.context_text::json -> 'spatial' -> 'position')::text"

    def __init__(self, conn: psycopg.Connection) -> None:
        self._conn: psycopg.Connection = conn

    def _fetch(self, ids: Sequence[int]) -> dict[int, Memory]:
        return Memories(self._conn).fetch(ids)

    def _list_at(self, key: str) -> tuple[str, str, dict[str, Any]]:
        return (
            "jsonb_typeof(m.context -> 'spatial' -> %(key)s::text) = 'array'",
            "(m.context_text::json -> 'spatial' -> %(key)s::text)::text",
            {"key": key},
        )

    def position_frames(self) -> list[str]:
        # The distinct frames read from the index by frame and time, one seek each (a loose index scan).
        rows = self._conn.execute(
            "WITH RECURSIVE f AS ((SELECT frame FROM memory_positions ORDER BY frame LIMIT 1) UNION ALL "
            "SELECT (SELECT p.frame FROM memory_positions p WHERE p.frame > f.frame ORDER BY p.frame LIMIT 1) "
            'FROM f WHERE f.frame IS NOT NULL) SELECT frame FROM f WHERE frame IS NOT NULL ORDER BY frame COLLATE "C"'
        )
        return [str(frame) for (frame,) in rows]

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
