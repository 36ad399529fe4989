"""Checks of the derived data against the memories, and their repair, on PostgreSQL: the ``Maintenance`` of
the storage contract. The server checks its own files, so ``integrity`` reports ``ok`` when every table
could be read."""

from __future__ import annotations

import json
from typing import Any

import psycopg

from robotmem.formats.validation import is_stored_timestamp, read_timestamp
from robotmem.records import IndexHealth, IntegrityReport
from robotmem.store.postgres import text_index
from robotmem.store.postgres.schema import SCHEMA_VERSION
from robotmem.store.postgres.vectors import stored_model
from robotmem.text.naming import context_values
from robotmem.text.tokens import index_text

_CHECKS: dict[str, tuple[str, str]] = {
    # name: (id expression, FROM ... WHERE ...) of the offending rows
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
    # Episode vectors of memories that are no longer active.
    "episode_vectors_stale": (
        "e.memory_id",
        "FROM memory_episode_vectors e JOIN memories m ON m.id = e.memory_id WHERE m.status != 'active'",
    ),
    "vectors_missing_for_marked": (
        "m.id",
        "FROM memories m WHERE m.embedding_model IS NOT NULL AND m.embedding IS NULL",
    ),
    "vectors_unmarked": (
        "m.id",
        "FROM memories m WHERE m.status = 'active' AND m.embedding IS NOT NULL AND m.embedding_model IS NULL",
    ),
    "tags_dangling": (
        "DISTINCT t.memory_id",
        "FROM memory_tags t WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = t.memory_id)",
    ),
    "payloads_dangling": (
        "p.memory_id",
        "FROM perception_payloads p WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = p.memory_id)",
    ),
    "sessions_missing": (
        "s.id",
        "FROM (SELECT DISTINCT session_id AS id FROM memories WHERE session_id IS NOT NULL "
        "UNION SELECT session_id FROM session_outcomes) s WHERE NOT EXISTS "
        "(SELECT 1 FROM sessions x WHERE x.id = s.id)",
    ),
    "sessions_inconsistent": (
        "s.id",
        "FROM sessions s WHERE (s.status = 'ended') != (s.ended_at IS NOT NULL)",
    ),
    "supersede_dangling": (
        "m.id",
        "FROM memories m WHERE m.superseded_by IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM memories r WHERE r.id = m.superseded_by)",
    ),
    # A superseded memory whose successor is gone or is itself: hidden with nothing in its place.
    "superseded_without_successor": (
        "m.id",
        "FROM memories m WHERE m.status = 'superseded' AND (m.superseded_by IS NULL OR m.superseded_by = m.id "
        "OR NOT EXISTS (SELECT 1 FROM memories r WHERE r.id = m.superseded_by))",
    ),
    "confidence_invalid": (
        "m.id",
        "FROM memories m WHERE NOT (m.confidence BETWEEN 0 AND 1) OR NOT (m.base_confidence BETWEEN 0 AND 1)",
    ),
}
SAMPLE = 20


def _is_time(value: Any) -> bool:
    return value is not None and is_stored_timestamp(value)


class Maintenance:
    """``Maintenance`` on PostgreSQL: the index checks and their repair."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self._conn = conn

    def _one(self, sql: str) -> int:
        row = self._conn.execute(sql).fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def _bad_times(self) -> tuple[list[int], list[str]]:
        memories = [
            int(memory_id)
            for memory_id, created, updated, accessed in self._conn.execute(
                "SELECT id, created_at, updated_at, last_accessed FROM memories ORDER BY id"
            )
            if not (_is_time(created) and _is_time(updated) and (accessed is None or _is_time(accessed)))
        ]
        sessions = [
            str(session_id)
            for session_id, created, ended in self._conn.execute(
                "SELECT id, created_at, ended_at FROM sessions ORDER BY id"
            )
            if not (_is_time(created) and (ended is None or _is_time(ended)))
        ]
        return memories, sessions

    def _fts_stale(self) -> list[int]:
        """Active memories whose stored terms differ from what their content gives now."""
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

    def check(self) -> IntegrityReport:
        counts: dict[str, int] = {}
        samples: dict[str, list[Any]] = {}
        for name, (column, body) in _CHECKS.items():
            counts[name] = self._one(f"SELECT COUNT(*) FROM (SELECT {column} {body}) x")
            samples[name] = [r[0] for r in self._conn.execute(f"SELECT {column} {body} LIMIT {SAMPLE}")]
        bad_memories, bad_sessions = self._bad_times()
        counts["times_invalid"], samples["times_invalid"] = len(bad_memories), bad_memories[:SAMPLE]
        counts["session_times_invalid"], samples["session_times_invalid"] = (
            len(bad_sessions),
            bad_sessions[:SAMPLE],
        )
        stale_values = self._stale_values()
        counts["context_values_stale"], samples["context_values_stale"] = (
            len(stale_values),
            stale_values[:SAMPLE],
        )
        stale = self._fts_stale()
        samples["fts_stale"] = stale[:SAMPLE]
        rows = {
            "memories": self._one("SELECT COUNT(*) FROM memories"),
            "active": self._one("SELECT COUNT(*) FROM memories WHERE status = 'active'"),
            "fts": self._one("SELECT COUNT(*) FROM memory_terms"),
            "vectors": self._one("SELECT COUNT(*) FROM memories WHERE embedding IS NOT NULL"),
            "sessions": self._one("SELECT COUNT(*) FROM sessions"),
        }
        return IntegrityReport(
            integrity=("ok",),
            foreign_keys=0,
            counts=counts,
            samples=samples,
            fts_stale=len(stale),
            active_without_vector=self._one(
                "SELECT COUNT(*) FROM memories WHERE status = 'active' AND embedding_model IS NULL"
            ),
            rows=rows,
        )

    def repair(self, report: IntegrityReport, now: str) -> dict[str, Any]:
        conn = self._conn
        # Columns are typed on the server: a value of the wrong type cannot be stored to be rewritten.
        actions: dict[str, Any] = {"reindexed": False, "columns_rewritten": 0}
        # References and values first (a restored memory needs its text indexed), then the derived indexes.
        actions.update(self._repair_references(now))
        actions.update(self._repair_values(now))
        rows = conn.execute("SELECT id, content FROM memories WHERE status = 'active' ORDER BY id").fetchall()
        actions["fts_rows_indexed"] = text_index.rebuild(conn, ((int(m), index_text(c)) for m, c in rows))
        # Memories whose vectors were dropped, counted once whether their vector, episode vector or both.
        stale = {
            int(r[0])
            for r in conn.execute(
                "UPDATE memories SET embedding = NULL, embedding_model = NULL "
                "WHERE embedding IS NOT NULL AND status != 'active' RETURNING id"
            )
        }
        stale.update(
            int(r[0])
            for r in conn.execute(
                "DELETE FROM memory_episode_vectors e USING memories m "
                "WHERE m.id = e.memory_id AND m.status != 'active' RETURNING e.memory_id"
            )
        )
        unmarked = conn.execute(
            "UPDATE memories SET embedding_model = NULL WHERE embedding_model IS NOT NULL AND embedding IS NULL"
        ).rowcount
        model = stored_model(conn)
        remarked = 0
        if model is not None:
            remarked = conn.execute(
                "UPDATE memories SET embedding_model = %s WHERE status = 'active' AND embedding IS NOT NULL "
                "AND embedding_model IS NULL",
                (model[0],),
            ).rowcount
        actions.update(
            {"vectors_tombstoned": len(stale), "vectors_unmarked": unmarked, "vectors_remarked": remarked}
        )
        actions["context_values_indexed"] = self._rebuild_values()
        return actions

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

    def _rebuild_values(self) -> int:
        self._conn.execute("DELETE FROM context_values")
        rows = [(c, v, m) for m, pairs in self._expected_values().items() for c, v in pairs]
        if rows:
            self._conn.execute(
                "INSERT INTO context_values (collection, value, memory_id) "
                "SELECT * FROM unnest(%s::text[], %s::text[], %s::bigint[]) ON CONFLICT DO NOTHING",
                ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]),
            )
        return len(rows)

    def _repair_references(self, now: str) -> dict[str, int]:
        conn = self._conn
        tags = conn.execute(
            "DELETE FROM memory_tags t WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = t.memory_id)"
        ).rowcount
        payloads = conn.execute(
            "DELETE FROM perception_payloads p WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = p.memory_id)"
        ).rowcount
        column, body = _CHECKS["sessions_missing"]
        missing = [r[0] for r in conn.execute(f"SELECT {column} {body}")]
        for session_id in missing:
            row = conn.execute(
                "SELECT MIN(collection), MIN(created_at) FROM memories WHERE session_id = %s", (session_id,)
            ).fetchone()
            collection = row[0] if row and row[0] is not None else "default"
            created = row[1] if row and row[1] is not None else now
            conn.execute(
                "INSERT INTO sessions (id, collection, context, status, summary, created_at, ended_at) "
                "VALUES (%s, %s, '{\"recreated_by\": \"repair\"}', 'ended', NULL, %s, %s)",
                (session_id, collection, created, now),
            )
        fixed = conn.execute(
            "UPDATE sessions SET ended_at = %s WHERE status = 'ended' AND ended_at IS NULL", (now,)
        ).rowcount
        closed = conn.execute(
            "UPDATE sessions SET status = 'ended' WHERE status = 'active' AND ended_at IS NOT NULL"
        ).rowcount
        column, body = _CHECKS["superseded_without_successor"]
        restored = conn.execute(
            f"UPDATE memories SET status = 'active', superseded_by = NULL WHERE id IN (SELECT {column} {body})"
        ).rowcount
        return {
            "superseded_restored": restored,
            "tags_deleted": tags,
            "payloads_deleted": payloads,
            "sessions_recreated": len(missing),
            "sessions_fixed": fixed + closed,
            "supersede_links_cleared": 0,
        }

    def _repair_values(self, now: str) -> dict[str, int]:
        conn = self._conn
        normalised = replaced = 0
        bad_memories, bad_sessions = self._bad_times()
        for memory_id in bad_memories:
            row = conn.execute(
                "SELECT created_at, updated_at, last_accessed FROM memories WHERE id = %s", (memory_id,)
            ).fetchone()
            if row is None:
                continue
            created, updated, accessed = row
            new_created, new_updated = _stored_time(created), _stored_time(updated)
            new_accessed = None if accessed is None else _stored_time(accessed)
            replaced += (
                (new_created is None)
                + (new_updated is None)
                + (accessed is not None and new_accessed is None)
            )
            new_created = new_created or new_updated or now
            new_updated = new_updated or new_created
            normalised += 1
            conn.execute(
                "UPDATE memories SET created_at = %s, updated_at = %s, last_accessed = %s WHERE id = %s",
                (new_created, new_updated, new_accessed, memory_id),
            )
        for session_id in bad_sessions:
            row = conn.execute(
                "SELECT created_at, ended_at, status FROM sessions WHERE id = %s", (session_id,)
            ).fetchone()
            if row is None:
                continue
            created, ended, status = row
            new_created = _stored_time(created)
            new_ended = None if ended is None else _stored_time(ended)
            replaced += (new_created is None) + (ended is not None and new_ended is None)
            normalised += 1
            conn.execute(
                "UPDATE sessions SET created_at = %s, ended_at = %s WHERE id = %s",
                (
                    new_created or now,
                    new_ended if new_ended is not None or status != "ended" else now,
                    session_id,
                ),
            )
        clamped = conn.execute(
            "UPDATE memories SET confidence = CASE WHEN confidence = 'NaN' THEN 0 "
            "ELSE LEAST(1, GREATEST(0, confidence)) END, base_confidence = CASE WHEN base_confidence = 'NaN' "
            "THEN 0 ELSE LEAST(1, GREATEST(0, base_confidence)) END "
            "WHERE NOT (confidence BETWEEN 0 AND 1) OR NOT (base_confidence BETWEEN 0 AND 1)"
        ).rowcount
        return {"times_normalised": normalised, "times_replaced": replaced, "confidences_clamped": clamped}

    def index_report(self) -> IndexHealth:
        version = self._conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return IndexHealth(
            expected_schema_version=SCHEMA_VERSION,
            schema_version=int(version[0]) if version else 0,
            journal_mode="postgresql",
            memories=self._one("SELECT COUNT(*) FROM memories"),
            active=self._one("SELECT COUNT(*) FROM memories WHERE status = 'active'"),
            sessions=self._one("SELECT COUNT(*) FROM sessions"),
            fts_rows=self._one("SELECT COUNT(*) FROM memory_terms"),
            fts_missing_active=self._one(
                "SELECT COUNT(*) FROM memories m WHERE m.status = 'active' "
                "AND NOT EXISTS (SELECT 1 FROM memory_terms t WHERE t.memory_id = m.id)"
            ),
            vectors_stored=self._one("SELECT COUNT(*) FROM memories WHERE embedding IS NOT NULL"),
            active_without_vector=self._one(
                "SELECT COUNT(*) FROM memories WHERE embedding_model IS NULL AND status = 'active'"
            ),
            vectors_stale=self._one(
                "SELECT COUNT(*) FROM memories WHERE embedding IS NOT NULL AND status != 'active'"
            ),
            stored_model=stored_model(self._conn),
        )


def _stored_time(value: Any) -> str | None:
    moment = read_timestamp(value)
    return None if moment is None else moment.isoformat(timespec="microseconds")
