"""Export, import and sync records, built alike on both engines.

A record has one shape on both engines: the columns of ``COLUMNS`` in that order (SQLite adds any
column a later migration brings), JSON columns parsed, vectors as little-endian float32 bytes,
lineage by uid. So a file exported from one engine imports into the other, and a robot's SQLite
store syncs with a fleet store on PostgreSQL.

``ExportRows`` and ``ChangeRows`` hold what each engine's ``Transfer`` and ``Sync`` do alike: the
statements whose text is the same in both dialects (written with ``:name`` parameters, placed in the
engine's ``style``) and the records built around them. An engine's ``Transfer`` adds its own SQL
through the hooks ``ExportRows`` names: how it reads rows, tags, payloads and vectors, how it matches
a list of values, and the writes of import that differ.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Protocol

from robotmem.records import export_entries, linked_ids
from robotmem.store.protocol import StoreIdentity, SyncCursor

# The columns a record of each table carries, in order.
COLUMNS: dict[str, tuple[str, ...]] = {
    "memories": (
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
        "observed_at",
    ),
    "sessions": ("id", "collection", "context", "status", "summary", "created_at", "ended_at"),
    "session_outcomes": ("session_id", "outcome_score", "memory_count", "summary", "created_at"),
}
# Columns holding JSON text: a record carries them parsed; they are stored back as compact JSON.
JSON_COLUMNS: dict[str, frozenset[str]] = {
    "memories": frozenset({"context", "scope_files", "scope_entities", "merged_ids"}),
    "sessions": frozenset({"context", "summary"}),
    "session_outcomes": frozenset({"summary"}),
}
# Columns import never copies from a record: identity and lineage are remapped, the vector state is derived.
MEMORY_DERIVED_COLUMNS = frozenset({"id", "uid", "superseded_by", "merged_ids", "embedding_model"})
# How many rows (or values of an ``IN`` list) one statement reads.
BATCH = 500

# Placeholder styles: ``style.format(name)`` is the parameter ``name`` in an engine's SQL.
SQLITE = ":{}"
POSTGRES = "%({})s"
_PARAMETER = re.compile(r"(?<![:\w]):(\w+)")

# The memories of one collection, or of all for NULL (the cast gives PostgreSQL the parameter's type).
_OF_COLLECTION = "(CAST(:collection AS TEXT) IS NULL OR collection = :collection)"
# The sessions an export of one collection (or of all) carries: its own and those its memories name.
_SESSIONS_OF = (
    "WHERE CAST(:collection AS TEXT) IS NULL OR collection = :collection "
    "OR id IN (SELECT session_id FROM memories WHERE collection = :collection)"
)


class Connection(Protocol):
    """What the shared statements ask of a connection: ``sqlite3``'s and ``psycopg``'s both do it."""

    def execute(self, sql: str, params: Any = ..., /) -> Any: ...

    def cursor(self) -> Any: ...


def placed(sql: str, style: str) -> str:
    """Return ``sql``, whose parameters are written ``:name``, with its parameters in ``style``."""
    return sql if style == SQLITE else _PARAMETER.sub(lambda found: style.format(found[1]), sql)


def dumps(value: Any) -> str:
    """Return ``value`` as the compact JSON text a JSON column stores."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def column_values(
    fields: Mapping[str, Any], known: Iterable[str], json_columns: frozenset[str]
) -> dict[str, Any]:
    """Return the values to store for the ``known`` columns among ``fields``, JSON columns as text."""
    wanted = set(known)
    return {
        name: dumps(value)
        if name in json_columns and value is not None and not isinstance(value, str)
        else value
        for name, value in fields.items()
        if name in wanted
    }


class Statements:
    """A connection and its engine's placeholder style: runs the shared statements."""

    style: ClassVar[str]

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def _run(self, sql: str, params: Mapping[str, Any] | None = None) -> Any:
        """Execute ``sql`` (``:name`` parameters) and return the cursor."""
        return self._conn.execute(placed(sql, self.style), params or {})

    def _run_many(self, sql: str, rows: Sequence[Mapping[str, Any]]) -> None:
        with contextlib.closing(self._conn.cursor()) as cursor:
            cursor.executemany(placed(sql, self.style), rows)


class ExportRows(Statements, ABC):
    """``TransferRows`` as both engines run it, over the hooks each engine's ``Transfer`` gives:
    ``_columns``, ``_records``, ``_among``, ``_tags``, ``_payloads``, ``_vectors``, ``_index`` and
    ``_put``; the engine adds ``schema_version``, ``insert_memory`` and ``overwrite_memory``."""

    def count_memories(self, collection: str | None) -> int:
        sql = f"SELECT COUNT(*) FROM memories WHERE {_OF_COLLECTION}"
        return int(self._run(sql, {"collection": collection}).fetchone()[0])

    def count_sessions(self, collection: str | None) -> int:
        sql = f"SELECT COUNT(*) FROM sessions {_SESSIONS_OF}"
        return int(self._run(sql, {"collection": collection}).fetchone()[0])

    def iter_sessions(self, collection: str | None) -> Iterator[dict[str, Any]]:
        yield from self._sessions(f"{_SESSIONS_OF} ORDER BY created_at, id", {"collection": collection})

    def iter_memories(self, collection: str | None, *, with_vectors: bool) -> Iterator[dict[str, Any]]:
        after = 0
        while True:
            found = self._memories(
                f"WHERE {_OF_COLLECTION} AND id > :after ORDER BY id LIMIT :limit",
                {"collection": collection, "after": after, "limit": BATCH},
                with_vectors=with_vectors,
            )
            if not found:
                return
            after = int(found[-1]["memory"]["id"])
            yield from found

    def ids_of(self, uids: Sequence[str]) -> dict[str, int]:
        return {str(uid): int(memory_id) for uid, memory_id in self._pairs("uid", "id", uids)}

    def write_derived(
        self,
        memory_id: int,
        *,
        index_body: str | None,
        tags: Sequence[tuple[str, str]],
        perception: tuple[str | None, str | None] | None,
    ) -> None:
        self._index(memory_id, index_body)
        self._run("DELETE FROM memory_tags WHERE memory_id = :id", {"id": memory_id})
        self._run_many(
            "INSERT INTO memory_tags (memory_id, tag, source) VALUES (:id, :tag, :source) ON CONFLICT DO NOTHING",
            [{"id": memory_id, "tag": tag, "source": source} for tag, source in tags],
        )
        self._run("DELETE FROM perception_payloads WHERE memory_id = :id", {"id": memory_id})
        if perception is not None:
            self._run(
                "INSERT INTO perception_payloads (memory_id, data, metadata) VALUES (:id, :data, :metadata)",
                {"id": memory_id, "data": perception[0], "metadata": perception[1]},
            )

    def set_lineage(
        self, memory_id: int, superseded_by: int | None, merged_ids: Sequence[int], *, fill_only: bool
    ) -> None:
        params = {"id": memory_id, "successor": superseded_by, "merged": dumps(list(merged_ids))}
        if fill_only:
            self._run(
                "UPDATE memories SET superseded_by = COALESCE(superseded_by, :successor), merged_ids = CASE "
                "WHEN merged_ids IN ('', '[]') THEN :merged ELSE merged_ids END WHERE id = :id",
                params,
            )
        else:
            self._run(
                "UPDATE memories SET superseded_by = :successor, merged_ids = :merged WHERE id = :id", params
            )

    def session_exists(self, session_id: str) -> bool:
        return self._exists("sessions", session_id)

    def write_session(self, fields: dict[str, Any], outcome: dict[str, Any] | None) -> None:
        # The outcome goes first: it references the session row, which SQLite's replace deletes.
        self._run("DELETE FROM session_outcomes WHERE session_id = :id", {"id": fields["id"]})
        self._put("sessions", "id", fields)
        if outcome is not None:
            self._put("session_outcomes", "session_id", {**outcome, "session_id": fields["id"]})

    def memories_among(
        self, column: str, values: Sequence[Any], *, with_vectors: bool
    ) -> list[dict[str, Any]]:
        """Return the export records of the memories whose ``column`` (``id``, ``uid``) is among ``values``."""
        found: list[dict[str, Any]] = []
        for condition, params in self._among(column, values):
            found += self._memories(f"WHERE {condition}", params, with_vectors=with_vectors)
        return found

    def sessions_among(self, session_ids: Sequence[str]) -> list[dict[str, Any]]:
        """Return the records (with ``outcome``) of the sessions among ``session_ids``."""
        found: list[dict[str, Any]] = []
        for condition, params in self._among("id", session_ids):
            found += self._sessions(f"WHERE {condition}", params)
        return found

    def _memories(self, where: str, params: Mapping[str, Any], *, with_vectors: bool) -> list[dict[str, Any]]:
        """The export records (``TransferRows.iter_memories``) of the memories ``where`` selects."""
        found = self._records("memories", where, params)
        if not found:
            return []
        ids = [int(record["id"]) for record in found]
        uids = {int(memory_id): str(uid) for memory_id, uid in self._pairs("id", "uid", linked_ids(found))}
        vectors = self._vectors(ids) if with_vectors else {}
        return list(export_entries(found, uids, self._tags(ids), self._payloads(ids), vectors))

    def _sessions(self, where: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The records of the sessions ``where`` selects, each with its ``outcome`` (or None)."""
        found = self._records("sessions", where, params)
        outcomes: dict[Any, dict[str, Any]] = {}
        for condition, keyed in self._among("session_id", [session["id"] for session in found]):
            for outcome in self._records("session_outcomes", f"WHERE {condition}", keyed):
                outcomes[outcome.pop("session_id")] = outcome
        for session in found:
            session["outcome"] = outcomes.get(session["id"])
        return found

    def _pairs(self, key: str, value: str, keys: Sequence[Any]) -> Iterator[tuple[Any, Any]]:
        """``(key, value)`` columns of the memories whose ``key`` is among ``keys``."""
        return self._select_among(f"SELECT {key}, {value} FROM memories WHERE {{among}}", key, keys)

    def _select_among(self, sql: str, column: str, values: Sequence[Any], **params: Any) -> Iterator[Any]:
        """The rows of ``sql`` whose ``{among}`` is the condition ``column`` among ``values``."""
        for condition, keyed in self._among(column, values):
            yield from self._run(sql.format(among=condition), {**keyed, **params})

    def _memory_values(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        """The values import stores for a memory record's ``fields`` (never its derived columns)."""
        known = set(self._columns("memories")) - MEMORY_DERIVED_COLUMNS
        return column_values(fields, known, JSON_COLUMNS["memories"])

    def _new_values(self, uid: str, fields: Mapping[str, Any], keep_id: int | None) -> dict[str, Any]:
        """The values of an imported memory's new row: ``keep_id`` kept when no memory has that id."""
        values = self._memory_values(fields)
        values["uid"] = uid
        if keep_id is not None and not self._exists("memories", keep_id):
            values["id"] = keep_id
        return values

    def _exists(self, table: str, row_id: Any) -> bool:
        return self._run(f"SELECT 1 FROM {table} WHERE id = :id", {"id": row_id}).fetchone() is not None

    # ---- the engine's hooks ------------------------------------------------------------------------

    @abstractmethod
    def _columns(self, table: str) -> Sequence[str]:
        """The columns a record of ``table`` carries, in order."""

    @abstractmethod
    def _records(self, table: str, where: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The rows of ``table`` that ``where`` (``:name`` parameters) selects, as records."""

    @abstractmethod
    def _among(self, column: str, values: Sequence[Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        """Yield ``(condition, params)``: ``column`` among ``values``, in as many statements as it takes."""

    @abstractmethod
    def _tags(self, ids: Sequence[int]) -> dict[int, list[dict[str, str]]]:
        """Memory id → its ``{"tag", "source"}`` in the order they were written."""

    @abstractmethod
    def _payloads(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """Memory id → its perception payload ``{"data", "metadata"}`` parsed."""

    @abstractmethod
    def _vectors(self, ids: Sequence[int]) -> dict[int, bytes]:
        """Memory id → its vector as little-endian float32 bytes, for those of the store's recorded model."""

    @abstractmethod
    def _index(self, memory_id: int, body: str | None) -> None:
        """Index ``memory_id`` with ``body`` from now on (None: take it out)."""

    @abstractmethod
    def _put(self, table: str, key: str, fields: Mapping[str, Any]) -> None:
        """Insert the row ``fields`` of ``table``, or replace the one with the same ``key``."""


class ChangeRows(Statements):
    """``SyncRows`` as both engines run it: the records come from the engine's ``transfer``."""

    transfer: ClassVar[type[ExportRows]]

    def identity(self) -> StoreIdentity:
        found = dict(
            self._run("SELECT key, value FROM meta WHERE key IN ('store_id', 'robot_id')").fetchall()
        )
        return StoreIdentity(store_id=str(found["store_id"]), robot_id=str(found["robot_id"]))

    def last_change(self) -> tuple[int, int]:
        memory = self._run("SELECT COALESCE(MAX(seq), 0) FROM memory_changes").fetchone()[0]
        session = self._run("SELECT COALESCE(MAX(seq), 0) FROM session_changes").fetchone()[0]
        return int(memory), int(session)

    def changed_memories(self, after: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        changes = self._changes("memory_changes", "memory_id", after, limit)
        found = self.transfer(self._conn).memories_among(
            "id", [int(key) for key, _ in changes], with_vectors=True
        )
        return _in_change_order({int(r["memory"]["id"]): r for r in found}, changes, after)

    def changed_sessions(self, after: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        changes = self._changes("session_changes", "session_id", after, limit)
        found = self.transfer(self._conn).sessions_among([str(key) for key, _ in changes])
        return _in_change_order({str(r["id"]): r for r in found}, changes, after)

    def memories_by_uid(
        self, uids: Sequence[str], *, with_vectors: bool = False
    ) -> dict[str, tuple[int, dict[str, Any]]]:
        found = self.transfer(self._conn).memories_among("uid", uids, with_vectors=with_vectors)
        return {str(record["memory"]["uid"]): (int(record["memory"]["id"]), record) for record in found}

    def sessions_by_id(self, session_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        return {str(record["id"]): record for record in self.transfer(self._conn).sessions_among(session_ids)}

    def cursor(self, peer: str) -> SyncCursor:
        row = self._run(
            "SELECT pushed_memories, pushed_sessions, pulled_memories, pulled_sessions FROM sync_peers "
            "WHERE peer = :peer",
            {"peer": peer},
        ).fetchone()
        return SyncCursor() if row is None else SyncCursor(*(int(value) for value in row))

    def save_cursor(self, peer: str, location: str, cursor: SyncCursor, now: str) -> None:
        self._run(
            "INSERT INTO sync_peers (peer, location, pushed_memories, pushed_sessions, pulled_memories, "
            "pulled_sessions, synced_at) VALUES (:peer, :location, :pushed_memories, :pushed_sessions, "
            ":pulled_memories, :pulled_sessions, :now) ON CONFLICT (peer) DO UPDATE SET "
            "location = excluded.location, pushed_memories = excluded.pushed_memories, "
            "pushed_sessions = excluded.pushed_sessions, pulled_memories = excluded.pulled_memories, "
            "pulled_sessions = excluded.pulled_sessions, synced_at = excluded.synced_at",
            {"peer": peer, "location": location, "now": now, **dataclasses.asdict(cursor)},
        )

    def _changes(self, table: str, key: str, after: int, limit: int) -> list[tuple[Any, Any]]:
        """``(key, seq)`` of up to ``limit`` rows of ``table`` changed after ``after``, in change order."""
        sql = f"SELECT {key}, seq FROM {table} WHERE seq > :after ORDER BY seq LIMIT :limit"
        return list(self._run(sql, {"after": after, "limit": limit}).fetchall())


def _in_change_order(
    found: Mapping[Any, dict[str, Any]], changes: Sequence[tuple[Any, Any]], after: int
) -> tuple[list[dict[str, Any]], int]:
    """Return the records ``found`` (by key) in the order of ``changes`` (``(key, seq)`` rows) and the
    last change number examined (``after`` when there is none).

    A row deleted by hand leaves its change row: it is passed over, and the cursor moves past it.
    """
    ordered = [found[key] for key, _ in changes if key in found]
    return ordered, int(changes[-1][1]) if changes else after
