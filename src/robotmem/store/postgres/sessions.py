"""Sessions on PostgreSQL: the ``SessionTable`` of the storage contract."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg

from robotmem.errors import ConflictError, NotFoundError
from robotmem.records import Session, SessionCounts

_SESSION_SELECT = (
    "SELECT s.id, s.collection, s.context, s.status, s.created_at, s.ended_at, o.outcome_score, s.summary "
    "FROM sessions s LEFT JOIN session_outcomes o ON o.session_id = s.id"
)


def row_to_session(row: Sequence[Any]) -> Session:
    """Return the ``Session`` of a row whose first eight columns are those of ``_SESSION_SELECT``."""
    return Session(
        id=row[0],
        collection=row[1],
        context=json.loads(row[2] or "{}"),
        status=row[3],
        created_at=row[4],
        ended_at=row[5],
        outcome_score=row[6],
        summary=json.loads(row[7]) if row[7] else None,
    )


class Sessions:
    """``SessionTable`` on PostgreSQL."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self._conn = conn

    def create(self, session_id: str, collection: str, context: dict[str, Any], now: str) -> None:
        self._conn.execute(
            "INSERT INTO sessions (id, collection, context, status, created_at) VALUES (%s, %s, %s, 'active', %s)",
            (session_id, collection, json.dumps(context, ensure_ascii=False), now),
        )

    def get(self, session_id: str) -> Session:
        row = self._conn.execute(_SESSION_SELECT + " WHERE s.id = %s", (session_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"session_id {session_id!r}: no session with this id")
        return row_to_session(row)

    def get_active(self, session_id: str) -> Session:
        session = self.get(session_id)
        if session.status != "active":
            raise ConflictError(
                f"session_id {session_id!r}: the session ended at {session.ended_at}; start a new one"
            )
        return session

    def end(self, session_id: str, outcome_score: float | None, summary: Mapping[str, Any], now: str) -> None:
        text = json.dumps(dict(summary), ensure_ascii=False)
        self._conn.execute(
            "UPDATE sessions SET status = 'ended', ended_at = %s, summary = %s WHERE id = %s",
            (now, text, session_id),
        )
        self._conn.execute(
            "INSERT INTO session_outcomes (session_id, outcome_score, memory_count, summary, created_at) "
            "VALUES (%(id)s, %(score)s, %(count)s, %(summary)s, %(now)s) ON CONFLICT (session_id) DO UPDATE SET "
            "outcome_score = EXCLUDED.outcome_score, memory_count = EXCLUDED.memory_count, "
            "summary = EXCLUDED.summary, created_at = EXCLUDED.created_at",
            {
                "id": session_id,
                "score": outcome_score,
                "count": summary.get("memory_count", 0),
                "summary": text,
                "now": now,
            },
        )

    def summarize(self, session_id: str) -> SessionCounts:
        by_type: dict[str, int] = {}
        by_category: dict[str, int] = {}
        total = 0
        for memory_type, category, count in self._conn.execute(
            "SELECT type, category, COUNT(*) FROM memories WHERE session_id = %s AND status != 'invalidated' "
            "GROUP BY type, category ORDER BY type, category",
            (session_id,),
        ):
            total += int(count)
            by_type[memory_type] = by_type.get(memory_type, 0) + int(count)
            by_category[category] = by_category.get(category, 0) + int(count)
        return SessionCounts(memory_count=total, by_type=by_type, by_category=by_category)

    def active_memory_count(self, collection: str) -> int:
        row = self._conn.execute(
            "SELECT COUNT(*) FROM memories WHERE collection = %s AND status = 'active'", (collection,)
        ).fetchone()
        return int(row[0]) if row else 0
