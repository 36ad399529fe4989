"""Read-only queries behind the web UI on PostgreSQL: the ``BrowseQueries`` of the contract.

The views whose SQL is the same in both dialects are ``SharedBrowse``'s; here are PostgreSQL's JSON
operators: the test of a task's success, and the views that read inside a context.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import psycopg

from robotmem.records import Memory
from robotmem.store.postgres.memories import Memories
from robotmem.store.shared.browse import SharedBrowse
from robotmem.store.shared.checks import PYFORMAT

_SUCCESS = "(m.context -> 'task' -> 'success')"


class Browse(SharedBrowse):
    """``BrowseQueries`` on PostgreSQL."""

    _mark = PYFORMAT
    _SUCCEEDED = f"({_SUCCESS} = 'true'::jsonb)"
    _FAILED = f"({_SUCCESS} = 'false'::jsonb)"

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
