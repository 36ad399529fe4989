"""``SessionTable`` on SQLite: rows of ``sessions`` and ``session_outcomes``."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from robotmem.records import Session, SessionCounts
from robotmem.store.shared import rows


class Sessions:
    """``SessionTable`` on SQLite."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def create(self, session_id: str, collection: str, context: dict[str, Any], now: str) -> None:
        self._conn.execute(
            "INSERT INTO sessions (id, collection, context, status, created_at) "
            "VALUES (:id, :collection, :context, 'active', :now)",
            rows.new_session(session_id, collection, context, now),
        )

    def get(self, session_id: str) -> Session:
        row = self._conn.execute(rows.SESSION_SELECT + " WHERE s.id = :id", {"id": session_id}).fetchone()
        return rows.existing_session(session_id, row)

    def get_active(self, session_id: str) -> Session:
        return rows.active_session(self.get(session_id))

    def end(self, session_id: str, outcome_score: float | None, summary: Mapping[str, Any], now: str) -> None:
        params = rows.ended_session(session_id, outcome_score, summary, now)
        self._conn.execute(
            "UPDATE sessions SET status = 'ended', ended_at = :now, summary = :summary WHERE id = :id",
            params,
        )
        self._conn.execute(
            "INSERT OR REPLACE INTO session_outcomes (session_id, outcome_score, memory_count, summary, created_at) "
            "VALUES (:id, :score, :count, :summary, :now)",
            params,
        )

    def summarize(self, session_id: str) -> SessionCounts:
        return rows.count_session(
            self._conn.execute(
                "SELECT type, category, COUNT(*) FROM memories WHERE session_id = :id AND status != 'invalidated' "
                "GROUP BY type, category",
                {"id": session_id},
            )
        )

    def active_memory_count(self, collection: str) -> int:
        row = self._conn.execute(
            "SELECT COUNT(*) FROM memories WHERE collection = :c AND status = 'active'", {"c": collection}
        ).fetchone()
        return int(row[0])
