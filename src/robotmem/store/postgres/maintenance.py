"""Checks of the derived data against the memories, and their repair, on PostgreSQL: the ``Maintenance`` of
the storage contract.

The server checks its own files, so ``integrity`` reports ``ok`` when every table could be read, and its
columns are typed, so no value of a wrong kind can be stored to be rewritten. The checks and repairs whose
rules are the same on both engines are ``SharedMaintenance``'s; here are those of the stored terms, the
vectors (inline in their memory's row) and the context-value index.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg

from robotmem.query.vectors import MIN_NORM, UNIT_TOLERANCE
from robotmem.records import IntegrityReport
from robotmem.store.postgres import text_index
from robotmem.store.postgres.schema import SCHEMA_VERSION
from robotmem.store.postgres.vectors import stored_model
from robotmem.store.shared.checks import PYFORMAT, REFERENCE_CHECKS, SharedMaintenance
from robotmem.text.naming import context_values
from robotmem.text.tokens import index_text

# name: (id expression, FROM ... WHERE ...) of the offending rows.
_CHECKS: dict[str, tuple[str, str]] = {
    "fts_missing": (
        "m.id",
        "FROM memories m WHERE m.status = 'active' AND NOT EXISTS "
        "(SELECT 1 FROM memory_terms t WHERE t.memory_id = m.id)",
    ),
    "fts_orphaned": (
        "t.memory_id",
        "FROM memory_terms t WHERE NOT EXISTS "
        "(SELECT 1 FROM memories m WHERE m.id = t.memory_id AND m.status = 'active')",
    ),
    "vectors_stale": ("m.id", "FROM memories m WHERE m.embedding IS NOT NULL AND m.status != 'active'"),
    "vectors_orphaned": ("m.id", "FROM memories m WHERE FALSE"),  # vectors live in their memory's row
    "vectors_missing_for_marked": (
        "m.id",
        "FROM memories m WHERE m.embedding_model IS NOT NULL AND m.embedding IS NULL",
    ),
    "vectors_unmarked": (
        "m.id",
        "FROM memories m WHERE m.status = 'active' AND m.embedding IS NOT NULL AND m.embedding_model IS NULL",
    ),
    # Episode vectors of memories that are no longer active.
    "episode_vectors_stale": (
        "e.memory_id",
        "FROM memory_episode_vectors e JOIN memories m ON m.id = e.memory_id WHERE m.status != 'active'",
    ),
    **REFERENCE_CHECKS,
}


class Maintenance(SharedMaintenance):
    """``Maintenance`` on PostgreSQL: the index checks and their repair."""

    _mark = PYFORMAT
    _ROW_COUNTS = {"fts": "FROM memory_terms", "vectors": "FROM memories WHERE embedding IS NOT NULL"}

    def __init__(self, conn: psycopg.Connection) -> None:
        self._conn: psycopg.Connection = conn

    def check(self) -> IntegrityReport:
        """Run every check on one snapshot; the caller holds a read transaction."""
        return self._report(("ok",), foreign_keys=0)

    def _checks(self) -> dict[str, tuple[str, str]]:
        return _CHECKS

    def _checked_in_python(self) -> dict[str, list[Any]]:
        return {"context_values_stale": self._stale_values()}

    def _stale_values(self) -> list[int]:
        """Memories whose context-value rows differ from what their contexts give."""
        stored: dict[int, set[tuple[str, str]]] = {}
        for collection, value, memory_id in self._conn.execute(
            "SELECT collection, value, memory_id FROM context_values"
        ):
            stored.setdefault(int(memory_id), set()).add((str(collection), str(value)))
        expected = self._expected_values()
        return sorted(
            m for m in set(stored) | set(expected) if stored.get(m, set()) != expected.get(m, set())
        )

    def _expected_values(self) -> dict[int, set[tuple[str, str]]]:
        expected: dict[int, set[tuple[str, str]]] = {}
        for memory_id, collection, text in self._conn.execute(
            "SELECT id, collection, context_text FROM memories"
        ):
            try:
                context = json.loads(text or "{}")
            except ValueError:
                context = {}
            found = context_values(context) if isinstance(context, dict) else frozenset()
            expected[int(memory_id)] = {(str(collection), v) for v in found}
        return expected

    def _fts_stale(self) -> list[int]:
        stale: list[int] = []
        rows = self._conn.execute(
            "SELECT m.id, m.content, t.terms::text FROM memories m JOIN memory_terms t ON t.memory_id = m.id "
            "WHERE m.status = 'active' ORDER BY m.id"
        ).fetchall()
        for start in range(0, len(rows), 1000):
            block = rows[start : start + 1000]
            expected = [text_index.encode(index_text(content)).vector for _, content, _ in block]
            # The server's own text of each expected vector, so both sides are written alike.
            normalised = self._conn.execute(
                "SELECT e::tsvector::text FROM unnest(%s::text[]) WITH ORDINALITY AS x(e, n) ORDER BY n",
                (expected,),
            ).fetchall()
            stale += [
                int(memory_id)
                for (memory_id, _, terms), (want,) in zip(block, normalised, strict=True)
                if terms != want
            ]
        return stale

    def _repair_storage(self, report: IntegrityReport) -> dict[str, Any]:
        # The server keeps its own indexes, and a typed column holds no value of another type.
        return {"reindexed": False, "columns_rewritten": 0}

    def _rebuild_derived(self) -> dict[str, int]:
        return {
            "fts_rows_indexed": text_index.rebuild(self._conn, self._index_texts()),
            "context_values_indexed": self._rebuild_context_values(),
            **self._repair_vectors(),
        }

    def _rebuild_context_values(self) -> int:
        self._conn.execute("DELETE FROM context_values")
        rows = [(c, v, m) for m, pairs in self._expected_values().items() for c, v in pairs]
        if rows:
            self._conn.execute(
                "INSERT INTO context_values (collection, value, memory_id) "
                "SELECT * FROM unnest(%s::text[], %s::text[], %s::bigint[]) ON CONFLICT DO NOTHING",
                ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]),
            )
        return len(rows)

    def _repair_vectors(self) -> dict[str, int]:
        """Vectors of memories no longer active are dropped; a memory marked embedded without a vector is
        unmarked and left for backfill; an active memory with a vector is marked with the stored model."""
        # Memories whose vectors were dropped, counted once whether their vector, episode vector or both.
        stale = {
            int(row[0])
            for row in self._conn.execute(
                "UPDATE memories SET embedding = NULL, embedding_model = NULL "
                "WHERE embedding IS NOT NULL AND status != 'active' RETURNING id"
            )
        }
        stale.update(
            int(row[0])
            for row in self._conn.execute(
                "DELETE FROM memory_episode_vectors e USING memories m "
                "WHERE m.id = e.memory_id AND m.status != 'active' RETURNING e.memory_id"
            )
        )
        unmarked = self._conn.execute(
            "UPDATE memories SET embedding_model = NULL WHERE embedding_model IS NOT NULL AND embedding IS NULL"
        ).rowcount
        model = stored_model(self._conn)
        remarked = 0
        if model is not None:
            remarked = self._conn.execute(
                "UPDATE memories SET embedding_model = %s WHERE status = 'active' AND embedding IS NOT NULL "
                "AND embedding_model IS NULL",
                (model[0],),
            ).rowcount
        return {"vectors_tombstoned": len(stale), "vectors_unmarked": unmarked, "vectors_remarked": remarked}

    def _vector_rule(self) -> tuple[str, dict[str, Any]] | None:
        """The SQL condition of a stored vector (``embedding``) that breaks the vector rule: another dimension
        than the model's, all zeros, or a length off 1 (pgvector itself refuses NaN and infinity), with its
        parameters; None before the first vector. Checked by the server: the vectors stay where they are."""
        model = stored_model(self._conn)
        if model is None:
            return None
        condition = (
            "(vector_dims(embedding) != %(dim)s OR vector_norm(embedding) < %(min_norm)s "
            "OR abs(vector_norm(embedding) - 1) > %(tolerance)s)"
        )
        return condition, {
            "model": model[0],
            "dim": model[1],
            "min_norm": MIN_NORM,
            "tolerance": UNIT_TOLERANCE,
        }

    def _invalid_vectors(self) -> list[int]:
        rule = self._vector_rule()
        if rule is None:
            return []
        condition, params = rule
        rows = self._conn.execute(
            "SELECT id FROM memories WHERE embedding IS NOT NULL AND embedding_model = %(model)s "
            f"AND {condition} UNION SELECT memory_id FROM memory_episode_vectors WHERE model_id = %(model)s "
            f"AND {condition} ORDER BY 1",
            params,
        ).fetchall()
        return [int(r[0]) for r in rows]

    def _repair_vector_values(self) -> dict[str, int]:
        rule = self._vector_rule()
        if rule is None:
            return {"vectors_renormalised": 0, "vectors_dropped": 0}
        condition, params = rule
        fixable = "vector_dims(embedding) = %(dim)s AND vector_norm(embedding) >= %(min_norm)s"
        renormalised = dropped = 0
        for table, marked in (("memories", "embedding_model"), ("memory_episode_vectors", "model_id")):
            where = f"{marked} = %(model)s AND embedding IS NOT NULL AND {condition}"
            renormalised += self._conn.execute(
                f"UPDATE {table} SET embedding = l2_normalize(embedding) WHERE {where} AND {fixable}", params
            ).rowcount
            drop = (
                f"UPDATE memories SET embedding = NULL, embedding_model = NULL WHERE {where}"
                if table == "memories"
                else f"DELETE FROM memory_episode_vectors WHERE {where}"
            )
            dropped += self._conn.execute(drop, params).rowcount
        return {"vectors_renormalised": renormalised, "vectors_dropped": dropped}

    def _schema_state(self) -> tuple[int, int, str]:
        version = self._conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return SCHEMA_VERSION, int(version[0]) if version else 0, "postgresql"

    def _stored_model(self) -> tuple[str, int] | None:
        return stored_model(self._conn)
