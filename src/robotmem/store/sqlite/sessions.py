"""Rows of ``sessions`` and ``session_outcomes``."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from typing import Any

from robotmem.errors import ConflictError, NotFoundError
from robotmem.records import Session, SessionCounts

_SELECT = (
    "SELECT s.id, s.collection, s.context, s.status, s.created_at, s.ended_at, o.outcome_score, s.summary "
    "FROM sessions s LEFT JOIN session_outcomes o ON o.session_id = s.id"
)


def row_to_session(row: Any) -> Session:
    """Return the ``Session`` of a row whose first eight columns are those of ``_SELECT``."""
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


def create(
    conn: sqlite3.Connection, session_id: str, collection: str, context: dict[str, Any], now: str
) -> None:
    """Insert a new active session."""
    conn.execute(
        "INSERT INTO sessions (id, collection, context, status, created_at) VALUES (:id, :collection, :context, 'active', :now)",
        {
            "id": session_id,
            "collection": collection,
            "context": json.dumps(context, ensure_ascii=False),
            "now": now,
        },
    )


def get(conn: sqlite3.Connection, session_id: str) -> Session:
    """Return the session; raises ``NotFoundError`` if there is none."""
    row = conn.execute(_SELECT + " WHERE s.id = :id", {"id": session_id}).fetchone()
    if row is None:
        raise NotFoundError(f"session_id {session_id!r}: no session with this id")
    return row_to_session(row)


def get_active(conn: sqlite3.Connection, session_id: str) -> Session:
    """Return the session if it is still active; raises ``NotFoundError`` or ``ConflictError``."""
    session = get(conn, session_id)
    if session.status != "active":
        raise ConflictError(
            f"session_id {session_id!r}: the session ended at {session.ended_at}; start a new one"
        )
    return session


def end(
    conn: sqlite3.Connection,
    session_id: str,
    outcome_score: float | None,
    summary: Mapping[str, Any],
    now: str,
) -> None:
    """Mark the session ended and store its outcome and summary."""
    text = json.dumps(summary, ensure_ascii=False)
    conn.execute(
        "UPDATE sessions SET status = 'ended', ended_at = :now, summary = :summary WHERE id = :id",
        {"id": session_id, "now": now, "summary": text},
    )
    conn.execute(
        "INSERT OR REPLACE INTO session_outcomes (session_id, outcome_score, memory_count, summary, created_at) "
        "VALUES (:id, :score, :count, :summary, :now)",
        {
            "id": session_id,
            "score": outcome_score,
            "count": summary.get("memory_count", 0),
            "summary": text,
            "now": now,
        },
    )


def summarize(conn: sqlite3.Connection, session_id: str) -> SessionCounts:
    """Return the counts of the session's memories that are not invalidated, in all, by type and by category."""
    by_type: dict[str, int] = {}
    by_category: dict[str, int] = {}
    total = 0
    for memory_type, category, count in conn.execute(
        "SELECT type, category, COUNT(*) FROM memories WHERE session_id = :id AND status != 'invalidated' "
        "GROUP BY type, category",
        {"id": session_id},
    ):
        total += count
        by_type[memory_type] = by_type.get(memory_type, 0) + count
        by_category[category] = by_category.get(category, 0) + count
    return SessionCounts(memory_count=total, by_type=by_type, by_category=by_category)


def active_memory_count(conn: sqlite3.Connection, collection: str) -> int:
    """Return the number of active memories in ``collection``."""
    row = conn.execute(
        "SELECT COUNT(*) FROM memories WHERE collection = :c AND status = 'active'", {"c": collection}
    ).fetchone()
    return int(row[0])


class Sessions:
    """``SessionTable`` on SQLite."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def create(self, session_id: str, collection: str, context: dict[str, Any], now: str) -> None:
        create(self._conn, session_id, collection, context, now)

    def get(self, session_id: str) -> Session:
        return get(self._conn, session_id)

    def get_active(self, session_id: str) -> Session:
        return get_active(self._conn, session_id)

    def end(self, session_id: str, outcome_score: float | None, summary: Mapping[str, Any], now: str) -> None:
        end(self._conn, session_id, outcome_score, summary, now)

    def summarize(self, session_id: str) -> SessionCounts:
        return summarize(self._conn, session_id)

    def active_memory_count(self, collection: str) -> int:
        return active_memory_count(self._conn, collection)
