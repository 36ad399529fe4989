"""``SessionTable`` in either dialect: rows of ``sessions`` and ``session_outcomes``, the same SQL on both
engines with each one's placeholders (an engine's ``Sessions`` names them in ``_mark``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from robotmem.records import Session, SessionCounts
from robotmem.store.shared import rows
from robotmem.store.shared.checks import Connection, Placeholders


class SharedSessions:
    """``SessionTable``; a subclass per engine sets ``_mark``."""

    _mark: Placeholders

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def create(self, session_id: str, collection: str, context: dict[str, Any], now: str) -> None:
        m = self._mark
        self._conn.execute(
            "INSERT INTO sessions (id, collection, context, status, created_at) "
            f"VALUES ({m('id')}, {m('collection')}, {m('context')}, 'active', {m('now')})",
            rows.new_session(session_id, collection, context, now),
        )

    def get(self, session_id: str) -> Session:
        row = self._conn.execute(f"{rows.SESSION_SELECT} WHERE s.id = {self._mark('id')}", {"id": session_id})
        return rows.existing_session(session_id, row.fetchone())

    def get_active(self, session_id: str) -> Session:
        return rows.active_session(self.get(session_id))

    def end(self, session_id: str, outcome_score: float | None, summary: Mapping[str, Any], now: str) -> None:
        m = self._mark
        params = rows.ended_session(session_id, outcome_score, summary, now)
        self._conn.execute(
            f"UPDATE sessions SET status = 'ended', ended_at = {m('now')}, summary = {m('summary')} "
            f"WHERE id = {m('id')}",
            params,
        )
        self._conn.execute(
            "INSERT INTO session_outcomes (session_id, outcome_score, memory_count, summary, created_at) "
            f"VALUES ({m('id')}, {m('score')}, {m('count')}, {m('summary')}, {m('now')}) "
            "ON CONFLICT (session_id) DO UPDATE SET outcome_score = excluded.outcome_score, "
            "memory_count = excluded.memory_count, summary = excluded.summary, created_at = excluded.created_at",
            params,
        )

    def summarize(self, session_id: str) -> SessionCounts:
        return rows.count_session(
            self._conn.execute(
                "SELECT type, category, COUNT(*) FROM memories "
                f"WHERE session_id = {self._mark('id')} AND status != 'invalidated' "
                "GROUP BY type, category ORDER BY type, category",
                {"id": session_id},
            )
        )

    def active_memory_count(self, collection: str) -> int:
        row = self._conn.execute(
            f"SELECT COUNT(*) FROM memories WHERE collection = {self._mark('c')} AND status = 'active'",
            {"c": collection},
        ).fetchone()
        return int(row[0]) if row else 0
