"""Integrity checks and repair on SQLite (the ``Maintenance`` of the contract), and online backup of the file.

The ``memories`` table (with ``perception_payloads`` and ``sessions``) is the source of truth. The FTS
table, the context-value index and the vector tombstones are derived from it and can always be rebuilt;
vectors that are missing are not computed here (that needs the embedder) but left for backfill. The checks
and repairs whose rules are the same on both engines are ``SharedMaintenance``'s.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from robotmem.query.vectors import stored_vector_problem, unit_vector, vector_problem
from robotmem.records import IntegrityReport
from robotmem.store.shared.checks import NAMED, REFERENCE_CHECKS, SharedMaintenance
from robotmem.store.sqlite import columns, text_index, values, vectors
from robotmem.store.sqlite.schema import SCHEMA_VERSION
from robotmem.text.tokens import index_text

# name: (id expression, FROM ... WHERE ...) of the offending rows.
_CHECKS: dict[str, tuple[str, str]] = {
    # Active memories that BM25 cannot find.
    "fts_missing": (
        "m.id",
        "FROM memories m WHERE m.status = 'active' AND NOT EXISTS (SELECT 1 FROM memories_fts f WHERE f.rowid = m.id)",
    ),
    # FTS rows of forgotten, superseded or deleted memories: recall would skip them, dedup might not.
    "fts_orphaned": (
        "f.rowid",
        "FROM memories_fts f WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = f.rowid AND m.status = 'active')",
    ),
    # Vectors still searchable for memories that are no longer active.
    "vectors_stale": (
        "v.memory_id",
        "FROM memory_vectors v JOIN memories m ON m.id = v.memory_id "
        "WHERE v.embedding IS NOT NULL AND m.status != 'active'",
    ),
    # Vectors whose memory row is gone.
    "vectors_orphaned": (
        "v.memory_id",
        "FROM memory_vectors v WHERE v.embedding IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = v.memory_id)",
    ),
    # A memory marked embedded whose vector row is missing, a tombstone, or of another model.
    "vectors_missing_for_marked": (
        "m.id",
        "FROM memories m WHERE m.embedding_model IS NOT NULL AND NOT EXISTS "
        "(SELECT 1 FROM memory_vectors v WHERE v.memory_id = m.id AND v.embedding IS NOT NULL "
        "AND v.model_id = m.embedding_model)",
    ),
    # An active memory with a live vector but not marked embedded (backfill would embed it again).
    "vectors_unmarked": (
        "m.id",
        "FROM memories m JOIN memory_vectors v ON v.memory_id = m.id "
        "WHERE m.status = 'active' AND v.embedding IS NOT NULL "
        "AND (m.embedding_model IS NULL OR m.embedding_model != v.model_id)",
    ),
    # Episode vectors (``episode_vector_weight``) of memories that are no longer active or gone.
    "episode_vectors_stale": (
        "v.memory_id",
        "FROM memory_episode_vectors v WHERE v.embedding IS NOT NULL AND NOT EXISTS "
        "(SELECT 1 FROM memories m WHERE m.id = v.memory_id AND m.status = 'active')",
    ),
    **REFERENCE_CHECKS,
    # Memories whose rows in the context-value index differ from what their context gives.
    "context_values_stale": ("d.memory_id", values.STALE),
}


_VECTOR_TABLES = ("memory_vectors", vectors.EPISODE_TABLE)


def sqlite_integrity(conn: sqlite3.Connection, max_errors: int = 20) -> tuple[str, ...]:
    """Return the lines of ``PRAGMA integrity_check`` (``("ok",)`` for a sound file).

    A file too damaged for the check to finish yields one line that says so.
    """
    try:
        return tuple(str(row[0]) for row in conn.execute(f"PRAGMA integrity_check({int(max_errors)})"))
    except sqlite3.DatabaseError as exc:
        return (f"integrity_check could not finish: {exc}",)


class Maintenance(SharedMaintenance):
    """``Maintenance`` on SQLite: ``integrity_check``, the index checks, and their repair."""

    _mark = NAMED
    _ROW_COUNTS = {"fts": "FROM memories_fts", "vectors": "FROM memory_vectors WHERE embedding IS NOT NULL"}

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn: sqlite3.Connection = conn

    def check(self) -> IntegrityReport:
        """Run every check on one snapshot; the caller holds a read transaction.

        When the file is too damaged for the index checks, the report keeps SQLite's own verdict and
        says why the rest could not run.
        """
        integrity = sqlite_integrity(self._conn)
        try:
            return self._report(integrity, len(self._conn.execute("PRAGMA foreign_key_check").fetchall()))
        except sqlite3.DatabaseError as exc:
            return IntegrityReport(
                integrity=integrity,
                foreign_keys=0,
                counts={},
                samples={},
                fts_stale=0,
                active_without_vector=0,
                error=f"the index checks could not run ({exc}); restore a backup",
            )

    def _checks(self) -> dict[str, tuple[str, str]]:
        """Return every check: the fixed ones and those built from the columns the tables have.

        Values of a kind robotmem never writes (a BLOB, text that is not JSON, a context that is not an
        object: ``columns``) in a memory, its tags or payload, or a session or its outcome.
        """
        return {
            **_CHECKS,
            "columns_invalid": (
                "m.id",
                f"FROM memories m WHERE {self._invalid('memories', 'm')} "
                "OR EXISTS (SELECT 1 FROM memory_tags t WHERE t.memory_id = m.id "
                f"AND {self._invalid('memory_tags', 't')}) "
                "OR EXISTS (SELECT 1 FROM perception_payloads p WHERE p.memory_id = m.id "
                f"AND {self._invalid('perception_payloads', 'p')})",
            ),
            "session_columns_invalid": (
                "s.id",
                f"FROM sessions s WHERE {self._invalid('sessions', 's')} "
                "OR EXISTS (SELECT 1 FROM session_outcomes o WHERE o.session_id = s.id "
                f"AND {self._invalid('session_outcomes', 'o')})",
            ),
        }

    def _invalid(self, table: str, alias: str) -> str:
        kinds, skip = columns.TABLES[table]
        return columns.sql_invalid_row(alias, kinds, self._column_names(table), skip)

    def _column_names(self, table: str) -> list[str]:
        return [str(row[1]) for row in self._conn.execute(f"PRAGMA table_info({table})")]

    def _fts_stale(self) -> list[int]:
        stale: list[int] = []
        rows = self._conn.execute(
            "SELECT m.id, m.content, f.body FROM memories m JOIN memories_fts f ON f.rowid = m.id "
            "WHERE m.status = 'active'"
        )
        for memory_id, content, body in rows:
            # Content that is not text (``columns_invalid``) cannot have a right FTS row either.
            if not isinstance(content, str) or body != index_text(content):
                stale.append(int(memory_id))
        return stale

    def _repair_storage(self, report: IntegrityReport) -> dict[str, Any]:
        """REINDEX when SQLite's own check failed (it cures a damaged b-tree index, not a damaged table),
        then rewrite the values of a wrong kind."""
        reindexed = report.integrity != ("ok",)
        if reindexed:
            self._conn.execute("REINDEX")
        return {"reindexed": reindexed, **self._repair_columns()}

    def _repair_columns(self) -> dict[str, int]:
        """Rewrite every value of a wrong kind in the form its column must hold (``columns.repaired``).

        Row by row and column by column, so nothing else in a row changes. A tag that becomes equal to
        another tag of its memory is deleted (it was that tag).
        """
        fixed = 0
        for table, (kinds, skip) in columns.TABLES.items():
            present = self._column_names(table)
            names = [name for name in kinds if name in present and name not in skip]
            invalid = columns.sql_invalid_row("x", kinds, present, skip)
            rows = self._conn.execute(
                f"SELECT x.rowid, {', '.join(f'x.{n}' for n in names)} FROM {table} x WHERE {invalid}"
            )
            for rowid, *stored in rows.fetchall():
                changes = {
                    name: columns.repaired(value, kinds[name])
                    for name, value in zip(names, stored, strict=True)
                    if columns.problem(value, kinds[name]) is not None
                }
                if changes:
                    self._rewrite(table, rowid, changes)
                    fixed += 1
        return {"columns_rewritten": fixed}

    def _rewrite(self, table: str, rowid: int, changes: dict[str, Any]) -> None:
        assignments = ", ".join(f"{name} = :{name}" for name in changes)
        try:
            self._conn.execute(
                f"UPDATE {table} SET {assignments} WHERE rowid = :rowid", {**changes, "rowid": rowid}
            )
        except sqlite3.IntegrityError:  # a tag equal to one its memory already has
            self._conn.execute(f"DELETE FROM {table} WHERE rowid = :rowid", {"rowid": rowid})

    def _rebuild_derived(self) -> dict[str, int]:
        return {
            "fts_rows_indexed": text_index.rebuild(self._conn, self._index_texts()),
            "context_values_indexed": values.rebuild(self._conn),
            **self._repair_vectors(),
        }

    def _repair_vectors(self) -> dict[str, int]:
        """Vectors of non-active or deleted memories become tombstones (so every process's index drops
        them); a memory marked embedded without a usable vector is unmarked and left for backfill; a live
        vector of an active memory marks it embedded with that vector's model."""
        stale = [
            *self._check_ids("vectors_stale"),
            *self._check_ids("vectors_orphaned"),
            *self._check_ids("episode_vectors_stale"),
        ]
        for memory_id in stale:
            vectors.drop(self._conn, int(memory_id))
        unmarked = self._conn.execute(
            "UPDATE memories SET embedding_model = NULL WHERE embedding_model IS NOT NULL AND NOT EXISTS "
            "(SELECT 1 FROM memory_vectors v WHERE v.memory_id = memories.id AND v.embedding IS NOT NULL "
            "AND v.model_id = memories.embedding_model)"
        ).rowcount
        # A live vector whose memory says it is of another (or no) model: trust the vector row.
        remarked = self._conn.execute(
            "UPDATE memories SET embedding_model = (SELECT v.model_id FROM memory_vectors v "
            "WHERE v.memory_id = memories.id AND v.embedding IS NOT NULL) "
            "WHERE status = 'active' AND EXISTS (SELECT 1 FROM memory_vectors v WHERE v.memory_id = memories.id "
            "AND v.embedding IS NOT NULL AND (memories.embedding_model IS NULL "
            "OR memories.embedding_model != v.model_id))"
        ).rowcount
        return {
            "vectors_tombstoned": len(set(stale)),
            "vectors_unmarked": unmarked,
            "vectors_remarked": remarked,
        }

    def _broken_vectors(self) -> list[tuple[str, int, bytes]]:
        """Return ``(table, memory_id, blob)`` of every live vector of the database's model that breaks the
        vector rule (``query.vectors.stored_vector_problem``), in the memories' and the episode vectors'
        tables: read and checked in Python, as the vectors are float32 blobs."""
        model = vectors.stored_model(self._conn)
        if model is None:
            return []
        found: list[tuple[str, int, bytes]] = []
        for table in _VECTOR_TABLES:
            rows = self._conn.execute(
                f"SELECT memory_id, embedding FROM {table} WHERE embedding IS NOT NULL AND model_id = :model",
                {"model": model[0]},
            )
            found += [
                (table, int(memory_id), blob)
                for memory_id, blob in rows
                if stored_vector_problem(blob, model[1]) is not None
            ]
        return found

    def _invalid_vectors(self) -> list[int]:
        return sorted({memory_id for _, memory_id, _ in self._broken_vectors()})

    def _repair_vector_values(self) -> dict[str, int]:
        model = vectors.stored_model(self._conn)
        renormalised = dropped = 0
        for table, memory_id, blob in self._broken_vectors():
            assert model is not None  # _broken_vectors finds none without a model
            vector = (
                np.frombuffer(blob, dtype="<f4") if isinstance(blob, bytes) and len(blob) % 4 == 0 else None
            )
            if vector is not None and vector_problem(vector, model[1]) is None:
                unit = unit_vector(vector, model[1])
                put = vectors.put if table == "memory_vectors" else vectors.put_episode
                put(self._conn, memory_id, unit, model[0])
                renormalised += 1
            elif table == "memory_vectors":
                vectors.drop(self._conn, memory_id)
                dropped += 1
            else:
                self._conn.execute(
                    f"UPDATE {table} SET embedding = NULL, seq = (SELECT COALESCE(MAX(seq), 0) + 1 FROM {table}) "
                    "WHERE memory_id = :id",
                    {"id": memory_id},
                )
                dropped += 1
        return {"vectors_renormalised": renormalised, "vectors_dropped": dropped}

    def _schema_state(self) -> tuple[int, int, str]:
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        mode = self._conn.execute("PRAGMA journal_mode").fetchone()[0]
        return SCHEMA_VERSION, int(version), str(mode)

    def _stored_model(self) -> tuple[str, int] | None:
        return vectors.stored_model(self._conn)


def backup_to(
    source: sqlite3.Connection, target: Path, *, progress: Callable[[int, int, int], object] | None = None
) -> None:
    """Copy ``source`` into a new file ``target`` with SQLite's online backup API, in one step.

    One step copies a single consistent snapshot; in WAL mode writers go on meanwhile.
    """
    destination = sqlite3.connect(str(target))
    try:
        source.backup(destination, pages=-1, progress=progress)
        destination.execute("PRAGMA journal_mode = DELETE")
    finally:
        destination.close()


def verify_copy(target: Path) -> tuple[tuple[str, ...], int]:
    """Return ``(integrity_check lines, memory count)`` of a backup file, opened read-only."""
    conn = sqlite3.connect(f"file:{target}?mode=ro", uri=True)
    try:
        return sqlite_integrity(conn), int(conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
    finally:
        conn.close()
