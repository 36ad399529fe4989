"""Export, import and sync rows on PostgreSQL: the ``TransferRows`` and ``SyncRows`` of the storage contract.

Records have exactly the shape the SQLite engine gives (``store/sqlite/transfer.py``): the same columns
in the same order, JSON columns parsed, vectors as little-endian float32 bytes, lineage by uid. So a
file exported from one engine imports into the other, and a robot's SQLite store syncs with a fleet
store on PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import psycopg

from robotmem.records import export_entries, linked_ids
from robotmem.store.postgres import text_index
from robotmem.store.postgres.memories import filterable, write_values
from robotmem.store.postgres.vectors import stored_model

# The columns of ``memories`` the SQLite engine has, in its order (the search columns stay here).
MEMORY_COLUMNS = (
    "id",
    "collection",
    "type",
    "content",
    "human_summary",
    "content_hash",
    "category",
    "confidence",
    "base_confidence",
    "context",
    "scope_files",
    "scope_entities",
    "session_id",
    "perception_type",
    "status",
    "superseded_by",
    "merged_ids",
    "invalidated_reason",
    "embedding_model",
    "access_count",
    "last_accessed",
    "created_at",
    "updated_at",
    "uid",
    "robot_id",
)
SESSION_COLUMNS = ("id", "collection", "context", "status", "summary", "created_at", "ended_at")
OUTCOME_COLUMNS = ("session_id", "outcome_score", "memory_count", "summary", "created_at")
MEMORY_JSON_COLUMNS = frozenset({"context", "scope_files", "scope_entities", "merged_ids"})
SESSION_JSON_COLUMNS = frozenset({"context", "summary"})
MEMORY_DERIVED_COLUMNS = frozenset({"id", "uid", "superseded_by", "merged_ids", "embedding_model"})
_SELECT_MEMORY = ", ".join("m.context_text" if c == "context" else f"m.{c}" for c in MEMORY_COLUMNS)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def row_record(names: Sequence[str], row: Sequence[Any], json_columns: frozenset[str]) -> dict[str, Any]:
    return {
        name: json.loads(value) if name in json_columns and isinstance(value, str) else value
        for name, value in zip(names, row, strict=True)
    }


def session_record(conn: psycopg.Connection, record: dict[str, Any]) -> dict[str, Any]:
    outcome = conn.execute(
        f"SELECT {', '.join(OUTCOME_COLUMNS)} FROM session_outcomes WHERE session_id = %s", (record["id"],)
    ).fetchone()
    if outcome is None:
        record["outcome"] = None
    else:
        record["outcome"] = row_record(OUTCOME_COLUMNS, outcome, SESSION_JSON_COLUMNS)
        record["outcome"].pop("session_id", None)
    return record


def _complete(
    conn: psycopg.Connection, records: list[dict[str, Any]], model: tuple[str, int] | None
) -> Iterator[dict[str, Any]]:
    ids = [int(r["id"]) for r in records]
    tags: dict[int, list[dict[str, str]]] = {}
    for memory_id, tag, source in conn.execute(
        "SELECT memory_id, tag, source FROM memory_tags WHERE memory_id = ANY(%s) ORDER BY position", (ids,)
    ):
        tags.setdefault(int(memory_id), []).append({"tag": tag, "source": source})
    perception = {
        int(r[0]): {
            "data": json.loads(r[1]) if r[1] is not None else None,
            "metadata": json.loads(r[2]) if r[2] is not None else None,
        }
        for r in conn.execute(
            "SELECT memory_id, data, metadata FROM perception_payloads WHERE memory_id = ANY(%s)", (ids,)
        )
    }
    blobs: dict[int, bytes] = {}
    if model is not None:
        for memory_id, vector in conn.execute(
            "SELECT id, embedding FROM memories WHERE id = ANY(%s) AND embedding IS NOT NULL "
            "AND embedding_model = %s AND vector_dims(embedding) = %s",
            (ids, model[0], model[1]),
        ):
            blobs[int(memory_id)] = np.asarray(vector.to_numpy(), dtype="<f4").tobytes()
    uids = {
        int(m): str(u)
        for m, u in conn.execute("SELECT id, uid FROM memories WHERE id = ANY(%s)", (linked_ids(records),))
    }
    yield from export_entries(records, uids, tags, perception, blobs)


def memory_records(
    conn: psycopg.Connection, where: str, params: Sequence[Any], model: tuple[str, int] | None
) -> list[dict[str, Any]]:
    rows = conn.execute(f"SELECT {_SELECT_MEMORY} FROM memories m {where}", params).fetchall()
    records = [row_record(MEMORY_COLUMNS, row, MEMORY_JSON_COLUMNS) for row in rows]
    return list(_complete(conn, records, model)) if records else []


def _assignments(values: dict[str, Any]) -> tuple[list[str], list[str], list[Any]]:
    """Columns, placeholders and parameters for ``values``; the context fills both of its columns."""
    names, marks, params = [], [], []
    for name, value in values.items():
        if name == "context":
            names += ["context", "context_text"]
            marks += ["%s::jsonb", "%s"]
            params += [filterable(value), value]
        else:
            names.append(name)
            marks.append("%s")
            params.append(value)
    return names, marks, params


def _index_values(conn: psycopg.Connection, memory_id: int) -> None:
    """Index the context values of a memory just written from a record."""
    row = conn.execute("SELECT collection, context_text FROM memories WHERE id = %s", (memory_id,)).fetchone()
    if row is not None:
        context = json.loads(row[1] or "{}")
        write_values(
            conn, [(memory_id, str(row[0]), context if isinstance(context, dict) else {})], replace=True
        )


# The sessions of a collection (all for NULL), and those its memories name.
_SESSIONS_OF = (
    "FROM sessions s WHERE %(c)s::text IS NULL OR s.collection = %(c)s "
    "OR s.id IN (SELECT session_id FROM memories WHERE collection = %(c)s)"
)


class Transfer:
    """``TransferRows`` on PostgreSQL."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self._conn = conn

    def schema_version(self) -> int:
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0

    def count_memories(self, collection: str | None) -> int:
        row = self._conn.execute(
            "SELECT COUNT(*) FROM memories WHERE %(c)s::text IS NULL OR collection = %(c)s", {"c": collection}
        ).fetchone()
        return int(row[0]) if row else 0

    def count_sessions(self, collection: str | None) -> int:
        row = self._conn.execute(f"SELECT COUNT(*) {_SESSIONS_OF}", {"c": collection}).fetchone()
        return int(row[0]) if row else 0

    def iter_sessions(self, collection: str | None) -> Iterator[dict[str, Any]]:
        rows = self._conn.execute(
            f"SELECT {', '.join('s.' + c for c in SESSION_COLUMNS)} {_SESSIONS_OF} ORDER BY s.created_at, s.id",
            {"c": collection},
        ).fetchall()
        for row in rows:
            yield session_record(self._conn, row_record(SESSION_COLUMNS, row, SESSION_JSON_COLUMNS))

    def iter_memories(self, collection: str | None, *, with_vectors: bool) -> Iterator[dict[str, Any]]:
        model = stored_model(self._conn) if with_vectors else None
        after = 0
        while True:
            records = memory_records(
                self._conn,
                "WHERE (%s::text IS NULL OR m.collection = %s) AND m.id > %s ORDER BY m.id LIMIT 500",
                (collection, collection, after),
                model,
            )
            if not records:
                return
            after = int(records[-1]["memory"]["id"])
            yield from records

    def ids_of(self, uids: Sequence[str]) -> dict[str, int]:
        rows = self._conn.execute("SELECT uid, id FROM memories WHERE uid = ANY(%s)", (list(uids),))
        return {str(u): int(m) for u, m in rows}

    def _values(self, fields: dict[str, Any]) -> dict[str, Any]:
        known = set(MEMORY_COLUMNS) - MEMORY_DERIVED_COLUMNS
        return {
            name: _dumps(value) if name in MEMORY_JSON_COLUMNS and not isinstance(value, str) else value
            for name, value in fields.items()
            if name in known
        }

    def insert_memory(self, uid: str, fields: dict[str, Any], keep_id: int | None) -> int:
        values = self._values(fields)
        values["uid"] = uid
        if keep_id is not None:
            taken = self._conn.execute("SELECT 1 FROM memories WHERE id = %s", (keep_id,)).fetchone()
            if taken is None:
                values["id"] = keep_id
        names, marks, params = _assignments(values)
        row = self._conn.execute(
            f"INSERT INTO memories ({', '.join(names)}) VALUES ({', '.join(marks)}) RETURNING id", params
        ).fetchone()
        memory_id = int(row[0]) if row else 0
        _index_values(self._conn, memory_id)
        if "id" in values:  # ids are never reused: the sequence moves past a kept one
            self._conn.execute(
                "SELECT setval(pg_get_serial_sequence('memories', 'id'), "
                "GREATEST(%s, nextval(pg_get_serial_sequence('memories', 'id'))))",
                (memory_id,),
            )
        return memory_id

    def overwrite_memory(self, memory_id: int, fields: dict[str, Any]) -> None:
        values = self._values(fields)
        if values:
            names, marks, params = _assignments(values)
            assignments = ", ".join(f"{name} = {mark}" for name, mark in zip(names, marks, strict=True))
            self._conn.execute(f"UPDATE memories SET {assignments} WHERE id = %s", [*params, memory_id])
            _index_values(self._conn, memory_id)
        self._conn.execute(
            "UPDATE memories SET embedding = NULL, embedding_model = NULL WHERE id = %s", (memory_id,)
        )

    def write_derived(
        self,
        memory_id: int,
        *,
        index_body: str | None,
        tags: Sequence[tuple[str, str]],
        perception: tuple[str | None, str | None] | None,
    ) -> None:
        text_index.replace(self._conn, memory_id, index_body)
        self._conn.execute("DELETE FROM memory_tags WHERE memory_id = %s", (memory_id,))
        with self._conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO memory_tags (memory_id, tag, source) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                [(memory_id, tag, source) for tag, source in tags],
            )
        self._conn.execute("DELETE FROM perception_payloads WHERE memory_id = %s", (memory_id,))
        if perception is not None:
            self._conn.execute(
                "INSERT INTO perception_payloads (memory_id, data, metadata) VALUES (%s, %s, %s)",
                (memory_id, perception[0], perception[1]),
            )

    def set_lineage(
        self, memory_id: int, superseded_by: int | None, merged_ids: Sequence[int], *, fill_only: bool
    ) -> None:
        merged = _dumps(list(merged_ids))
        if fill_only:
            self._conn.execute(
                "UPDATE memories SET superseded_by = COALESCE(superseded_by, %s), merged_ids = CASE WHEN "
                "merged_ids IN ('', '[]') THEN %s ELSE merged_ids END WHERE id = %s",
                (superseded_by, merged, memory_id),
            )
            return
        self._conn.execute(
            "UPDATE memories SET superseded_by = %s, merged_ids = %s WHERE id = %s",
            (superseded_by, merged, memory_id),
        )

    def session_exists(self, session_id: str) -> bool:
        return (
            self._conn.execute("SELECT 1 FROM sessions WHERE id = %s", (session_id,)).fetchone() is not None
        )

    def write_session(self, fields: dict[str, Any], outcome: dict[str, Any] | None) -> None:
        self._conn.execute("DELETE FROM session_outcomes WHERE session_id = %s", (fields["id"],))
        _upsert(self._conn, "sessions", "id", SESSION_COLUMNS, fields)
        if outcome is not None:
            _upsert(
                self._conn,
                "session_outcomes",
                "session_id",
                OUTCOME_COLUMNS,
                {**outcome, "session_id": fields["id"]},
            )


def _upsert(
    conn: psycopg.Connection, table: str, key: str, columns: Sequence[str], fields: dict[str, Any]
) -> None:
    values = {
        name: _dumps(value)
        if name in SESSION_JSON_COLUMNS and value is not None and not isinstance(value, str)
        else value
        for name, value in fields.items()
        if name in columns
    }
    names = list(values)
    updates = ", ".join(f"{n} = EXCLUDED.{n}" for n in names if n != key) or f"{key} = EXCLUDED.{key}"
    conn.execute(
        f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('%s' for _ in names)}) "
        f"ON CONFLICT ({key}) DO UPDATE SET {updates}",
        [values[n] for n in names],
    )
