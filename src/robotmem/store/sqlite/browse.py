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

from robotmem.records import Memory, ParamValue, ViewScope
from robotmem.store.shared.browse import SharedBrowse, scope_predicate, success_of
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

    _FRAME = FRAME
    _SIGHTING = _SIGHTING
    _OBJECT_ID = text_of("$.object.id")
    _OBJECT_LABEL = text_of("$.object.label")
    _POSITION = "json_extract(m.context, '$.spatial.position')"

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn: sqlite3.Connection = conn

    def _fetch(self, ids: Sequence[int]) -> dict[int, Memory]:
        return Memories(self._conn).fetch(ids)

    def _list_at(self, key: str) -> tuple[str, str, dict[str, Any]]:
        path = {"path": _key_path("spatial", key)}
        return "json_type(m.context, :path) = 'array'", "json_extract(m.context, :path)", path

    def position_frames(self) -> list[str]:
        # The R*Tree's first dimension is the frame's code: one lookup per frame ever named.
        rows = self._conn.execute(
            "SELECT f.frame FROM memory_frames f WHERE EXISTS (SELECT 1 FROM memory_positions p "
            "WHERE p.f_lo <= f.code AND p.f_hi >= f.code) ORDER BY f.frame"
        )
        return [str(frame) for (frame,) in rows]

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
