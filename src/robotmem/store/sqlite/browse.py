"""Read-only queries behind the web UI on SQLite: the ``BrowseQueries`` of the contract.

The views whose SQL is the same in both dialects are ``SharedBrowse``'s; here are SQLite's JSON
functions: the test of a task's success, and the views that read inside a context.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from robotmem.records import Memory
from robotmem.store.shared.browse import SharedBrowse
from robotmem.store.shared.checks import NAMED
from robotmem.store.sqlite.memories import Memories


class Browse(SharedBrowse):
    """``BrowseQueries`` on SQLite."""

    _mark = NAMED
    _SUCCEEDED = "json_type(m.context, '$.task.success') = 'true'"
    _FAILED = "json_type(m.context, '$.task.success') = 'false'"

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
