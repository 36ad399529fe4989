"""Counts that show whether the derived indexes (FTS, vectors) agree with the memories table."""

from __future__ import annotations

import sqlite3
from typing import Any

from robotmem.records import IndexHealth
from robotmem.store.sqlite import vectors
from robotmem.store.sqlite.schema import SCHEMA_VERSION


def _one(conn: sqlite3.Connection, sql: str) -> Any:
    return conn.execute(sql).fetchone()[0]


def index_report(conn: sqlite3.Connection) -> IndexHealth:
    """Return schema version, row counts, FTS and vector consistency figures for ``robotmem doctor``."""
    active = int(_one(conn, "SELECT COUNT(*) FROM memories WHERE status = 'active'"))
    fts_rows = int(_one(conn, "SELECT COUNT(*) FROM memories_fts"))
    fts_missing = int(
        _one(
            conn,
            "SELECT COUNT(*) FROM memories m WHERE m.status = 'active' "
            "AND NOT EXISTS (SELECT 1 FROM memories_fts f WHERE f.rowid = m.id)",
        )
    )
    stale = int(
        _one(
            conn,
            "SELECT COUNT(*) FROM memory_vectors v JOIN memories m ON m.id = v.memory_id "
            "WHERE v.embedding IS NOT NULL AND m.status != 'active'",
        )
    )
    return IndexHealth(
        expected_schema_version=SCHEMA_VERSION,
        schema_version=int(_one(conn, "PRAGMA user_version")),
        journal_mode=str(_one(conn, "PRAGMA journal_mode")),
        memories=int(_one(conn, "SELECT COUNT(*) FROM memories")),
        active=active,
        sessions=int(_one(conn, "SELECT COUNT(*) FROM sessions")),
        fts_rows=fts_rows,
        fts_missing_active=fts_missing,
        vectors_stored=int(_one(conn, "SELECT COUNT(*) FROM memory_vectors WHERE embedding IS NOT NULL")),
        active_without_vector=int(
            _one(conn, "SELECT COUNT(*) FROM memories WHERE embedding_model IS NULL AND status = 'active'")
        ),
        vectors_stale=stale,
        stored_model=vectors.stored_model(conn),
    )
