"""``SessionTable`` on PostgreSQL: rows of ``sessions`` and ``session_outcomes``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psycopg

from robotmem.records import Session, SessionCounts
from robotmem.store.shared import rows


class Sessions:
    """``SessionTable`` on PostgreSQL."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self._conn = conn

    def create(self, session_id: str, collection: str, context: dict[str, Any], now: str) -> None:
        self._conn.execute(
            "INSERT INTO sessions (id, collection, context, status, created_at) "
            "VALUES (%(id)s, %(collection)s, %(context)s, 'active', %(now)s)",
            rows.new_session(session_id, collection, context, now),
        )

    def get(self, session_id: str) -> Session:
        row = self._conn.execute(rows.SESSION_SELECT + " WHERE s.id = %s", (session_id,)).fetchone()
        return rows.existing_session(session_id, row)

    def get_active(self, session_id: str) -> Session:
        return rows.active_session(self.get(session_id))

    def end(self, session_id: str, outcome_score: float | None, summary: Mapping[str, Any], now: str) -> None:
        params = rows.ended_session(session_id, outcome_score, summary, now)
        self._conn.execute(
            "UPDATE sessions SET status = 'ended', ended_at = %(now)s, summary = %(summary)s WHERE id = %(id)s",
            params,
        )
        self._conn.execute(
            "INSERT INTO session_outcomes (session_id, outcome_score, memory_count, summary, created_at) "
            "VALUES (%(id)s, %(score)s, %(count)s, %(summary)s, %(now)s) ON CONFLICT (session_id) DO UPDATE SET "
            "outcome_score = EXCLUDED.outcome_score, memory_count = EXCLUDED.memory_count, "
            "summary = EXCLUDED.summary, created_at = EXCLUDED.created_at",
            params,
        )

    def summarize(self, session_id: str) -> SessionCounts:
        return rows.count_session(
            self._conn.execute(
                "SELECT type, category, COUNT(*) FROM memories WHERE session_id = %s AND status != 'invalidated' "
                "GROUP BY type, category ORDER BY type, category",
                (session_id,),
            )
        )

    def active_memory_count(self, collection: str) -> int:
        row = self._conn.execute(
            "SELECT COUNT(*) FROM memories WHERE collection = %s AND status = 'active'", (collection,)
        ).fetchone()
        return int(row[0]) if row else 0
