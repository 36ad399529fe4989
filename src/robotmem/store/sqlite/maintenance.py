"""Integrity checks, repair of the derived indexes, and online backup of the database file.

The ``memories`` table (with ``perception_payloads`` and ``sessions``) is the source of truth. The FTS
table, the context-value index and the vector tombstones are derived from it and can always be rebuilt; vectors that are
missing are not computed here (that needs the embedder) but left for backfill.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from robotmem.formats.validation import read_timestamp
from robotmem.records import IndexHealth, IntegrityReport
from robotmem.store.sqlite import columns, health, text_index, values, vectors
from robotmem.text.tokens import index_text

_BAD_MEMORY_TIME = (
    "(NOT robotmem_is_time(m.created_at) OR NOT robotmem_is_time(m.updated_at) "
    "OR (m.last_accessed IS NOT NULL AND NOT robotmem_is_time(m.last_accessed)))"
)
_BAD_SESSION_TIME = (
    "(NOT robotmem_is_time(s.created_at) OR (s.ended_at IS NOT NULL AND NOT robotmem_is_time(s.ended_at)))"
)
_BAD_CONFIDENCE = (
    "(typeof(m.confidence) NOT IN ('real', 'integer') OR NOT m.confidence BETWEEN 0 AND 1 "
    "OR typeof(m.base_confidence) NOT IN ('real', 'integer') OR NOT m.base_confidence BETWEEN 0 AND 1)"
)
_SUPERSEDED_WITHOUT_SUCCESSOR = (
    "m.status = 'superseded' AND (m.superseded_by IS NULL OR m.superseded_by = m.id "
    "OR NOT EXISTS (SELECT 1 FROM memories r WHERE r.id = m.superseded_by))"
)
# Each check is a name, the SQL that lists offending ids (at most ``:limit``) and the SQL counting them.
_CHECKS: dict[str, str] = {
    # Active memories that BM25 cannot find.
    "fts_missing": "FROM memories m WHERE m.status = 'active' "
    "AND NOT EXISTS (SELECT 1 FROM memories_fts f WHERE f.rowid = m.id)",
    # FTS rows of forgotten, superseded or deleted memories: recall would skip them, dedup might not.
    "fts_orphaned": "FROM memories_fts f WHERE NOT EXISTS "
    "(SELECT 1 FROM memories m WHERE m.id = f.rowid AND m.status = 'active')",
    # Vectors still searchable for memories that are no longer active.
    "vectors_stale": "FROM memory_vectors v JOIN memories m ON m.id = v.memory_id "
    "WHERE v.embedding IS NOT NULL AND m.status != 'active'",
    # Vectors whose memory row is gone.
    "vectors_orphaned": "FROM memory_vectors v WHERE v.embedding IS NOT NULL "
    "AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = v.memory_id)",
    # A memory marked embedded whose vector row is missing, a tombstone, or of another model.
    "vectors_missing_for_marked": "FROM memories m WHERE m.embedding_model IS NOT NULL AND NOT EXISTS "
    "(SELECT 1 FROM memory_vectors v WHERE v.memory_id = m.id AND v.embedding IS NOT NULL "
    "AND v.model_id = m.embedding_model)",
    # An active memory with a live vector but not marked embedded (backfill would embed it again).
    "vectors_unmarked": "FROM memories m JOIN memory_vectors v ON v.memory_id = m.id "
    "WHERE m.status = 'active' AND v.embedding IS NOT NULL "
    "AND (m.embedding_model IS NULL OR m.embedding_model != v.model_id)",
    # Episode vectors (``episode_vector_weight``) of memories that are no longer active or gone.
    "episode_vectors_stale": "FROM memory_episode_vectors v WHERE v.embedding IS NOT NULL AND NOT EXISTS "
    "(SELECT 1 FROM memories m WHERE m.id = v.memory_id AND m.status = 'active')",
    "tags_dangling": "FROM memory_tags t WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = t.memory_id)",
    "payloads_dangling": "FROM perception_payloads p WHERE NOT EXISTS "
    "(SELECT 1 FROM memories m WHERE m.id = p.memory_id)",
    "sessions_missing": "FROM (SELECT DISTINCT session_id AS id FROM memories WHERE session_id IS NOT NULL "
    "UNION SELECT session_id FROM session_outcomes) s WHERE NOT EXISTS "
    "(SELECT 1 FROM sessions x WHERE x.id = s.id)",
    "sessions_inconsistent": "FROM sessions s WHERE (s.status = 'ended') != (s.ended_at IS NOT NULL)",
    "supersede_dangling": "FROM memories m WHERE m.superseded_by IS NOT NULL "
    "AND NOT EXISTS (SELECT 1 FROM memories r WHERE r.id = m.superseded_by)",
    # Superseded memories are hidden from recall; without a successor the lesson is lost to it.
    "superseded_without_successor": f"FROM memories m WHERE {_SUPERSEDED_WITHOUT_SUCCESSOR}",
    # Times not in the stored UTC form (written by an older import): decay and time order misread them.
    "times_invalid": f"FROM memories m WHERE {_BAD_MEMORY_TIME}",
    "session_times_invalid": f"FROM sessions s WHERE {_BAD_SESSION_TIME}",
    # Confidences that are not a number within 0..1 (recall's min_confidence cut misreads them).
    "confidence_invalid": f"FROM memories m WHERE {_BAD_CONFIDENCE}",
    # Memories whose rows in the context-value index differ from what their context gives.
    "context_values_stale": values.STALE,
}
_ID_COLUMN = {
    "fts_orphaned": "f.rowid",
    "vectors_stale": "v.memory_id",
    "vectors_orphaned": "v.memory_id",
    "vectors_unmarked": "m.id",
    "episode_vectors_stale": "v.memory_id",
    "tags_dangling": "DISTINCT t.memory_id",
    "payloads_dangling": "p.memory_id",
    "sessions_missing": "s.id",
    "sessions_inconsistent": "s.id",
    "session_times_invalid": "s.id",
    "context_values_stale": "d.memory_id",
    "session_columns_invalid": "s.id",
}


def _invalid(conn: sqlite3.Connection, table: str, alias: str) -> str:
    kinds, skip = columns.TABLES[table]
    return columns.sql_invalid_row(alias, kinds, _column_names(conn, table), skip)


def _column_names(conn: sqlite3.Connection, table: str) -> list[str]:
    return [str(row[1]) for row in conn.execute(f"PRAGMA table_info({table})")]


def _checks(conn: sqlite3.Connection) -> dict[str, str]:
    """Return every check: the fixed ones and those built from the columns the tables have.

    Values of a kind robotmem never writes (a BLOB, text that is not JSON, a context that is not an
    object: ``columns``) in a memory, its tags or payload, or a session or its outcome.
    """
    return {
        **_CHECKS,
        "columns_invalid": f"FROM memories m WHERE {_invalid(conn, 'memories', 'm')} "
        f"OR EXISTS (SELECT 1 FROM memory_tags t WHERE t.memory_id = m.id AND {_invalid(conn, 'memory_tags', 't')}) "
        "OR EXISTS (SELECT 1 FROM perception_payloads p WHERE p.memory_id = m.id "
        f"AND {_invalid(conn, 'perception_payloads', 'p')})",
        "session_columns_invalid": f"FROM sessions s WHERE {_invalid(conn, 'sessions', 's')} "
        "OR EXISTS (SELECT 1 FROM session_outcomes o WHERE o.session_id = s.id "
        f"AND {_invalid(conn, 'session_outcomes', 'o')})",
    }


SAMPLE = 20


def _scalar(conn: sqlite3.Connection, sql: str, params: dict[str, Any] | None = None) -> int:
    return int(conn.execute(sql, params or {}).fetchone()[0])


def sqlite_integrity(conn: sqlite3.Connection, max_errors: int = 20) -> tuple[str, ...]:
    """Return the lines of ``PRAGMA integrity_check`` (``("ok",)`` for a sound file).

    A file too damaged for the check to finish yields one line that says so.
    """
    try:
        return tuple(str(row[0]) for row in conn.execute(f"PRAGMA integrity_check({int(max_errors)})"))
    except sqlite3.DatabaseError as exc:
        return (f"integrity_check could not finish: {exc}",)


def _fts_stale(conn: sqlite3.Connection) -> tuple[int, list[int]]:
    """Count active memories whose FTS body differs from what ``index_text`` makes of their content."""
    stale: list[int] = []
    rows = conn.execute(
        "SELECT m.id, m.content, f.body FROM memories m JOIN memories_fts f ON f.rowid = m.id "
        "WHERE m.status = 'active'"
    )
    for memory_id, content, body in rows:
        # Content that is not text (``columns_invalid``) cannot have a right FTS row either.
        if not isinstance(content, str) or body != index_text(content):
            stale.append(int(memory_id))
    return len(stale), stale[:SAMPLE]


def check(conn: sqlite3.Connection) -> IntegrityReport:
    """Run every check on one snapshot; the caller holds a read transaction.

    When the file is too damaged for the index checks, the report keeps SQLite's own verdict and
    says why the rest could not run.
    """
    integrity = sqlite_integrity(conn)
    try:
        return _check_indexes(conn, integrity)
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


def _check_indexes(conn: sqlite3.Connection, integrity: tuple[str, ...]) -> IntegrityReport:
    foreign_keys = len(conn.execute("PRAGMA foreign_key_check").fetchall())
    counts: dict[str, int] = {}
    samples: dict[str, list[Any]] = {}
    for name, body in _checks(conn).items():
        counts[name] = _scalar(conn, f"SELECT COUNT(*) {body}")
        column = _ID_COLUMN.get(name, "m.id")
        samples[name] = [
            r[0] for r in conn.execute(f"SELECT {column} {body} LIMIT :limit", {"limit": SAMPLE})
        ]
    fts_stale, stale_ids = _fts_stale(conn)
    samples["fts_stale"] = stale_ids
    rows = {
        "memories": _scalar(conn, "SELECT COUNT(*) FROM memories"),
        "active": _scalar(conn, "SELECT COUNT(*) FROM memories WHERE status = 'active'"),
        "fts": _scalar(conn, "SELECT COUNT(*) FROM memories_fts"),
        "vectors": _scalar(conn, "SELECT COUNT(*) FROM memory_vectors WHERE embedding IS NOT NULL"),
        "sessions": _scalar(conn, "SELECT COUNT(*) FROM sessions"),
    }
    return IntegrityReport(
        integrity=integrity,
        foreign_keys=foreign_keys,
        counts=counts,
        samples=samples,
        fts_stale=fts_stale,
        active_without_vector=_scalar(
            conn, "SELECT COUNT(*) FROM memories WHERE status = 'active' AND embedding_model IS NULL"
        ),
        rows=rows,
    )


def rebuild_fts(conn: sqlite3.Connection) -> int:
    """Drop and recreate the FTS table from the content of every active memory; return the rows indexed."""
    rows = conn.execute("SELECT id, content FROM memories WHERE status = 'active' ORDER BY id").fetchall()
    return text_index.rebuild(conn, ((memory_id, index_text(content)) for memory_id, content in rows))


def rebuild_context_values(conn: sqlite3.Connection) -> int:
    """Recompute the context-value index from every memory's context; return the rows it holds."""
    return values.rebuild(conn)


def _ids(conn: sqlite3.Connection, name: str) -> list[Any]:
    column = _ID_COLUMN.get(name, "m.id")
    return [r[0] for r in conn.execute(f"SELECT {column} {_checks(conn)[name]}")]


def repair_columns(conn: sqlite3.Connection) -> dict[str, int]:
    """Rewrite every value of a wrong kind in the form its column must hold (``columns.repaired``).

    Row by row and column by column, so nothing else in a row changes. A tag that becomes equal to
    another tag of its memory is deleted (it was that tag).
    """
    fixed = 0
    for table, (kinds, skip) in columns.TABLES.items():
        present = _column_names(conn, table)
        names = [name for name in kinds if name in present and name not in skip]
        invalid = columns.sql_invalid_row("x", kinds, present, skip)
        rows = conn.execute(
            f"SELECT x.rowid, {', '.join(f'x.{n}' for n in names)} FROM {table} x WHERE {invalid}"
        )
        for rowid, *stored in rows.fetchall():
            changes = {
                name: columns.repaired(value, kinds[name])
                for name, value in zip(names, stored, strict=True)
                if columns.problem(value, kinds[name]) is not None
            }
            if not changes:
                continue
            assignments = ", ".join(f"{name} = :{name}" for name in changes)
            try:
                conn.execute(
                    f"UPDATE {table} SET {assignments} WHERE rowid = :rowid", {**changes, "rowid": rowid}
                )
            except sqlite3.IntegrityError:  # a tag equal to one its memory already has
                conn.execute(f"DELETE FROM {table} WHERE rowid = :rowid", {"rowid": rowid})
            fixed += 1
    return {"columns_rewritten": fixed}


def repair_vectors(conn: sqlite3.Connection) -> dict[str, int]:
    """Make the vector table agree with the memories table; return how many rows each step changed.

    Vectors of non-active or deleted memories become tombstones (so every process's index drops them);
    a memory marked embedded without a usable vector is unmarked and left for backfill; a live vector
    of an active memory marks it embedded with that vector's model.
    """
    stale = _ids(conn, "vectors_stale") + _ids(conn, "vectors_orphaned") + _ids(conn, "episode_vectors_stale")
    for memory_id in stale:
        vectors.drop(conn, int(memory_id))
    unmarked = conn.execute(
        "UPDATE memories SET embedding_model = NULL WHERE embedding_model IS NOT NULL AND NOT EXISTS "
        "(SELECT 1 FROM memory_vectors v WHERE v.memory_id = memories.id AND v.embedding IS NOT NULL "
        "AND v.model_id = memories.embedding_model)"
    ).rowcount
    # A live vector whose memory says it is of another (or no) model: trust the vector row.
    remarked = conn.execute(
        "UPDATE memories SET embedding_model = (SELECT v.model_id FROM memory_vectors v "
        "WHERE v.memory_id = memories.id AND v.embedding IS NOT NULL) "
        "WHERE status = 'active' AND EXISTS (SELECT 1 FROM memory_vectors v WHERE v.memory_id = memories.id "
        "AND v.embedding IS NOT NULL AND (memories.embedding_model IS NULL "
        "OR memories.embedding_model != v.model_id))"
    ).rowcount
    return {"vectors_tombstoned": len(set(stale)), "vectors_unmarked": unmarked, "vectors_remarked": remarked}


def repair_references(conn: sqlite3.Connection, now: str) -> dict[str, int]:
    """Remove rows that point at missing memories and recreate sessions that memories still name.

    A recreated session is marked ended (its real start and end are unknown; ``created_at`` is the
    time of its oldest memory) so the memories keep their episode and a replay by session still works.
    """
    tags = conn.execute(
        "DELETE FROM memory_tags WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = memory_tags.memory_id)"
    ).rowcount
    payloads = conn.execute(
        "DELETE FROM perception_payloads WHERE NOT EXISTS "
        "(SELECT 1 FROM memories m WHERE m.id = perception_payloads.memory_id)"
    ).rowcount
    missing = _ids(conn, "sessions_missing")
    for session_id in missing:
        row = conn.execute(
            "SELECT MIN(collection), MIN(created_at) FROM memories WHERE session_id = :id", {"id": session_id}
        ).fetchone()
        collection = row[0] if row and row[0] is not None else "default"
        created = row[1] if row and row[1] is not None else now
        conn.execute(
            "INSERT INTO sessions (id, collection, context, status, summary, created_at, ended_at) "
            "VALUES (:id, :collection, '{\"recreated_by\": \"repair\"}', 'ended', NULL, :created, :now)",
            {"id": session_id, "collection": collection, "created": created, "now": now},
        )
    fixed_sessions = conn.execute(
        "UPDATE sessions SET ended_at = :now WHERE status = 'ended' AND ended_at IS NULL", {"now": now}
    ).rowcount
    closed = conn.execute(
        "UPDATE sessions SET status = 'ended' WHERE status = 'active' AND ended_at IS NOT NULL"
    ).rowcount
    # A superseded memory whose successor is gone (or is itself) is recalled again: hidden with
    # nothing in its place, its lesson would be lost.
    restored = conn.execute(
        "UPDATE memories SET status = 'active', superseded_by = NULL WHERE id IN "
        f"(SELECT m.id FROM memories m WHERE {_SUPERSEDED_WITHOUT_SUCCESSOR})"
    ).rowcount
    unlinked = conn.execute(
        "UPDATE memories SET superseded_by = NULL WHERE superseded_by IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM memories r WHERE r.id = memories.superseded_by)"
    ).rowcount
    return {
        "tags_deleted": tags,
        "payloads_deleted": payloads,
        "sessions_recreated": len(missing),
        "sessions_fixed": fixed_sessions + closed,
        "supersede_links_cleared": unlinked,
        "superseded_restored": restored,
    }


def _stored_time(value: Any) -> str | None:
    moment = read_timestamp(value)
    return None if moment is None else moment.isoformat(timespec="microseconds")


def _unit(value: Any) -> float:
    number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
    return 0.0 if math.isnan(number) else min(1.0, max(0.0, float(number)))


def repair_values(conn: sqlite3.Connection, now: str) -> dict[str, int]:
    """Bring stored times to the UTC form and confidences into 0..1, row by row.

    A time that can be read (naive, date only, another offset) is rewritten as the same moment in
    UTC. One that cannot is replaced: ``created_at`` by ``updated_at`` (or the repair time),
    ``updated_at`` by ``created_at``, ``last_accessed`` by NULL, a session's ``ended_at`` by the
    repair time. A confidence outside 0..1 is clamped into it (a text becomes 0).
    """
    normalised = replaced = 0
    rows = conn.execute(
        f"SELECT m.id, m.created_at, m.updated_at, m.last_accessed FROM memories m WHERE {_BAD_MEMORY_TIME}"
    ).fetchall()
    for memory_id, created, updated, accessed in rows:
        new_created, new_updated = _stored_time(created), _stored_time(updated)
        new_accessed = None if accessed is None else _stored_time(accessed)
        replaced += (
            (new_created is None) + (new_updated is None) + (accessed is not None and new_accessed is None)
        )
        new_created = new_created or new_updated or now
        new_updated = new_updated or new_created
        normalised += 1
        conn.execute(
            "UPDATE memories SET created_at = :c, updated_at = :u, last_accessed = :a WHERE id = :id",
            {"c": new_created, "u": new_updated, "a": new_accessed, "id": memory_id},
        )
    sessions = conn.execute(
        f"SELECT s.id, s.created_at, s.ended_at, s.status FROM sessions s WHERE {_BAD_SESSION_TIME}"
    ).fetchall()
    for session_id, created, ended, status in sessions:
        new_created = _stored_time(created)
        new_ended = None if ended is None else _stored_time(ended)
        replaced += (new_created is None) + (ended is not None and new_ended is None)
        normalised += 1
        conn.execute(
            "UPDATE sessions SET created_at = :c, ended_at = :e WHERE id = :id",
            {
                "c": new_created or now,
                "e": new_ended if new_ended is not None or status != "ended" else now,
                "id": session_id,
            },
        )
    confidences = conn.execute(
        f"SELECT m.id, m.confidence, m.base_confidence FROM memories m WHERE {_BAD_CONFIDENCE}"
    ).fetchall()
    for memory_id, confidence, base in confidences:
        conn.execute(
            "UPDATE memories SET confidence = :c, base_confidence = :b WHERE id = :id",
            {"c": _unit(confidence), "b": _unit(base), "id": memory_id},
        )
    return {
        "times_normalised": normalised,
        "times_replaced": replaced,
        "confidences_clamped": len(confidences),
    }


def reindex(conn: sqlite3.Connection) -> None:
    """Rebuild every ordinary index from its table (cures a damaged b-tree index, not a damaged table)."""
    conn.execute("REINDEX")


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
        return sqlite_integrity(conn), _scalar(conn, "SELECT COUNT(*) FROM memories")
    finally:
        conn.close()


class Maintenance:
    """``Maintenance`` on SQLite: ``integrity_check``, the index checks, and their rebuild."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def check(self) -> IntegrityReport:
        return check(self._conn)

    def repair(self, report: IntegrityReport, now: str) -> dict[str, Any]:
        actions: dict[str, Any] = {"reindexed": False}
        if report.integrity != ("ok",):
            reindex(self._conn)
            actions["reindexed"] = True
        # Values first (a restored memory needs its text indexed), then the derived indexes.
        actions.update(repair_columns(self._conn))
        actions.update(repair_references(self._conn, now))
        actions.update(repair_values(self._conn, now))
        actions["fts_rows_indexed"] = rebuild_fts(self._conn)
        actions["context_values_indexed"] = rebuild_context_values(self._conn)
        actions.update(repair_vectors(self._conn))
        return actions

    def index_report(self) -> IndexHealth:
        return health.index_report(self._conn)
