"""Read-only queries behind the web UI on SQLite: the ``BrowseQueries`` of the contract.

The views whose SQL is the same in both dialects are ``SharedBrowse``'s (the episodes among them); here are
SQLite's JSON functions: the test of a task's success, a session's robot and task, and the views that read
positions and parameters inside a context (the PostgreSQL engine answers the same in its ``browse.py``).
Counts and filters run in SQL; the map's and the parameters' bins and intervals are the service's.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from robotmem.records import MapPoint, MapSighting, Memory, ParamValue, ViewScope
from robotmem.store.shared.browse import VIEW_TIME_COLUMNS, SharedBrowse, scope_predicate, success_of
from robotmem.store.shared.checks import NAMED
from robotmem.store.sqlite.memories import FRAME, Memories, text_of

_NUMBER = "('integer', 'real')"
# A memory that names an object at a position: an object sighting.
_SIGHTING = (
    "(json_type(m.context, '$.object') = 'object' AND json_type(m.context, '$.spatial.position') = 'array')"
)


def _text_at(path: str) -> str:
    """SQL over ``sessions s``: the text, integer or real at ``path`` of its context, as text."""
    return (
        f"CASE WHEN json_type(s.context, '{path}') IN ('text', 'integer', 'real') "
        f"THEN CAST(json_extract(s.context, '{path}') AS TEXT) END"
    )


def _key_path(section: str, key: str) -> str:
    return f"$.{section}." + json.dumps(key, ensure_ascii=False)


class Browse(SharedBrowse):
    """``BrowseQueries`` on SQLite."""

    _mark = NAMED
    _SUCCEEDED = "json_type(m.context, '$.task.success') = 'true'"
    _FAILED = "json_type(m.context, '$.task.success') = 'false'"
    _SESSION_ROBOT = (
        f"COALESCE({_text_at('$.robot.id')}, "
        "CASE WHEN json_type(s.context, '$.robot') = 'text' THEN json_extract(s.context, '$.robot') END, "
        f"{_text_at('$.robot_id')}, "
        "(SELECT MIN(m.robot_id) FROM memories m WHERE m.session_id = s.id AND m.robot_id != ''))"
    )
    _SESSION_TASK = (
        f"COALESCE({_text_at('$.task.name')}, "
        "CASE WHEN json_type(s.context, '$.task') = 'text' THEN json_extract(s.context, '$.task') END)"
    )

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn: sqlite3.Connection = conn

    def _fetch(self, ids: Sequence[int]) -> dict[int, Memory]:
        return Memories(self._conn).fetch(ids)

    def spatial_fields(self, collection: str | None) -> list[str]:
        rows = self._conn.execute(
            "SELECT DISTINCT j.key FROM memories m, json_each(m.context, '$.spatial') AS j "
            "WHERE m.status = 'active' AND json_type(m.context, '$.spatial') = 'object' "
            "AND (:collection IS NULL OR m.collection = :collection) AND j.type = 'array' ORDER BY j.key",
            {"collection": collection},
        )
        return [f"spatial.{row[0]}" for row in rows]

    def spatial_points(
        self, key: str, collection: str | None, limit: int
    ) -> list[tuple[int, str, list[Any], Any]]:
        rows = self._conn.execute(
            "SELECT m.id, m.content, json_extract(m.context, :path), json_extract(m.context, '$.task.success'), "
            "json_type(m.context, '$.task.success') FROM memories m "
            "WHERE m.status = 'active' AND json_type(m.context, :path) = 'array' "
            "AND (:collection IS NULL OR m.collection = :collection) ORDER BY m.id DESC LIMIT :limit",
            {
                "path": "$.spatial." + json.dumps(key, ensure_ascii=False),
                "collection": collection,
                "limit": limit,
            },
        )
        return [
            (
                int(memory_id),
                str(content),
                json.loads(raw),
                None if kind not in ("true", "false") else bool(success),
            )
            for memory_id, content, raw, success, kind in rows
        ]

    def spatial_field_counts(self, scope: ViewScope) -> list[tuple[str, int]]:
        where, params = scope_predicate(scope, self._mark)
        rows = self._conn.execute(
            "SELECT j.key, COUNT(*) AS n FROM memories m, json_each(m.context, '$.spatial') AS j "
            f"WHERE {where} AND json_type(m.context, '$.spatial') = 'object' AND j.type = 'array' "
            "GROUP BY j.key ORDER BY n DESC, j.key",
            params,
        )
        return [(str(key), int(count)) for key, count in rows]

    def map_frame_counts(self, key: str, scope: ViewScope) -> list[tuple[str, int]]:
        where, params = scope_predicate(scope, self._mark)
        rows = self._conn.execute(
            f"SELECT frame, COUNT(*) AS n FROM (SELECT {FRAME} AS frame FROM memories m WHERE {where} "
            f"AND (json_type(m.context, :path) = 'array' OR {_SIGHTING})) x "
            "WHERE frame IS NOT NULL GROUP BY frame ORDER BY n DESC, frame",
            {**params, "path": _key_path("spatial", key)},
        )
        return [(str(frame), int(count)) for frame, count in rows]

    def map_points(
        self, key: str, scope: ViewScope, limit: int, frame: str | None = None
    ) -> tuple[list[MapPoint], int]:
        where, params = scope_predicate(scope, self._mark)
        params = {**params, "path": _key_path("spatial", key), "limit": limit, "frame": frame}
        where += " AND json_type(m.context, :path) = 'array'"
        if frame is not None:
            where += f" AND {FRAME} = :frame"
        time = VIEW_TIME_COLUMNS[scope.time_field]
        total = self._count(f"SELECT COUNT(*) FROM memories m WHERE {where}", params)
        rows = self._conn.execute(
            f"SELECT m.id, m.type, m.content, json_extract(m.context, :path), {self._success_flag()}, "
            f"{time}, m.session_id FROM memories m WHERE {where} "
            f"ORDER BY {time} DESC, m.id DESC LIMIT :limit",
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
        where += f" AND {_SIGHTING} AND {FRAME} = :frame"
        params = {**params, "frame": frame, "limit": limit}
        total = self._count(f"SELECT COUNT(*) FROM memories m WHERE {where}", params)
        rows = self._conn.execute(
            f"SELECT m.id, m.collection, {text_of('$.object.id')}, {text_of('$.object.label')}, "
            "json_extract(m.context, '$.spatial.position'), m.observed_at FROM memories m "
            f"WHERE {where} ORDER BY m.observed_at DESC, m.id DESC LIMIT :limit",
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
            "SELECT j.key, CASE WHEN j.type = 'object' AND json_type(j.value, '$.unit') = 'text' "
            "THEN json_extract(j.value, '$.unit') END AS unit, COUNT(*) AS n "
            "FROM memories m, json_each(m.context, '$.params') AS j "
            f"WHERE {where} AND json_type(m.context, '$.params') = 'object' "
            f"AND (j.type IN {_NUMBER} OR (j.type = 'object' AND json_type(j.value, '$.value') IN {_NUMBER})) "
            "GROUP BY j.key, unit ORDER BY n DESC, j.key, unit",
            params,
        )
        return [(str(key), None if unit is None else str(unit), int(count)) for key, unit, count in rows]

    def param_values(self, key: str, scope: ViewScope) -> list[ParamValue]:
        where, params = scope_predicate(scope, self._mark)
        path = _key_path("params", key)
        rows = self._conn.execute(
            "SELECT id, value, unit, success FROM (SELECT m.id, "
            "CASE json_type(m.context, :path) WHEN 'object' THEN json_extract(m.context, :value_path) "
            "ELSE json_extract(m.context, :path) END AS value, "
            "CASE WHEN json_type(m.context, :unit_path) = 'text' THEN json_extract(m.context, :unit_path) END AS unit, "
            f"{self._success_flag()} AS success FROM memories m WHERE {where} "
            f"AND (json_type(m.context, :path) IN {_NUMBER} OR json_type(m.context, :value_path) IN {_NUMBER})) "
            "ORDER BY id",
            {**params, "path": path, "value_path": path + ".value", "unit_path": path + ".unit"},
        )
        return [
            ParamValue(int(i), float(value), None if unit is None else str(unit), success_of(success))
            for i, value, unit, success in rows
        ]
