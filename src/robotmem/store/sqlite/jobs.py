"""``EmbeddingJobs`` on SQLite: backfill and re-embedding.

Backfill fills vectors of active memories that have none (``idx_mem_no_embed``). Re-embedding stages
the new model's vectors in ``reindex_vectors`` batch by batch and swaps them in with one transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from robotmem.query.vectors import encode_vector
from robotmem.store.protocol import EmbeddedText
from robotmem.store.shared.rows import REINDEX_KEYS, model_meta
from robotmem.store.sqlite.vectors import put, record_model, set_meta, stored_model


class Jobs:
    """``EmbeddingJobs`` on SQLite."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def count_without_vector(self) -> int:
        row = self._conn.execute(
            "SELECT COUNT(*) FROM memories INDEXED BY idx_mem_no_embed "
            "WHERE embedding_model IS NULL AND status = 'active'"
        ).fetchone()
        return int(row[0])

    def without_vector(self, after_id: int, limit: int) -> list[tuple[int, str]]:
        rows = self._conn.execute(
            "SELECT id, content FROM memories INDEXED BY idx_mem_no_embed "
            "WHERE embedding_model IS NULL AND status = 'active' AND id > :after ORDER BY id LIMIT :limit",
            {"after": after_id, "limit": limit},
        )
        return [(int(r[0]), str(r[1])) for r in rows]

    def store_backfilled(self, items: Sequence[EmbeddedText], model_id: str, dim: int) -> int:
        stored = stored_model(self._conn)
        if stored is not None and stored != (model_id, dim):
            return 0  # a re-embedding finished meanwhile
        if stored is None:
            record_model(self._conn, model_id, dim)
        count = 0
        for memory_id, content, vector in items:
            row = self._conn.execute(
                "SELECT 1 FROM memories WHERE id = :id AND status = 'active' AND embedding_model IS NULL "
                "AND content = :content",
                {"id": memory_id, "content": content},
            ).fetchone()
            if row is not None:
                put(self._conn, memory_id, vector, model_id)
                count += 1
        return count

    def reindex_target(self) -> tuple[str, int] | None:
        return stored_model(self._conn, REINDEX_KEYS)

    def begin_reindex(self, model_id: str, dim: int) -> bool:
        if self.reindex_target() == (model_id, dim):
            return True
        self._conn.execute("DELETE FROM reindex_vectors")
        set_meta(self._conn, model_meta(REINDEX_KEYS, model_id, dim))
        return False

    def unstaged(self, after_id: int, limit: int) -> list[tuple[int, str]]:
        rows = self._conn.execute(
            "SELECT m.id, m.content FROM memories m LEFT JOIN reindex_vectors r ON r.memory_id = m.id "
            "WHERE m.status = 'active' AND m.id > :after AND (r.memory_id IS NULL OR r.content != m.content) "
            "ORDER BY m.id LIMIT :limit",
            {"after": after_id, "limit": limit},
        )
        return [(int(r[0]), str(r[1])) for r in rows]

    def stage(self, items: Sequence[EmbeddedText], model_id: str) -> None:
        self._conn.executemany(
            "INSERT OR REPLACE INTO reindex_vectors (memory_id, model_id, content, embedding) "
            "VALUES (:id, :model, :content, :blob)",
            [
                {"id": memory_id, "model": model_id, "content": content, "blob": encode_vector(vector)}
                for memory_id, content, vector in items
            ],
        )

    def staging_progress(self) -> tuple[int, int]:
        staged = self._conn.execute(
            "SELECT COUNT(*) FROM memories m JOIN reindex_vectors r ON r.memory_id = m.id "
            "WHERE m.status = 'active' AND r.content = m.content"
        ).fetchone()
        total = self._conn.execute("SELECT COUNT(*) FROM memories WHERE status = 'active'").fetchone()
        return int(staged[0]), int(total[0])

    def swap_reindex(self, model_id: str, dim: int) -> tuple[int, int]:
        """Every replaced or dropped row takes a new ``seq``, so each process's ``MirroredIndex`` resyncs."""
        conn = self._conn
        staged = conn.execute(
            "SELECT r.memory_id, r.embedding FROM reindex_vectors r JOIN memories m ON m.id = r.memory_id "
            "WHERE m.status = 'active' AND r.content = m.content AND r.model_id = :model ORDER BY r.memory_id",
            {"model": model_id},
        ).fetchall()
        fresh = {int(memory_id) for memory_id, _ in staged}
        old = conn.execute(
            "SELECT memory_id FROM memory_vectors WHERE embedding IS NOT NULL ORDER BY memory_id"
        )
        # One row a statement, so that each takes the next seq.
        next_seq = "(SELECT COALESCE(MAX(seq), 0) + 1 FROM memory_vectors)"
        conn.executemany(
            f"UPDATE memory_vectors SET embedding = NULL, seq = {next_seq} WHERE memory_id = ?",
            [(memory_id,) for (memory_id,) in old if memory_id not in fresh],
        )
        conn.executemany(
            "INSERT OR REPLACE INTO memory_vectors (memory_id, seq, model_id, embedding) "
            f"VALUES (?, {next_seq}, ?, ?)",
            [(memory_id, model_id, blob) for memory_id, blob in staged],
        )
        conn.execute("UPDATE memories SET embedding_model = NULL WHERE embedding_model IS NOT NULL")
        conn.executemany(
            "UPDATE memories SET embedding_model = :model WHERE id = :id",
            [{"model": model_id, "id": memory_id} for memory_id in sorted(fresh)],
        )
        record_model(conn, model_id, dim)
        conn.execute("DELETE FROM reindex_vectors")
        conn.execute("DELETE FROM meta WHERE key IN (?, ?)", REINDEX_KEYS)
        return len(staged), self.count_without_vector()
