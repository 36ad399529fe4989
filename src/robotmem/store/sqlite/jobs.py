"""SQL of backfill and re-embedding.

Backfill fills vectors of active memories that have none (``idx_mem_no_embed``). Re-embedding stages
the new model's vectors in ``reindex_vectors`` batch by batch and swaps them in with one transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from robotmem.query.vectors import FloatArray, encode_vector
from robotmem.store.protocol import EmbeddedText
from robotmem.store.sqlite import vectors

_REINDEX_MODEL_KEY = "reindex_model_id"
_REINDEX_DIM_KEY = "reindex_dim"


# ---- backfill --------------------------------------------------------------------------------------


def count_without_vector(conn: sqlite3.Connection) -> int:
    """Return how many active memories have no vector (the rows of ``idx_mem_no_embed``)."""
    row = conn.execute(
        "SELECT COUNT(*) FROM memories INDEXED BY idx_mem_no_embed WHERE embedding_model IS NULL AND status = 'active'"
    ).fetchone()
    return int(row[0])


def without_vector(conn: sqlite3.Connection, after_id: int, limit: int) -> list[tuple[int, str]]:
    """Return up to ``limit`` ``(id, content)`` of active memories without a vector and id above ``after_id``."""
    rows = conn.execute(
        "SELECT id, content FROM memories INDEXED BY idx_mem_no_embed "
        "WHERE embedding_model IS NULL AND status = 'active' AND id > :after ORDER BY id LIMIT :limit",
        {"after": after_id, "limit": limit},
    )
    return [(int(r[0]), str(r[1])) for r in rows]


def store_backfilled(
    conn: sqlite3.Connection, items: Sequence[tuple[int, str, FloatArray]], model_id: str, dim: int
) -> int:
    """Store vectors for memories still active, unembedded and unchanged; return how many were stored.

    Stores nothing when the database meanwhile recorded another model (a re-embedding finished).
    """
    stored = vectors.stored_model(conn)
    if stored is not None and stored != (model_id, dim):
        return 0
    if stored is None:
        vectors.record_model(conn, model_id, dim)
    count = 0
    for memory_id, content, vector in items:
        row = conn.execute(
            "SELECT 1 FROM memories WHERE id = :id AND status = 'active' AND embedding_model IS NULL "
            "AND content = :content",
            {"id": memory_id, "content": content},
        ).fetchone()
        if row is not None:
            vectors.put(conn, memory_id, vector, model_id)
            count += 1
    return count


# ---- re-embedding ----------------------------------------------------------------------------------


def reindex_target(conn: sqlite3.Connection) -> tuple[str, int] | None:
    """Return the ``(model_id, dim)`` of an unfinished re-embedding, or None."""
    rows = dict(
        conn.execute(
            "SELECT key, value FROM meta WHERE key IN (:model, :dim)",
            {"model": _REINDEX_MODEL_KEY, "dim": _REINDEX_DIM_KEY},
        ).fetchall()
    )
    if _REINDEX_MODEL_KEY not in rows:
        return None
    return str(rows[_REINDEX_MODEL_KEY]), int(rows.get(_REINDEX_DIM_KEY, 0))


def begin_reindex(conn: sqlite3.Connection, model_id: str, dim: int) -> bool:
    """Start or continue staging vectors of ``model_id``; return True when earlier staged rows are kept.

    Rows staged for another model are discarded.
    """
    if reindex_target(conn) == (model_id, dim):
        return True
    conn.execute("DELETE FROM reindex_vectors")
    conn.executemany(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (:key, :value)",
        [{"key": _REINDEX_MODEL_KEY, "value": model_id}, {"key": _REINDEX_DIM_KEY, "value": str(dim)}],
    )
    return False


def unstaged(conn: sqlite3.Connection, after_id: int, limit: int) -> list[tuple[int, str]]:
    """Return up to ``limit`` ``(id, content)`` of active memories above ``after_id`` lacking a staged vector.

    A vector staged for an older text of the memory does not count.
    """
    rows = conn.execute(
        "SELECT m.id, m.content FROM memories m LEFT JOIN reindex_vectors r ON r.memory_id = m.id "
        "WHERE m.status = 'active' AND m.id > :after AND (r.memory_id IS NULL OR r.content != m.content) "
        "ORDER BY m.id LIMIT :limit",
        {"after": after_id, "limit": limit},
    )
    return [(int(r[0]), str(r[1])) for r in rows]


def stage(conn: sqlite3.Connection, items: Sequence[tuple[int, str, FloatArray]], model_id: str) -> None:
    """Stage the vectors of ``items`` (``(id, embedded text, vector)``) for the swap."""
    conn.executemany(
        "INSERT OR REPLACE INTO reindex_vectors (memory_id, model_id, content, embedding) "
        "VALUES (:id, :model, :content, :blob)",
        [
            {"id": memory_id, "model": model_id, "content": content, "blob": encode_vector(vector)}
            for memory_id, content, vector in items
        ],
    )


def staging_progress(conn: sqlite3.Connection) -> tuple[int, int]:
    """Return ``(staged, total)``: active memories with a valid staged vector, and all active memories."""
    staged = conn.execute(
        "SELECT COUNT(*) FROM memories m JOIN reindex_vectors r ON r.memory_id = m.id "
        "WHERE m.status = 'active' AND r.content = m.content"
    ).fetchone()[0]
    total = conn.execute("SELECT COUNT(*) FROM memories WHERE status = 'active'").fetchone()[0]
    return int(staged), int(total)


def swap_reindex(conn: sqlite3.Connection, model_id: str, dim: int) -> tuple[int, int]:
    """Replace every stored vector by the staged set and record ``model_id`` as the database's model.

    Every replaced or dropped row takes a new ``seq`` so each process's ``MirroredIndex`` resyncs.
    Active memories without a valid staged vector (written during the run) are left for backfill.
    Returns ``(vectors stored, active memories left without a vector)``.
    """
    staged = conn.execute(
        "SELECT r.memory_id, r.embedding FROM reindex_vectors r JOIN memories m ON m.id = r.memory_id "
        "WHERE m.status = 'active' AND r.content = m.content AND r.model_id = :model ORDER BY r.memory_id",
        {"model": model_id},
    ).fetchall()
    fresh = {int(memory_id) for memory_id, _ in staged}
    seq = int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM memory_vectors").fetchone()[0])
    old = [
        int(r[0])
        for r in conn.execute(
            "SELECT memory_id FROM memory_vectors WHERE embedding IS NOT NULL ORDER BY memory_id"
        )
    ]
    tombstones = []
    for memory_id in old:
        if memory_id not in fresh:
            seq += 1
            tombstones.append({"id": memory_id, "seq": seq})
    conn.executemany(
        "UPDATE memory_vectors SET embedding = NULL, seq = :seq WHERE memory_id = :id", tombstones
    )
    rows = []
    for memory_id, blob in staged:
        seq += 1
        rows.append({"id": memory_id, "seq": seq, "model": model_id, "blob": blob})
    conn.executemany(
        "INSERT OR REPLACE INTO memory_vectors (memory_id, seq, model_id, embedding) VALUES (:id, :seq, :model, :blob)",
        rows,
    )
    conn.execute("UPDATE memories SET embedding_model = NULL WHERE embedding_model IS NOT NULL")
    conn.executemany(
        "UPDATE memories SET embedding_model = :model WHERE id = :id",
        [{"model": model_id, "id": memory_id} for memory_id in sorted(fresh)],
    )
    vectors.record_model(conn, model_id, dim)
    conn.execute("DELETE FROM reindex_vectors")
    conn.execute(
        "DELETE FROM meta WHERE key IN (:model, :dim)", {"model": _REINDEX_MODEL_KEY, "dim": _REINDEX_DIM_KEY}
    )
    return len(rows), count_without_vector(conn)


class Jobs:
    """``EmbeddingJobs`` on SQLite."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def count_without_vector(self) -> int:
        return count_without_vector(self._conn)

    def without_vector(self, after_id: int, limit: int) -> list[tuple[int, str]]:
        return without_vector(self._conn, after_id, limit)

    def store_backfilled(self, items: Sequence[EmbeddedText], model_id: str, dim: int) -> int:
        return store_backfilled(self._conn, items, model_id, dim)

    def reindex_target(self) -> tuple[str, int] | None:
        return reindex_target(self._conn)

    def begin_reindex(self, model_id: str, dim: int) -> bool:
        return begin_reindex(self._conn, model_id, dim)

    def unstaged(self, after_id: int, limit: int) -> list[tuple[int, str]]:
        return unstaged(self._conn, after_id, limit)

    def stage(self, items: Sequence[EmbeddedText], model_id: str) -> None:
        stage(self._conn, items, model_id)

    def staging_progress(self) -> tuple[int, int]:
        return staging_progress(self._conn)

    def swap_reindex(self, model_id: str, dim: int) -> tuple[int, int]:
        return swap_reindex(self._conn, model_id, dim)
