"""SQL of export and import.

Export reads every column of ``memories``/``sessions`` (so columns added by later migrations travel
too); import writes them back under new or kept ids.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from robotmem.records import export_entries, linked_ids
from robotmem.store.sqlite import text_index, vectors
from robotmem.store.sqlite.columns import (
    MEMORY_COLUMNS,
    OUTCOME_COLUMNS,
    PAYLOAD_COLUMNS,
    SESSION_COLUMNS,
    TAG_COLUMNS,
    read_row,
)

# Columns holding JSON text: exported parsed, stored back as compact JSON.
MEMORY_JSON_COLUMNS = frozenset({"context", "scope_files", "scope_entities", "merged_ids"})
SESSION_JSON_COLUMNS = frozenset({"context", "summary"})
# Columns import never copies from a file: identity and lineage are remapped, the vector state is derived.
MEMORY_DERIVED_COLUMNS = frozenset({"id", "uid", "superseded_by", "merged_ids", "embedding_model"})


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _marks(values: Sequence[Any]) -> str:
    return ",".join("?" * len(values))


def columns(conn: sqlite3.Connection, table: str) -> list[str]:
    """Return the column names of ``table`` in schema order (``table`` is one of this module's own)."""
    return [str(row[1]) for row in conn.execute(f"PRAGMA table_info({table})")]


# ---- export ----------------------------------------------------------------------------------------


_ROW_KINDS = {"memory": MEMORY_COLUMNS, "session": SESSION_COLUMNS, "outcome of session": OUTCOME_COLUMNS}


def row_dict(names: Sequence[str], row: Sequence[Any], table: str) -> dict[str, Any]:
    """Return a row of ``table`` (``memory``, ``session``, ``outcome of session``) as a dict, JSON parsed.

    Raises ``ValidationError`` naming the row and column for a value of a wrong kind (a BLOB, text
    that is not JSON, ...: ``columns.read_row``), which no export may carry.
    """
    key = "session_id" if table == "outcome of session" else "id"
    identity = row[names.index(key)] if key in names else "?"
    what = f"memory {identity}" if table == "memory" else f"{table} {identity!r}"
    return read_row(what, names, row, _ROW_KINDS[table])


def count_memories(conn: sqlite3.Connection, collection: str | None) -> int:
    """Return the number of memories (any status) in ``collection``, or in all collections for None."""
    row = conn.execute(
        "SELECT COUNT(*) FROM memories WHERE :collection IS NULL OR collection = :collection",
        {"collection": collection},
    ).fetchone()
    return int(row[0])


# The sessions an export of one collection (or of all, for NULL) carries.
_SESSIONS_OF = (
    "FROM sessions s WHERE :collection IS NULL OR s.collection = :collection "
    "OR s.id IN (SELECT session_id FROM memories WHERE collection = :collection)"
)


def count_sessions(conn: sqlite3.Connection, collection: str | None) -> int:
    """Return how many sessions ``iter_sessions`` yields for ``collection``."""
    return int(conn.execute(f"SELECT COUNT(*) {_SESSIONS_OF}", {"collection": collection}).fetchone()[0])


def iter_sessions(conn: sqlite3.Connection, collection: str | None) -> Iterator[dict[str, Any]]:
    """Yield every session of ``collection`` (or all), and sessions its memories name, with ``outcome``."""
    names = columns(conn, "sessions")
    outcome_names = columns(conn, "session_outcomes")
    select = ", ".join(f"s.{name}" for name in names)
    rows = conn.execute(
        f"SELECT {select} {_SESSIONS_OF} ORDER BY s.created_at, s.id", {"collection": collection}
    ).fetchall()
    for row in rows:
        yield session_record(conn, row_dict(names, row, "session"), outcome_names)


def session_record(
    conn: sqlite3.Connection, record: dict[str, Any], outcome_names: Sequence[str]
) -> dict[str, Any]:
    """Return the session ``record`` (a row of ``sessions`` as a dict) with its ``outcome`` (or None)."""
    outcome = conn.execute(
        f"SELECT {', '.join(outcome_names)} FROM session_outcomes WHERE session_id = :id",
        {"id": record["id"]},
    ).fetchone()
    if outcome is None:
        record["outcome"] = None
    else:
        record["outcome"] = row_dict(outcome_names, outcome, "outcome of session")
        record["outcome"].pop("session_id", None)
    return record


def iter_memories(
    conn: sqlite3.Connection, collection: str | None, *, with_vectors: bool, batch_size: int = 500
) -> Iterator[dict[str, Any]]:
    """Yield every memory of ``collection`` (or all) in id order as an export record.

    A record is ``{"memory": {column: value}, "superseded_by_uid", "merged_uids", "tags": [{"tag",
    "source"}], "perception": {"data", "metadata"} | None, "vector": bytes | None}``; vectors are read
    only when ``with_vectors`` and only those of the database's recorded model.
    """
    names = columns(conn, "memories")
    select = ", ".join(names)
    model = vectors.stored_model(conn)
    after = 0
    while True:
        rows = conn.execute(
            f"SELECT {select} FROM memories WHERE (:collection IS NULL OR collection = :collection) "
            "AND id > :after ORDER BY id LIMIT :limit",
            {"collection": collection, "after": after, "limit": batch_size},
        ).fetchall()
        if not rows:
            return
        records = [row_dict(names, row, "memory") for row in rows]
        ids = [int(r["id"]) for r in records]
        after = ids[-1]
        yield from complete_records(conn, records, ids, model if with_vectors else None)


def complete_records(
    conn: sqlite3.Connection, records: list[dict[str, Any]], ids: list[int], model: tuple[str, int] | None
) -> Iterator[dict[str, Any]]:
    marks = _marks(ids)
    tags: dict[int, list[dict[str, str]]] = {}
    for memory_id, tag, source in conn.execute(
        f"SELECT memory_id, tag, source FROM memory_tags WHERE memory_id IN ({marks}) ORDER BY rowid", ids
    ):
        if type(tag) is not str or type(source) is not str:
            read_row(f"tag of memory {memory_id}", ("tag", "source"), (tag, source), TAG_COLUMNS)
        tags.setdefault(memory_id, []).append({"tag": tag, "source": source})
    perception: dict[int, dict[str, Any]] = {}
    for memory_id, data, metadata in conn.execute(
        f"SELECT memory_id, data, metadata FROM perception_payloads WHERE memory_id IN ({marks})", ids
    ):
        perception[int(memory_id)] = read_row(
            f"payload of memory {memory_id}", ("data", "metadata"), (data, metadata), PAYLOAD_COLUMNS
        )
    blobs: dict[int, bytes] = {}
    if model is not None:
        blobs = {
            int(r[0]): bytes(r[1])
            for r in conn.execute(
                f"SELECT memory_id, embedding FROM memory_vectors WHERE memory_id IN ({marks}) "
                "AND embedding IS NOT NULL AND model_id = ?",
                [*ids, model[0]],
            )
            if len(r[1]) == 4 * model[1]
        }
    uids = uids_of(conn, linked_ids(records))
    yield from export_entries(records, uids, tags, perception, blobs)


def uids_of(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, str]:
    """Return id → uid for the existing ids among ``ids``."""
    found: dict[int, str] = {}
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        found.update(
            (int(r[0]), str(r[1]))
            for r in conn.execute(f"SELECT id, uid FROM memories WHERE id IN ({_marks(chunk)})", chunk)
        )
    return found


# ---- import ----------------------------------------------------------------------------------------


def ids_of(conn: sqlite3.Connection, uids: Sequence[str]) -> dict[str, int]:
    """Return uid → id for the stored memories among ``uids``."""
    found: dict[str, int] = {}
    for start in range(0, len(uids), 500):
        chunk = list(uids[start : start + 500])
        found.update(
            (str(r[0]), int(r[1]))
            for r in conn.execute(f"SELECT uid, id FROM memories WHERE uid IN ({_marks(chunk)})", chunk)
        )
    return found


def _memory_values(conn: sqlite3.Connection, fields: dict[str, Any]) -> dict[str, Any]:
    known = set(columns(conn, "memories")) - MEMORY_DERIVED_COLUMNS
    return {
        name: _dumps(value) if name in MEMORY_JSON_COLUMNS and not isinstance(value, str) else value
        for name, value in fields.items()
        if name in known
    }


def insert_memory(conn: sqlite3.Connection, uid: str, fields: dict[str, Any], keep_id: int | None) -> int:
    """Insert an imported memory row (no FTS, tags or payload); keep ``keep_id`` when that id is free."""
    values = _memory_values(conn, fields)
    values["uid"] = uid
    if (
        keep_id is not None
        and conn.execute("SELECT 1 FROM memories WHERE id = :id", {"id": keep_id}).fetchone() is None
    ):
        values["id"] = keep_id
    names = list(values)
    cursor = conn.execute(
        f"INSERT INTO memories ({', '.join(names)}) VALUES ({', '.join(':' + n for n in names)})", values
    )
    return int(values.get("id") or cursor.lastrowid or 0)


def overwrite_memory(conn: sqlite3.Connection, memory_id: int, fields: dict[str, Any]) -> None:
    """Replace the stored columns of ``memory_id`` by ``fields`` and drop its vector."""
    values = _memory_values(conn, fields)
    if values:
        assignments = ", ".join(f"{name} = :{name}" for name in values)
        conn.execute(
            f"UPDATE memories SET {assignments} WHERE id = :memory_id", {**values, "memory_id": memory_id}
        )
    vectors.drop(conn, memory_id)


def write_derived(
    conn: sqlite3.Connection,
    memory_id: int,
    *,
    index_body: str | None,
    tags: Iterable[tuple[str, str]],
    perception: tuple[str | None, str | None] | None,
) -> None:
    """Replace the FTS row (None: none, for memories that are not active), tags and perception payload."""
    text_index.replace(conn, memory_id, index_body)
    conn.execute("DELETE FROM memory_tags WHERE memory_id = :id", {"id": memory_id})
    conn.executemany(
        "INSERT OR IGNORE INTO memory_tags (memory_id, tag, source) VALUES (:id, :tag, :source)",
        [{"id": memory_id, "tag": tag, "source": source} for tag, source in tags],
    )
    conn.execute("DELETE FROM perception_payloads WHERE memory_id = :id", {"id": memory_id})
    if perception is not None:
        conn.execute(
            "INSERT INTO perception_payloads (memory_id, data, metadata) VALUES (:id, :data, :metadata)",
            {"id": memory_id, "data": perception[0], "metadata": perception[1]},
        )


def set_lineage(
    conn: sqlite3.Connection,
    memory_id: int,
    superseded_by: int | None,
    merged_ids: Sequence[int],
    *,
    fill_only: bool,
) -> None:
    """Set ``superseded_by`` and ``merged_ids``; with ``fill_only`` only where they are still empty."""
    if fill_only:
        conn.execute(
            "UPDATE memories SET superseded_by = COALESCE(superseded_by, :sup), "
            "merged_ids = CASE WHEN merged_ids IN ('', '[]') THEN :merged ELSE merged_ids END WHERE id = :id",
            {"id": memory_id, "sup": superseded_by, "merged": _dumps(list(merged_ids))},
        )
        return
    conn.execute(
        "UPDATE memories SET superseded_by = :sup, merged_ids = :merged WHERE id = :id",
        {"id": memory_id, "sup": superseded_by, "merged": _dumps(list(merged_ids))},
    )


def session_exists(conn: sqlite3.Connection, session_id: str) -> bool:
    """Return True when a session with this id is stored."""
    return conn.execute("SELECT 1 FROM sessions WHERE id = :id", {"id": session_id}).fetchone() is not None


def write_session(conn: sqlite3.Connection, fields: dict[str, Any], outcome: dict[str, Any] | None) -> None:
    """Insert or replace the session ``fields["id"]`` and its outcome row."""
    # The outcome goes first: it references the session row that INSERT OR REPLACE deletes.
    conn.execute("DELETE FROM session_outcomes WHERE session_id = :id", {"id": fields["id"]})
    _replace_row(conn, "sessions", fields, SESSION_JSON_COLUMNS)
    if outcome is not None:
        _replace_row(conn, "session_outcomes", {**outcome, "session_id": fields["id"]}, SESSION_JSON_COLUMNS)


def _replace_row(
    conn: sqlite3.Connection, table: str, fields: dict[str, Any], json_columns: frozenset[str]
) -> None:
    known = set(columns(conn, table))
    values = {
        name: _dumps(value)
        if name in json_columns and value is not None and not isinstance(value, str)
        else value
        for name, value in fields.items()
        if name in known
    }
    names = list(values)
    conn.execute(
        f"INSERT OR REPLACE INTO {table} ({', '.join(names)}) VALUES ({', '.join(':' + n for n in names)})",
        values,
    )


class Transfer:
    """``TransferRows`` on SQLite."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def schema_version(self) -> int:
        return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    def count_memories(self, collection: str | None) -> int:
        return count_memories(self._conn, collection)

    def count_sessions(self, collection: str | None) -> int:
        return count_sessions(self._conn, collection)

    def iter_sessions(self, collection: str | None) -> Iterator[dict[str, Any]]:
        return iter_sessions(self._conn, collection)

    def iter_memories(self, collection: str | None, *, with_vectors: bool) -> Iterator[dict[str, Any]]:
        return iter_memories(self._conn, collection, with_vectors=with_vectors)

    def ids_of(self, uids: Sequence[str]) -> dict[str, int]:
        return ids_of(self._conn, uids)

    def insert_memory(self, uid: str, fields: dict[str, Any], keep_id: int | None) -> int:
        return insert_memory(self._conn, uid, fields, keep_id)

    def overwrite_memory(self, memory_id: int, fields: dict[str, Any]) -> None:
        overwrite_memory(self._conn, memory_id, fields)

    def write_derived(
        self,
        memory_id: int,
        *,
        index_body: str | None,
        tags: Sequence[tuple[str, str]],
        perception: tuple[str | None, str | None] | None,
    ) -> None:
        write_derived(self._conn, memory_id, index_body=index_body, tags=tags, perception=perception)

    def set_lineage(
        self, memory_id: int, superseded_by: int | None, merged_ids: Sequence[int], *, fill_only: bool
    ) -> None:
        set_lineage(self._conn, memory_id, superseded_by, list(merged_ids), fill_only=fill_only)

    def session_exists(self, session_id: str) -> bool:
        return session_exists(self._conn, session_id)

    def write_session(self, fields: dict[str, Any], outcome: dict[str, Any] | None) -> None:
        write_session(self._conn, fields, outcome)
