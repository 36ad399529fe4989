"""``EmbeddingJobs`` on PostgreSQL: backfill, and re-embedding staged in ``reindex_vectors``."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg
from psycopg import sql

from robotmem.store.postgres.vectors import INDEX_NAME, as_vector, record_model, set_meta, stored_model
from robotmem.store.protocol import EmbeddedText
from robotmem.store.shared.rows import REINDEX_KEYS, model_meta


class Jobs:
    """``EmbeddingJobs`` on PostgreSQL."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self._conn = conn

    def count_without_vector(self) -> int:
        row = self._conn.execute(
            "SELECT COUNT(*) FROM memories WHERE embedding_model IS NULL AND status = 'active'"
        ).fetchone()
        return int(row[0]) if row else 0

    def without_vector(self, after_id: int, limit: int) -> list[tuple[int, str]]:
        rows = self._conn.execute(
            "SELECT id, content FROM memories WHERE embedding_model IS NULL AND status = 'active' AND id > %s "
            "ORDER BY id LIMIT %s",
            (after_id, limit),
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
            cursor = self._conn.execute(
                "UPDATE memories SET embedding = %s, embedding_model = %s WHERE id = %s AND status = 'active' "
                "AND embedding_model IS NULL AND content = %s",
                (as_vector(vector), model_id, memory_id, content),
            )
            count += cursor.rowcount
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
            "WHERE m.status = 'active' AND m.id > %s AND (r.memory_id IS NULL OR r.content != m.content) "
            "ORDER BY m.id LIMIT %s",
            (after_id, limit),
        )
        return [(int(r[0]), str(r[1])) for r in rows]

    def stage(self, items: Sequence[EmbeddedText], model_id: str) -> None:
        with self._conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO reindex_vectors (memory_id, model_id, content, embedding) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (memory_id) DO UPDATE SET model_id = EXCLUDED.model_id, content = EXCLUDED.content, "
                "embedding = EXCLUDED.embedding",
                [(memory_id, model_id, content, as_vector(vector)) for memory_id, content, vector in items],
            )

    def staging_progress(self) -> tuple[int, int]:
        staged = self._conn.execute(
            "SELECT COUNT(*) FROM memories m JOIN reindex_vectors r ON r.memory_id = m.id "
            "WHERE m.status = 'active' AND r.content = m.content"
        ).fetchone()
        total = self._conn.execute("SELECT COUNT(*) FROM memories WHERE status = 'active'").fetchone()
        return int(staged[0]) if staged else 0, int(total[0]) if total else 0

    def swap_reindex(self, model_id: str, dim: int) -> tuple[int, int]:
        conn = self._conn
        conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(INDEX_NAME)))
        conn.execute(
            "UPDATE memories SET embedding = NULL, embedding_model = NULL "
            "WHERE embedding IS NOT NULL OR embedding_model IS NOT NULL"
        )
        conn.execute("DELETE FROM memory_episode_vectors WHERE model_id != %s", (model_id,))
        stored = conn.execute(
            "UPDATE memories m SET embedding = r.embedding, embedding_model = r.model_id FROM reindex_vectors r "
            "WHERE r.memory_id = m.id AND m.status = 'active' AND r.content = m.content AND r.model_id = %s",
            (model_id,),
        ).rowcount
        record_model(conn, model_id, dim)
        conn.execute("DELETE FROM reindex_vectors")
        conn.execute("DELETE FROM meta WHERE key IN (%s, %s)", REINDEX_KEYS)
        return int(stored), self.count_without_vector()
