"""``VectorTable`` on PostgreSQL: vectors inline in ``memories.embedding``, searched exactly or through an HNSW index.

A store holds vectors of one model (``meta.embed_model_id``/``embed_dim``). Recording the model creates
an HNSW index (cosine) over the active memories' vectors of that dimension; a re-embedding swaps the
vectors and rebuilds it. Which search runs is the store's choice (``search_vectors``):

- a small store (fewer than ``EXACT_BELOW`` rows) is searched exactly: every vector that passes the
  scope is compared, which is fast at that size and gives the same order as the SQLite engine;
- a large one asks the HNSW index with iterative scans (pgvector 0.8), which keeps walking the graph
  until enough rows pass the scope's filter; when the walk stops short of ``depth`` (a selective
  filter), the search is repeated exactly over the rows the filter passes. So a recall returns ``n``
  memories whenever ``n`` pass its filters, whichever way the index was walked;
- a recall confined to a short time window (``is_short_window``: below ``WINDOW_EXACT_BELOW`` rows) is searched
  exactly at once: the walk would pass every memory outside the window before it found ``depth``.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
import psycopg
from pgvector import Vector
from psycopg import sql

from robotmem.store.protocol import FloatArray, VectorQuery
from robotmem.store.shared.rows import MODEL_KEYS, model_meta, recorded_model

# Below this many rows (the planner's estimate) vector search is exact.
EXACT_BELOW = 20_000
# A recall confined to a time window holding fewer rows than this (the planner's estimate) is searched
# exactly: reading the window is cheaper than walking the index past every memory outside it.
WINDOW_EXACT_BELOW = 50_000
INDEX_NAME = "memories_embedding_hnsw"


def as_vector(vector: FloatArray) -> Vector:
    """The pgvector value of a numpy vector."""
    return Vector(np.asarray(vector, dtype=np.float32))


def stored_model(conn: psycopg.Connection, keys: tuple[str, str] = MODEL_KEYS) -> tuple[str, int] | None:
    """Return the ``(model_id, dim)`` recorded under ``keys`` of ``meta`` (by default the model of the
    store's vectors), or None before one is."""
    meta: dict[str, Any] = dict(
        conn.execute("SELECT key, value FROM meta WHERE key IN (%s, %s)", keys).fetchall()
    )
    return recorded_model(meta, keys)


def set_meta(conn: psycopg.Connection, values: Mapping[str, str]) -> None:
    """Write ``values`` (key → value) to ``meta``."""
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            list(values.items()),
        )


def record_model(conn: psycopg.Connection, model_id: str, dim: int) -> None:
    """Record the store's model and (re)create the HNSW index for its dimension."""
    set_meta(conn, model_meta(MODEL_KEYS, model_id, dim))
    conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(INDEX_NAME)))
    if 0 < dim <= 16000:
        # Only rows of this dimension: a re-embedding rebuilds the index in the transaction that swapped
        # the vectors, where the old row versions (another dimension) are still indexed, and a process
        # still on the old model may write a vector of the old dimension; neither may fail the cast.
        # ``search_vectors`` names the same ``vector_dims`` condition, so the planner may use the index.
        conn.execute(
            sql.SQL(
                "CREATE INDEX {} ON memories USING hnsw ((embedding::vector({})) vector_cosine_ops) "
                "WHERE status = 'active' AND vector_dims(embedding) = {}"
            ).format(sql.Identifier(INDEX_NAME), sql.Literal(dim), sql.Literal(dim))
        )


def is_short_window(conn: psycopg.Connection, collection: str, where: str, params: dict[str, Any]) -> bool:
    """True when the planner puts fewer than ``WINDOW_EXACT_BELOW`` memories of ``collection`` in ``where``
    (a time window's conditions alone): their vectors are then searched exactly."""
    row = conn.execute(
        f"EXPLAIN (FORMAT JSON) SELECT 1 FROM memories m WHERE m.collection = %(w_collection)s AND {where}",
        {**params, "w_collection": collection},
    ).fetchone()
    rows = float(row[0][0]["Plan"]["Plan Rows"]) if row else math.inf
    return rows < WINDOW_EXACT_BELOW


def is_small(conn: psycopg.Connection) -> bool:
    """True when the planner estimates fewer than ``EXACT_BELOW`` memories (exact search is cheap)."""
    row = conn.execute("SELECT reltuples FROM pg_class WHERE oid = 'memories'::regclass").fetchone()
    return row is None or float(row[0]) < EXACT_BELOW


# Planner switches that leave the HNSW index as the only way to deliver rows in distance order.
_WALK_INDEX = ("enable_seqscan", "enable_bitmapscan", "enable_sort")


def set_local(conn: psycopg.Connection, values: dict[str, str]) -> None:
    """``SET LOCAL`` each setting, in one round trip."""
    conn.execute(
        "SELECT " + ", ".join("set_config(%s, %s, true)" for _ in values),
        [part for pair in values.items() for part in pair],
    )


def search_vectors(
    conn: psycopg.Connection,
    query: VectorQuery,
    where: str,
    params: dict[str, Any],
    depth: int,
    min_similarity: float | None = None,
    hint: str | None = None,
    exact: bool = False,
) -> list[tuple[int, float]]:
    """Return up to ``depth`` ``(id, cosine)`` of rows passing ``where`` with a vector of the query's model,
    most similar first (ties by id), at or above ``min_similarity`` when given.

    ``hint`` (an index-answerable condition every passing row meets) lets the exact search of a
    selective filter read only the rows the index names; ``exact`` searches exactly without walking the
    index first (the caller knows few rows can pass).
    """
    if depth <= 0:
        return []
    dim = int(query.dim)
    bound = {**params, "v_query": as_vector(query.vector), "v_model": query.model_id, "v_depth": depth}
    scope = f"{where} AND {hint}" if hint else where
    base = (
        "FROM memories m WHERE m.embedding IS NOT NULL AND m.embedding_model = %(v_model)s "
        f"AND vector_dims(m.embedding) = {dim} AND {scope} "
    )
    if not exact and not is_small(conn):
        # Walk the HNSW index (its expression, and no other way to order rows); iterative scans go
        # on until depth rows pass the filter or hnsw.max_scan_tuples is reached.
        walk = dict.fromkeys(_WALK_INDEX, "off")
        walk["hnsw.iterative_scan"] = "relaxed_order"
        walk["hnsw.ef_search"] = str(max(40, min(1000, 2 * depth)))
        # The switches, the walk and the switches back in one round trip (a failed walk aborts the
        # transaction, which drops the switches with it).
        with conn.pipeline():
            set_local(conn, walk)
            found = conn.execute(
                f"SELECT m.id, (m.embedding::vector({dim})) <=> %(v_query)s::vector({dim}) AS d "
                + base
                + f"ORDER BY (m.embedding::vector({dim})) <=> %(v_query)s::vector({dim}) LIMIT %(v_depth)s",
                bound,
            )
            set_local(conn, dict.fromkeys(_WALK_INDEX, "on"))
        walked = _ranked(found.fetchall())
        kept = [(m, s) for m, s in walked if min_similarity is None or s >= min_similarity]
        if len(walked) >= depth or len(kept) < len(walked):
            return kept  # the walk found depth rows, or reached below the similarity asked for
    # Exact: the distance to every row that passes (the plain expression matches no vector index).
    cut = ""
    if min_similarity is not None:
        cut = "AND (m.embedding <=> %(v_query)s) <= %(v_distance)s "
        bound["v_distance"] = 1.0 - min_similarity
    rows = conn.execute(
        "SELECT m.id, m.embedding <=> %(v_query)s AS d " + base + cut + "ORDER BY d, m.id LIMIT %(v_depth)s",
        bound,
    ).fetchall()
    return _ranked(rows)


def search_episode_vectors(
    conn: psycopg.Connection, query: VectorQuery, where: str, params: dict[str, Any], depth: int
) -> list[tuple[int, float]]:
    """``search_vectors`` over the episode vectors (an optional channel, searched exactly)."""
    if depth <= 0:
        return []
    rows = conn.execute(
        "SELECT m.id, e.embedding <=> %(v_query)s AS d FROM memory_episode_vectors e "
        "JOIN memories m ON m.id = e.memory_id WHERE e.model_id = %(v_model)s "
        f"AND vector_dims(e.embedding) = {int(query.dim)} AND {where} ORDER BY d, m.id LIMIT %(v_depth)s",
        {**params, "v_query": as_vector(query.vector), "v_model": query.model_id, "v_depth": depth},
    ).fetchall()
    return _ranked(rows)


def _ranked(rows: Sequence[tuple[Any, Any]]) -> list[tuple[int, float]]:
    scored = [(int(m), 1.0 - float(d)) for m, d in rows if d is not None]
    scored.sort(key=lambda item: (-item[1], item[0]))
    return scored


class Vectors:
    """``VectorTable`` on PostgreSQL."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self._conn = conn

    def put(self, memory_id: int, vector: FloatArray, model_id: str) -> None:
        self._conn.execute(
            "UPDATE memories SET embedding = %s, embedding_model = %s WHERE id = %s",
            (as_vector(vector), model_id, memory_id),
        )

    def put_episode(self, memory_id: int, vector: FloatArray, model_id: str) -> None:
        self._conn.execute(
            "INSERT INTO memory_episode_vectors (memory_id, model_id, embedding) VALUES (%s, %s, %s) "
            "ON CONFLICT (memory_id) DO UPDATE SET model_id = EXCLUDED.model_id, embedding = EXCLUDED.embedding",
            (memory_id, model_id, as_vector(vector)),
        )

    def drop(self, memory_id: int) -> None:
        self._conn.execute(
            "UPDATE memories SET embedding = NULL, embedding_model = NULL WHERE id = %s", (memory_id,)
        )
        self._conn.execute("DELETE FROM memory_episode_vectors WHERE memory_id = %s", (memory_id,))

    def stored_model(self) -> tuple[str, int] | None:
        return stored_model(self._conn)

    def record_model(self, model_id: str, dim: int) -> None:
        record_model(self._conn, model_id, dim)

    def most_similar(self, query: VectorQuery, first: int, min_similarity: float) -> list[tuple[int, float]]:
        return search_vectors(self._conn, query, "m.status = 'active'", {}, first, min_similarity)

    def cosines(self, ids: Collection[int], query: VectorQuery) -> dict[int, float]:
        wanted = sorted({int(m) for m in ids})
        if not wanted:
            return {}
        dim = int(query.dim)
        rows = self._conn.execute(
            f"SELECT m.id, m.embedding::vector({dim}) <=> %(v_query)s::vector({dim}) FROM memories m "
            "WHERE m.id = ANY(%(v_ids)s) AND m.embedding IS NOT NULL AND m.embedding_model = %(v_model)s "
            f"AND vector_dims(m.embedding) = {dim}",
            {"v_ids": wanted, "v_query": as_vector(query.vector), "v_model": query.model_id},
        ).fetchall()
        return {int(m): 1.0 - float(d) for m, d in rows if d is not None}
