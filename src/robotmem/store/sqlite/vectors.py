"""``VectorTable`` on SQLite: stored vectors, and the in-process index that mirrors them.

Every vector write takes the next ``seq``; a tombstone (NULL embedding) takes one too. Any process can
bring its index up to date by reading the rows with ``seq`` above the last it saw, so several
processes sharing one file see each other's writes without reloading everything. The statements other
modules run too (``put``, ``drop``, the recorded model in ``meta``) are functions of the connection.
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
from collections.abc import Callable, Collection, Mapping

import numpy as np

from robotmem.query.vectors import FloatArray, VectorIndex, encode_vector
from robotmem.store.protocol import VectorQuery
from robotmem.store.shared.rows import MODEL_KEYS, model_meta, recorded_model

EPISODE_TABLE = "memory_episode_vectors"


def put(conn: sqlite3.Connection, memory_id: int, vector: FloatArray, model_id: str) -> None:
    """Store ``vector`` for ``memory_id`` and mark the memory embedded with ``model_id``."""
    conn.execute(
        "INSERT OR REPLACE INTO memory_vectors (memory_id, seq, model_id, embedding) "
        "VALUES (:id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM memory_vectors), :model, :blob)",
        {"id": memory_id, "model": model_id, "blob": encode_vector(vector)},
    )
    conn.execute(
        "UPDATE memories SET embedding_model = :model WHERE id = :id", {"id": memory_id, "model": model_id}
    )


def put_episode(conn: sqlite3.Connection, memory_id: int, vector: FloatArray, model_id: str) -> None:
    """Store the episode vector of ``memory_id`` (its text after its predecessor's, embedded together)."""
    conn.execute(
        f"INSERT OR REPLACE INTO {EPISODE_TABLE} (memory_id, seq, model_id, embedding) "
        f"VALUES (:id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM {EPISODE_TABLE}), :model, :blob)",
        {"id": memory_id, "model": model_id, "blob": encode_vector(vector)},
    )


def drop(conn: sqlite3.Connection, memory_id: int) -> None:
    """Replace the vectors of ``memory_id`` (its own and its episode vector) by tombstones so every index
    forgets them."""
    for table in ("memory_vectors", EPISODE_TABLE):
        conn.execute(
            f"UPDATE {table} SET embedding = NULL, seq = (SELECT COALESCE(MAX(seq), 0) + 1 FROM {table}) "
            "WHERE memory_id = :id AND embedding IS NOT NULL",
            {"id": memory_id},
        )
    conn.execute("UPDATE memories SET embedding_model = NULL WHERE id = :id", {"id": memory_id})


def stored_model(conn: sqlite3.Connection, keys: tuple[str, str] = MODEL_KEYS) -> tuple[str, int] | None:
    """Return the ``(model_id, dim)`` recorded under ``keys`` of ``meta`` (by default the model of the
    database's vectors), or None before one is."""
    meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN (?, ?)", keys).fetchall())
    return recorded_model(meta, keys)


def set_meta(conn: sqlite3.Connection, values: Mapping[str, str]) -> None:
    """Write ``values`` (key → value) to ``meta``."""
    conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", list(values.items()))


def record_model(conn: sqlite3.Connection, model_id: str, dim: int) -> None:
    """Record the model whose vectors this database holds."""
    set_meta(conn, model_meta(MODEL_KEYS, model_id, dim))


class MirroredIndex:
    """A ``VectorIndex`` kept in step with ``memory_vectors`` (or ``table``, of the same shape) of one model
    by incremental sync."""

    def __init__(self, model_id: str, dim: int, table: str = "memory_vectors") -> None:
        self.model_id = model_id
        self.table = table
        self.index = VectorIndex(dim)
        self._seen_seq = 0
        self._lock = threading.Lock()

    def sync(self, conn: sqlite3.Connection) -> None:
        """Apply every vector row written since the last sync (by this or any other process)."""
        with self._lock:
            dim = self.index.dim
            if self._seen_seq == 0:
                # First load: rows streamed into one matrix (one row per memory: memory_id is the key).
                wanted = {"model": self.model_id, "size": 4 * dim}
                live = "embedding IS NOT NULL AND model_id = :model AND length(embedding) = :size"
                table = self.table
                count = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {live}", wanted).fetchone()[0]
                last = conn.execute(f"SELECT COALESCE(MAX(seq), 0) FROM {table}").fetchone()[0]
                self.index.load(
                    conn.execute(f"SELECT memory_id, embedding FROM {table} WHERE {live}", wanted),
                    int(count),
                )
                self._seen_seq = int(last)
                return
            rows = conn.execute(
                f"SELECT memory_id, seq, model_id, embedding FROM {self.table} WHERE seq > :seen ORDER BY seq",
                {"seen": self._seen_seq},
            ).fetchall()
            for memory_id, seq, model_id, blob in rows:
                if blob is None or model_id != self.model_id or len(blob) != 4 * dim:
                    self.index.remove(memory_id)
                else:
                    self.index.upsert(memory_id, np.frombuffer(blob, dtype="<f4"))
                self._seen_seq = seq

    def vector(self, memory_id: int) -> FloatArray | None:
        """Return the indexed vector of ``memory_id`` (after a sync), or None."""
        return self.index.vector(memory_id)


class Vectors:
    """``VectorTable`` on SQLite: blob rows, searched through the process's synced in-memory index."""

    def __init__(self, conn: sqlite3.Connection, index_for: Callable[[str, int], MirroredIndex]) -> None:
        self._conn = conn
        self._index_for = index_for

    def put(self, memory_id: int, vector: FloatArray, model_id: str) -> None:
        put(self._conn, memory_id, vector, model_id)

    def put_episode(self, memory_id: int, vector: FloatArray, model_id: str) -> None:
        put_episode(self._conn, memory_id, vector, model_id)

    def drop(self, memory_id: int) -> None:
        drop(self._conn, memory_id)

    def stored_model(self) -> tuple[str, int] | None:
        return stored_model(self._conn)

    def record_model(self, model_id: str, dim: int) -> None:
        record_model(self._conn, model_id, dim)

    def most_similar(self, query: VectorQuery, first: int, min_similarity: float) -> list[tuple[int, float]]:
        index = self._index_for(query.model_id, query.dim)
        index.sync(self._conn)
        found: list[tuple[int, float]] = []
        for memory_id, similarity in itertools.islice(index.index.ranked(query.vector, first=first), first):
            if similarity < min_similarity:
                break
            found.append((int(memory_id), float(similarity)))
        return found

    def cosines(self, ids: Collection[int], query: VectorQuery) -> dict[int, float]:
        index = self._index_for(query.model_id, query.dim)
        index.sync(self._conn)
        wanted = np.fromiter((int(m) for m in ids), dtype=np.int64, count=len(ids))
        found, scores = index.index.similarities_among(query.vector, wanted)
        return dict(zip(found.tolist(), scores.astype(np.float64).tolist(), strict=True))
