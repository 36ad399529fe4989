"""SQL of ``robotmem sync``: the store's identity, what changed after a change number, peer cursors.

The change numbers are those of ``memory_changes`` and ``session_changes`` (kept by triggers). SQLite
serialises writers, so numbers commit in order: a reader that saw number n will never later find a
smaller one committed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from robotmem.store.protocol import StoreIdentity, SyncCursor
from robotmem.store.sqlite import search, transfer, vectors


def identity(conn: sqlite3.Connection) -> StoreIdentity:
    """Return the store id and default robot id recorded in ``meta`` by schema version 4."""
    rows = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('store_id', 'robot_id')").fetchall())
    return StoreIdentity(store_id=str(rows["store_id"]), robot_id=str(rows["robot_id"]))


def last_change(conn: sqlite3.Connection) -> tuple[int, int]:
    """Return the highest change number of a memory and of a session (0 when none)."""
    memory = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM memory_changes").fetchone()[0]
    session = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM session_changes").fetchone()[0]
    return int(memory), int(session)


def _memory_records(
    conn: sqlite3.Connection, where: str, params: dict[str, Any], *, with_vectors: bool
) -> list[dict[str, Any]]:
    names = transfer.columns(conn, "memories")
    select = ", ".join(f"m.{name}" for name in names)
    rows = conn.execute(f"SELECT {select} FROM memories m {where}", params).fetchall()
    records = [transfer.row_dict(names, row, "memory") for row in rows]
    if not records:
        return []
    model = vectors.stored_model(conn) if with_vectors else None
    return list(transfer.complete_records(conn, records, [int(r["id"]) for r in records], model))


def changed_memories(conn: sqlite3.Connection, after: int, limit: int) -> tuple[list[dict[str, Any]], int]:
    """Return the export records (with vectors) of up to ``limit`` memories changed after ``after``, in
    change order, and the last change number examined (``after`` when there is none)."""
    changes = conn.execute(
        "SELECT memory_id, seq FROM memory_changes WHERE seq > :after ORDER BY seq LIMIT :limit",
        {"after": after, "limit": limit},
    ).fetchall()
    if not changes:
        return [], after
    order = {int(memory_id): int(seq) for memory_id, seq in changes}
    records: list[dict[str, Any]] = []
    for marks, keyed in search.id_chunks(list(order)):
        records += _memory_records(conn, f"WHERE m.id IN ({marks})", keyed, with_vectors=True)
    # A memory deleted by hand leaves its change row: it is passed over, and the cursor moves past it.
    records.sort(key=lambda record: order[int(record["memory"]["id"])])
    return records, int(changes[-1][1])


def changed_sessions(conn: sqlite3.Connection, after: int, limit: int) -> tuple[list[dict[str, Any]], int]:
    """Return the records (with outcome) of up to ``limit`` sessions changed after ``after``, in change
    order, and the last change number examined (``after`` when there is none)."""
    names = transfer.columns(conn, "sessions")
    outcome_names = transfer.columns(conn, "session_outcomes")
    select = ", ".join(f"s.{name}" for name in names)
    rows = conn.execute(
        f"SELECT c.seq, {select} FROM session_changes c LEFT JOIN sessions s ON s.id = c.session_id "
        "WHERE c.seq > :after ORDER BY c.seq LIMIT :limit",
        {"after": after, "limit": limit},
    ).fetchall()
    records = [
        transfer.session_record(conn, transfer.row_dict(names, row[1:], "session"), outcome_names)
        for row in rows
        if row[1] is not None
    ]
    return records, int(rows[-1][0]) if rows else after


def memories_by_uid(
    conn: sqlite3.Connection, uids: Sequence[str], *, with_vectors: bool = False
) -> dict[str, tuple[int, dict[str, Any]]]:
    """Return uid → ``(id, export record)`` for the stored memories among ``uids`` (vectors only if asked)."""
    found: dict[str, tuple[int, dict[str, Any]]] = {}
    for start in range(0, len(uids), 500):
        chunk = {f"u{i}": uid for i, uid in enumerate(uids[start : start + 500])}
        marks = ", ".join(f":{key}" for key in chunk)
        for record in _memory_records(conn, f"WHERE m.uid IN ({marks})", chunk, with_vectors=with_vectors):
            found[str(record["memory"]["uid"])] = (int(record["memory"]["id"]), record)
    return found


def sessions_by_id(conn: sqlite3.Connection, session_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Return session id → session record with outcome for the stored sessions among ``session_ids``."""
    names = transfer.columns(conn, "sessions")
    outcome_names = transfer.columns(conn, "session_outcomes")
    select = ", ".join(names)
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(session_ids), 500):
        chunk = {f"s{i}": sid for i, sid in enumerate(session_ids[start : start + 500])}
        marks = ", ".join(f":{key}" for key in chunk)
        for row in conn.execute(f"SELECT {select} FROM sessions WHERE id IN ({marks})", chunk):
            record = transfer.row_dict(names, row, "session")
            found[str(record["id"])] = transfer.session_record(conn, record, outcome_names)
    return found


def cursor(conn: sqlite3.Connection, peer: str) -> SyncCursor:
    """Return the cursor kept for ``peer`` (zeros before the first sync)."""
    row = conn.execute(
        "SELECT pushed_memories, pushed_sessions, pulled_memories, pulled_sessions FROM sync_peers "
        "WHERE peer = :peer",
        {"peer": peer},
    ).fetchone()
    return SyncCursor() if row is None else SyncCursor(*(int(value) for value in row))


def save_cursor(conn: sqlite3.Connection, peer: str, location: str, cursor: SyncCursor, now: str) -> None:
    """Record ``cursor`` for ``peer``."""
    conn.execute(
        "INSERT OR REPLACE INTO sync_peers (peer, location, pushed_memories, pushed_sessions, pulled_memories, "
        "pulled_sessions, synced_at) VALUES (:peer, :location, :pm, :ps, :lm, :ls, :now)",
        {
            "peer": peer,
            "location": location,
            "pm": cursor.pushed_memories,
            "ps": cursor.pushed_sessions,
            "lm": cursor.pulled_memories,
            "ls": cursor.pulled_sessions,
            "now": now,
        },
    )


class Sync:
    """``SyncRows`` on SQLite."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def identity(self) -> StoreIdentity:
        return identity(self._conn)

    def last_change(self) -> tuple[int, int]:
        return last_change(self._conn)

    def changed_memories(self, after: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        return changed_memories(self._conn, after, limit)

    def changed_sessions(self, after: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        return changed_sessions(self._conn, after, limit)

    def memories_by_uid(
        self, uids: Sequence[str], *, with_vectors: bool = False
    ) -> dict[str, tuple[int, dict[str, Any]]]:
        return memories_by_uid(self._conn, uids, with_vectors=with_vectors)

    def sessions_by_id(self, session_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        return sessions_by_id(self._conn, session_ids)

    def cursor(self, peer: str) -> SyncCursor:
        return cursor(self._conn, peer)

    def save_cursor(self, peer: str, location: str, cursor: SyncCursor, now: str) -> None:
        save_cursor(self._conn, peer, location, cursor, now)
