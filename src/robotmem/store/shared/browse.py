"""The web UI's read queries whose SQL is the same in both dialects: ``SharedBrowse``, the base of each
engine's ``Browse``.

Only what reads inside a context differs between the dialects (SQLite's ``json_type``, PostgreSQL's
``jsonb`` operators): each engine names the test of a memory's ``task.success`` (``_SUCCEEDED``,
``_FAILED``), a session's robot and task (``_SESSION_ROBOT``, ``_SESSION_TASK``) and what the map reads
(a list at ``spatial.<key>``, a memory's frame, an object sighting), and adds the views that read
positions and parameters (spatial fields and points, the numeric parameters). The episodes, with the
outcome rule of ``records.EpisodeRow``, and the map are written once here. The queries run inside
the caller's read snapshot, take parameters by name only, and return records or plain rows;
serialization happens in the service.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from robotmem.records import (
    EpisodeQuery,
    EpisodeRow,
    MapPoint,
    MapSighting,
    Memory,
    MemoryQuery,
    ParamValue,
    SessionRow,
    ViewScope,
)
from robotmem.store.protocol import CollectionRow
from robotmem.store.shared.checks import Connection, Placeholders
from robotmem.store.shared.rows import row_to_session

# Categories that hold lessons drawn from a failure.
FAILURE_CATEGORIES = ("root_cause", "postmortem", "gotcha")


def equal_to(
    values: dict[str, Any], mark: Placeholders, prefix: str = "eq"
) -> tuple[list[str], dict[str, Any]]:
    """Return ``column = placeholder`` for each column of ``values`` that is not None, and the parameters."""
    parts: list[str] = []
    params: dict[str, Any] = {}
    for number, (column, value) in enumerate(values.items()):
        if value is not None:
            parts.append(f"{column} = {mark(f'{prefix}{number}')}")
            params[f"{prefix}{number}"] = value
    return parts, params


def where(parts: Sequence[str]) -> str:
    """Return ``parts`` joined by AND (``1 = 1`` when there are none)."""
    return " AND ".join(parts) if parts else "1 = 1"


def memory_predicate(query: MemoryQuery, mark: Placeholders) -> tuple[str, dict[str, Any]]:
    """Return the SQL predicate over ``memories m`` and its parameters for ``query``."""
    parts, params = equal_to(
        {
            "m.collection": query.collection,
            "m.type": query.type,
            "m.status": query.status,
            "m.category": query.category,
            "m.perception_type": query.perception_type,
            "m.session_id": query.session_id,
        },
        mark,
    )
    bounds = (
        ("m.confidence >=", "min_confidence", query.min_confidence),
        ("m.confidence <=", "max_confidence", query.max_confidence),
        ("m.created_at >=", "since", query.since),
        ("m.created_at <", "until", query.until),
    )
    for comparison, name, bound in bounds:
        if bound is not None:
            parts.append(f"{comparison} {mark(name)}")
            params[name] = bound
    return where(parts), params


# The column each ``ViewScope.time_field`` (``records.VIEW_TIME_FIELDS``) bounds, over ``memories m``.
VIEW_TIME_COLUMNS = {"created_at": "m.created_at", "observed_at": "m.observed_at"}


def scope_predicate(scope: ViewScope, mark: Placeholders) -> tuple[str, dict[str, Any]]:
    """Return the SQL predicate over ``memories m`` of a view's scope (active, collection, time window)."""
    column = VIEW_TIME_COLUMNS[scope.time_field]
    parts, params = equal_to({"m.collection": scope.collection}, mark, "scope")
    for comparison, name, bound in ((">=", "since", scope.since), ("<=", "until", scope.until)):
        if bound is not None:
            parts.append(f"{column} {comparison} {mark(name)}")
            params[name] = bound
    return where(["m.status = 'active'", *parts]), params


class SharedBrowse(ABC):
    """The views of ``BrowseQueries`` whose SQL is the same on both engines; one method per view.

    An engine sets ``_mark`` (its placeholders), ``_SUCCEEDED`` and ``_FAILED`` (SQL over ``memories m``
    true when its context's ``task.success`` is true, false), ``_SESSION_ROBOT`` and ``_SESSION_TASK``
    (SQL over ``sessions s``, and whatever ``_SESSION_JOIN`` adds, giving an episode's robot and task by
    the rules of ``records.EpisodeRow``, as text that sorts by bytes), the map's SQL over ``memories m``
    (``_FRAME``: its frame, the default when it names none, else NULL; ``_SIGHTING``: true when it names an
    object at a ``spatial.position`` list; ``_OBJECT_ID``, ``_OBJECT_LABEL``: that object's id and label
    when they are text, else NULL; ``_POSITION``: the position list's JSON text, numbers as written), and
    implements the abstract methods: its memory rows, and the views that read inside a context.
    """

    _conn: Connection
    _mark: Placeholders
    _SUCCEEDED: str
    _FAILED: str
    _SESSION_ROBOT: str
    _SESSION_TASK: str
    _SESSION_JOIN = ""
    _FRAME: str
    _SIGHTING: str
    _OBJECT_ID: str
    _OBJECT_LABEL: str
    _POSITION: str

    @abstractmethod
    def _fetch(self, ids: Sequence[int]) -> dict[int, Memory]: ...

    def _count(self, sql: str, params: dict[str, Any]) -> int:
        return int(self._conn.execute(sql, params).fetchone()[0])

    def _in_collection(
        self, collection: str | None, column: str = "collection"
    ) -> tuple[list[str], dict[str, Any]]:
        return equal_to({column: collection}, self._mark, "collection")

    def list_memories(self, query: MemoryQuery, limit: int, offset: int) -> tuple[list[Memory], int]:
        """Return one page of memories passing ``query`` (time order) and how many pass in all."""
        p = self._mark
        predicate, params = memory_predicate(query, p)
        total = self._count(f"SELECT COUNT(*) FROM memories m WHERE {predicate}", params)
        order = "DESC" if query.newest_first else "ASC"
        ids = [
            int(row[0])
            for row in self._conn.execute(
                f"SELECT m.id FROM memories m WHERE {predicate} ORDER BY m.created_at {order}, m.id {order} "
                f"LIMIT {p('page_limit')} OFFSET {p('page_offset')}",
                {**params, "page_limit": limit, "page_offset": offset},
            )
        ]
        found = self._fetch(ids)
        return [found[memory_id] for memory_id in ids if memory_id in found], total

    def totals(self, collection: str | None, since: str) -> dict[str, Any]:
        """Return counts for the dashboard: by status, by type (active), created since ``since``, sessions."""
        parts, params = self._in_collection(collection)
        scope = where(parts)

        def grouped(sql: str) -> dict[str, int]:
            return {str(key): int(count) for key, count in self._conn.execute(f"{sql} ORDER BY 1", params)}

        return {
            "by_status": grouped(f"SELECT status, COUNT(*) FROM memories WHERE {scope} GROUP BY status"),
            "by_type": grouped(
                f"SELECT type, COUNT(*) FROM memories WHERE {scope} AND status = 'active' GROUP BY type"
            ),
            "created_since": self._count(
                f"SELECT COUNT(*) FROM memories WHERE {scope} AND created_at >= {self._mark('since')}",
                {**params, "since": since},
            ),
            "sessions": grouped(f"SELECT status, COUNT(*) FROM sessions WHERE {scope} GROUP BY status"),
        }

    def category_counts(self, collection: str | None) -> list[tuple[str, int]]:
        """Return ``(category, active count)`` pairs, largest first."""
        parts, params = self._in_collection(collection)
        active = where(["status = 'active'", *parts])
        rows = self._conn.execute(
            f"SELECT category, COUNT(*) AS n FROM memories WHERE {active} "
            "GROUP BY category ORDER BY n DESC, category",
            params,
        )
        return [(str(category), int(count)) for category, count in rows]

    def collection_rows(self) -> list[CollectionRow]:
        """Return ``(collection, memories, active, sessions, latest activity)`` of every collection, by name."""
        rows = self._conn.execute(
            "SELECT name, SUM(total), SUM(active), SUM(sessions), MAX(last_at) FROM ("
            " SELECT collection AS name, COUNT(*) AS total, SUM(CASE WHEN status = 'active' THEN 1 ELSE 0 END) "
            " AS active, 0 AS sessions, MAX(created_at) AS last_at FROM memories GROUP BY collection"
            " UNION ALL"
            " SELECT collection, 0, 0, COUNT(*), MAX(created_at) FROM sessions GROUP BY collection"
            ") x GROUP BY name ORDER BY name"
        )
        return [
            (str(name), int(total or 0), int(active or 0), int(sessions or 0), last_at)
            for name, total, active, sessions, last_at in rows
        ]

    def _session_rows(self, predicate: str, params: dict[str, Any], tail: str) -> list[SessionRow]:
        """Return the sessions passing ``predicate`` over ``sessions s`` (and ``session_outcomes o``) with
        their counts of memories (not invalidated), of those that succeeded and of those that failed."""
        of_session = "FROM memories m WHERE m.session_id = s.id AND m.status != 'invalidated'"
        rows = self._conn.execute(
            "SELECT s.id, s.collection, s.context, s.status, s.created_at, s.ended_at, o.outcome_score, "
            f"s.summary, (SELECT COUNT(*) {of_session}), (SELECT COUNT(*) {of_session} AND {self._SUCCEEDED}), "
            f"(SELECT COUNT(*) {of_session} AND {self._FAILED}) "
            f"FROM sessions s LEFT JOIN session_outcomes o ON o.session_id = s.id WHERE {predicate} {tail}",
            params,
        )
        return [SessionRow(row_to_session(row), int(row[8]), int(row[9]), int(row[10])) for row in rows]

    def list_sessions(
        self, collection: str | None, status: str | None, limit: int, offset: int, newest_first: bool = True
    ) -> tuple[list[SessionRow], int]:
        """Return one page of sessions with counts (time order) and how many match in all."""
        p = self._mark
        parts, params = equal_to({"s.collection": collection, "s.status": status}, p)
        total = self._count(f"SELECT COUNT(*) FROM sessions s WHERE {where(parts)}", params)
        order = "DESC" if newest_first else "ASC"
        page = self._session_rows(
            where(parts),
            {**params, "page_limit": limit, "page_offset": offset},
            f"ORDER BY s.created_at {order}, s.id {order} LIMIT {p('page_limit')} OFFSET {p('page_offset')}",
        )
        return page, total

    def session_memory_ids(self, session_id: str) -> list[int]:
        """Return the ids of every memory of the session (any status) in time order."""
        rows = self._conn.execute(
            f"SELECT id FROM memories WHERE session_id = {self._mark('id')} ORDER BY created_at, id",
            {"id": session_id},
        )
        return [int(row[0]) for row in rows]

    def failure_memory_ids(self, collection: str | None, limit: int) -> list[int]:
        """Return active memories that record a failure or a lesson from one, newest first.

        A failure: the stored context says the task failed, or the memory carries the ``failure`` tag or
        a category of ``FAILURE_CATEGORIES``.
        """
        parts, params = self._in_collection(collection, "m.collection")
        categories = ", ".join(f"'{category}'" for category in FAILURE_CATEGORIES)
        failure = (
            f"({self._FAILED} OR EXISTS (SELECT 1 FROM memory_tags t WHERE t.memory_id = m.id "
            f"AND t.tag = 'failure') OR m.category IN ({categories}))"
        )
        predicate = where(["m.status = 'active'", *parts, failure])
        rows = self._conn.execute(
            f"SELECT m.id FROM memories m WHERE {predicate} "
            f"ORDER BY m.created_at DESC, m.id DESC LIMIT {self._mark('limit')}",
            {**params, "limit": limit},
        )
        return [int(row[0]) for row in rows]

    def _episodes_sql(self, query: EpisodeQuery) -> tuple[str, dict[str, Any]]:
        """Return the SQL of the sessions ``query`` selects, each with its counts, robot, task and outcome
        (the columns of ``SESSION_SELECT``, then memory_count, successes, failures, robot, task, outcome)."""
        p = self._mark
        parts, params = equal_to(
            {"s.collection": query.collection, "s.status": query.status, "s.id": query.session_id},
            p,
            "session",
        )
        of_session = "FROM memories m WHERE m.session_id = s.id AND m.status != 'invalidated'"
        sessions = (
            "SELECT s.id, s.collection, s.context, s.status, s.created_at, s.ended_at, o.outcome_score, s.summary, "
            f"(SELECT COUNT(*) {of_session}) AS memory_count, "
            f"(SELECT COUNT(*) {of_session} AND {self._SUCCEEDED}) AS successes, "
            f"(SELECT COUNT(*) {of_session} AND {self._FAILED}) AS failures, "
            f"{self._SESSION_ROBOT} AS robot, {self._SESSION_TASK} AS task "
            f"FROM sessions s LEFT JOIN session_outcomes o ON o.session_id = s.id{self._SESSION_JOIN} "
            f"WHERE {where(parts)}"
        )
        below = p("threshold")
        sql = (
            "SELECT i.*, CASE"
            f" WHEN outcome_score IS NOT NULL THEN CASE WHEN outcome_score < {below} THEN 'failure' ELSE 'success' END"
            " WHEN successes + failures > 0 THEN"
            f" CASE WHEN successes < {below} * (successes + failures) THEN 'failure' ELSE 'success' END"
            f" ELSE 'unknown' END AS outcome FROM ({sessions}) i"
        )
        return sql, {**params, "threshold": query.threshold}

    def episodes(self, query: EpisodeQuery, limit: int, offset: int) -> tuple[list[EpisodeRow], int]:
        """Return one page of sessions passing ``query`` (time order) and how many pass in all.

        An episode's outcome: with an ``outcome_score``, ``failure`` below ``query.threshold`` and
        ``success`` otherwise; without one, the same test on the success rate of its judged memories;
        ``unknown`` with neither (``records.EpisodeRow``).
        """
        p = self._mark
        episodes, params = self._episodes_sql(query)
        parts, chosen = equal_to(
            {"robot": query.robot, "task": query.task, "outcome": query.outcome}, p, "episode"
        )
        params.update(chosen)
        total = self._count(f"SELECT COUNT(*) FROM ({episodes}) e WHERE {where(parts)}", params)
        order = "DESC" if query.newest_first else "ASC"
        rows = self._conn.execute(
            f"SELECT * FROM ({episodes}) e WHERE {where(parts)} ORDER BY created_at {order}, id {order} "
            f"LIMIT {p('page_limit')} OFFSET {p('page_offset')}",
            {**params, "page_limit": limit, "page_offset": offset},
        )
        page = [
            EpisodeRow(
                SessionRow(row_to_session(row), int(row[8]), int(row[9]), int(row[10])),
                row[11],
                row[12],
                str(row[13]),
            )
            for row in rows
        ]
        return page, total

    def episode_facets(self, collection: str | None) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
        """Return ``(robot, sessions)`` and ``(task, sessions)`` pairs, most sessions first, then by name."""
        episodes, params = self._episodes_sql(EpisodeQuery(collection=collection))

        def counted(column: str) -> list[tuple[str, int]]:
            rows = self._conn.execute(
                f"SELECT {column}, COUNT(*) AS n FROM ({episodes}) e WHERE {column} IS NOT NULL "
                f"GROUP BY {column} ORDER BY n DESC, {column}",
                params,
            )
            return [(str(name), int(count)) for name, count in rows]

        return counted("robot"), counted("task")

    def _success_flag(self) -> str:
        """SQL over ``memories m``: 1 when ``task.success`` is true, 0 when false, else NULL."""
        return f"CASE WHEN {self._SUCCEEDED} THEN 1 WHEN {self._FAILED} THEN 0 END"

    @abstractmethod
    def spatial_fields(self, collection: str | None) -> list[str]:
        """Return the ``spatial.*`` keys whose values are coordinate lists in active memories."""

    @abstractmethod
    def spatial_points(
        self, key: str, collection: str | None, limit: int
    ) -> list[tuple[int, str, list[Any], Any]]:
        """Return ``(id, content, coordinates, task.success)`` of active memories with ``spatial.<key>`` a list."""

    @abstractmethod
    def spatial_field_counts(self, scope: ViewScope) -> list[tuple[str, int]]:
        """Return ``(key, memories)`` of each ``spatial.<key>`` holding a list, most carried first, then by key."""

    @abstractmethod
    def _list_at(self, key: str) -> tuple[str, str, dict[str, Any]]:
        """SQL over ``memories m``: true when ``spatial.<key>`` holds a list, and that list's JSON text
        (numbers as written); with their parameters."""

    def map_frame_counts(self, key: str, scope: ViewScope) -> list[tuple[str, int]]:
        """Return ``(frame, memories)`` of the memories with a list at ``spatial.<key>`` or an object
        sighting (``context.object`` and a ``spatial.position`` list), most first, then by name."""
        where, params = scope_predicate(scope, self._mark)
        is_list, _, bound = self._list_at(key)
        rows = self._conn.execute(
            f"SELECT frame, COUNT(*) AS n FROM (SELECT {self._FRAME} AS frame FROM memories m WHERE {where} "
            f"AND ({is_list} OR {self._SIGHTING})) x WHERE frame IS NOT NULL GROUP BY frame ORDER BY n DESC, frame",
            {**params, **bound},
        )
        return [(str(frame), int(count)) for frame, count in rows]

    def map_points(
        self, key: str, scope: ViewScope, limit: int, frame: str | None = None
    ) -> tuple[list[MapPoint], int]:
        """Return the newest ``limit`` memories with a list at ``spatial.<key>`` (in ``frame`` when given),
        newest by the scope's time field, and how many have one."""
        where, params = scope_predicate(scope, self._mark)
        is_list, listed, bound = self._list_at(key)
        params = {**params, **bound, "limit": limit, "frame": frame}
        where += f" AND {is_list}"
        if frame is not None:
            where += f" AND {self._FRAME} = {self._mark('frame')}"
        time = VIEW_TIME_COLUMNS[scope.time_field]
        total = self._count(f"SELECT COUNT(*) FROM memories m WHERE {where}", params)
        rows = self._conn.execute(
            f"SELECT m.id, m.type, m.content, {listed}, {self._success_flag()}, {time}, m.session_id "
            f"FROM memories m WHERE {where} ORDER BY {time} DESC, m.id DESC LIMIT {self._mark('limit')}",
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
        """Return the newest ``limit`` object sightings in ``frame`` by ``observed_at`` (then id), newest
        first, and how many there are: those naming an object by a text id or label."""
        where, params = scope_predicate(scope, self._mark)
        where += f" AND {self._SIGHTING} AND {self._FRAME} = {self._mark('frame')}"
        where += f" AND ({self._OBJECT_ID} IS NOT NULL OR {self._OBJECT_LABEL} IS NOT NULL)"  # names one
        params = {**params, "frame": frame, "limit": limit}
        total = self._count(f"SELECT COUNT(*) FROM memories m WHERE {where}", params)
        rows = self._conn.execute(
            f"SELECT m.id, m.collection, {self._OBJECT_ID}, {self._OBJECT_LABEL}, {self._POSITION}, "
            f"m.observed_at FROM memories m WHERE {where} ORDER BY m.observed_at DESC, m.id DESC "
            f"LIMIT {self._mark('limit')}",
            params,
        )
        sightings = [
            MapSighting(int(i), str(collection), object_id, label, json.loads(raw), str(observed))
            for i, collection, object_id, label, raw, observed in rows
        ]
        return sightings, total

    @abstractmethod
    def param_field_counts(self, scope: ViewScope) -> list[tuple[str, str | None, int]]:
        """Return ``(key, unit, memories)`` of the numeric ``params.<key>``, most carried first."""

    @abstractmethod
    def param_values(self, key: str, scope: ViewScope) -> list[ParamValue]:
        """Return every numeric value of ``params.<key>`` in scope with its unit and ``task.success``, by id."""


def success_of(flag: Any) -> bool | None:
    """Return the ``_success_flag`` column as a boolean (None when the memory has no boolean there)."""
    return None if flag is None else bool(flag)
