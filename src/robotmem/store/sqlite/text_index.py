"""Every write to the FTS index (``memories_fts``) goes through these functions.

Each one also records the memories it touched in ``memory_changes``, so a recall mirror (``mirror.py``)
re-reads their postings at its next sync whatever else the transaction changed; ``rebuild`` bumps
``meta.fts_epoch`` instead, which makes every mirror reload. The body indexed is ``text.index_text``
of the content: only active memories have a row.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from robotmem.store.shared.rows import batches
from robotmem.store.shared.terms import FTS_TOKENIZER

CREATE_TABLE = f'CREATE VIRTUAL TABLE memories_fts USING fts5(body, tokenize = "{FTS_TOKENIZER}")'

_LOG = (
    "INSERT OR REPLACE INTO memory_changes (memory_id, seq) "
    "VALUES (:id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM memory_changes))"
)


def add(conn: sqlite3.Connection, rows: Iterable[tuple[int, str]]) -> None:
    """Index ``(memory_id, body)`` rows of memories that have none yet."""
    keyed = [{"id": memory_id, "body": body} for memory_id, body in rows]
    conn.executemany("INSERT INTO memories_fts (rowid, body) VALUES (:id, :body)", keyed)
    conn.executemany(_LOG, [{"id": row["id"]} for row in keyed])


def remove(conn: sqlite3.Connection, ids: Sequence[int]) -> None:
    """Take the memories ``ids`` out of the index (nothing happens for ids without a row)."""
    keyed = [{"id": memory_id} for memory_id in ids]
    conn.executemany("DELETE FROM memories_fts WHERE rowid = :id", keyed)
    conn.executemany(_LOG, keyed)


def replace(conn: sqlite3.Connection, memory_id: int, body: str | None) -> None:
    """Index ``memory_id`` with ``body`` from now on (None: take it out)."""
    remove(conn, [memory_id])
    if body is not None:
        add(conn, [(memory_id, body)])


def rebuild(conn: sqlite3.Connection, rows: Iterable[tuple[int, str]]) -> int:
    """Drop and recreate the index with ``(memory_id, body)`` rows; return how many were indexed.

    Dropping (rather than deleting rows) also recovers from a damaged index, whose shadow tables may
    refuse ordinary deletes. Every mirror reloads on its next sync (``fts_epoch``).
    """
    conn.execute("DROP TABLE IF EXISTS memories_fts")
    conn.execute(CREATE_TABLE)
    bump_epoch(conn)
    count = 0
    for batch in batches(rows, 500):
        conn.executemany("INSERT INTO memories_fts (rowid, body) VALUES (?, ?)", batch)
        count += len(batch)
    return count


def bump_epoch(conn: sqlite3.Connection) -> None:
    """Record that the index was rebuilt, so every mirror reloads on its next sync."""
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('fts_epoch', '1') "
        "ON CONFLICT(key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)"
    )
