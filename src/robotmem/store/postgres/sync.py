"""What ``robotmem sync`` reads and writes on PostgreSQL: the ``SyncRows`` of the storage contract."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from robotmem.store.postgres.transfer import (
    SESSION_COLUMNS,
    SESSION_JSON_COLUMNS,
    memory_records,
    row_record,
    session_record,
)
from robotmem.store.postgres.vectors import stored_model
from robotmem.store.protocol import StoreIdentity, SyncCursor


class Sync:
    """``SyncRows`` on PostgreSQL."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self._conn = conn

    def identity(self) -> StoreIdentity:
        rows: dict[str, Any] = dict(
            self._conn.execute("SELECT key, value FROM meta WHERE key IN ('store_id', 'robot_id')").fetchall()
        )
        return StoreIdentity(store_id=str(rows["store_id"]), robot_id=str(rows["robot_id"]))

    def last_change(self) -> tuple[int, int]:
        memory = self._conn.execute("SELECT COALESCE(MAX(seq), 0) FROM memory_changes").fetchone()
        session = self._conn.execute("SELECT COALESCE(MAX(seq), 0) FROM session_changes").fetchone()
        return int(memory[0]) if memory else 0, int(session[0]) if session else 0

    def changed_memories(self, after: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        changes = self._conn.execute(
            "SELECT memory_id, seq FROM memory_changes WHERE seq > %s ORDER BY seq LIMIT %s", (after, limit)
        ).fetchall()
        if not changes:
            return [], after
        order = {int(m): int(seq) for m, seq in changes}
        records = memory_records(self._conn, "WHERE m.id = ANY(%s)", (list(order),), stored_model(self._conn))
        records.sort(key=lambda record: order[int(record["memory"]["id"])])
        return records, int(changes[-1][1])

    def changed_sessions(self, after: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        rows = self._conn.execute(
            f"SELECT c.seq, {', '.join('s.' + c for c in SESSION_COLUMNS)} FROM session_changes c "
            "LEFT JOIN sessions s ON s.id = c.session_id WHERE c.seq > %s ORDER BY c.seq LIMIT %s",
            (after, limit),
        ).fetchall()
        records = [
            session_record(self._conn, row_record(SESSION_COLUMNS, row[1:], SESSION_JSON_COLUMNS))
            for row in rows
            if row[1] is not None
        ]
        return records, int(rows[-1][0]) if rows else after

    def memories_by_uid(
        self, uids: Sequence[str], *, with_vectors: bool = False
    ) -> dict[str, tuple[int, dict[str, Any]]]:
        model = stored_model(self._conn) if with_vectors else None
        records = memory_records(self._conn, "WHERE m.uid = ANY(%s)", (list(uids),), model)
        return {str(r["memory"]["uid"]): (int(r["memory"]["id"]), r) for r in records}

    def sessions_by_id(self, session_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        rows = self._conn.execute(
            f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions WHERE id = ANY(%s)", (list(session_ids),)
        ).fetchall()
        found: dict[str, dict[str, Any]] = {}
        for row in rows:
            record = row_record(SESSION_COLUMNS, row, SESSION_JSON_COLUMNS)
            found[str(record["id"])] = session_record(self._conn, record)
        return found

    def cursor(self, peer: str) -> SyncCursor:
        row = self._conn.execute(
            "SELECT pushed_memories, pushed_sessions, pulled_memories, pulled_sessions FROM sync_peers "
            "WHERE peer = %s",
            (peer,),
        ).fetchone()
        return SyncCursor() if row is None else SyncCursor(*(int(value) for value in row))

    def save_cursor(self, peer: str, location: str, cursor: SyncCursor, now: str) -> None:
        self._conn.execute(
            "INSERT INTO sync_peers (peer, location, pushed_memories, pushed_sessions, pulled_memories, "
            "pulled_sessions, synced_at) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (peer) DO UPDATE SET "
            "location = EXCLUDED.location, pushed_memories = EXCLUDED.pushed_memories, "
            "pushed_sessions = EXCLUDED.pushed_sessions, pulled_memories = EXCLUDED.pulled_memories, "
            "pulled_sessions = EXCLUDED.pulled_sessions, synced_at = EXCLUDED.synced_at",
            (
                peer,
                location,
                cursor.pushed_memories,
                cursor.pushed_sessions,
                cursor.pulled_memories,
                cursor.pulled_sessions,
                now,
            ),
        )
