"""``TransferRows`` on SQLite: the SQL of export and import that is this engine's own.

What both engines do alike (the record shape, the statements written the same in both dialects) is
``ExportRows`` in ``store/shared/records.py``; this class gives its hooks and the writes that differ.
Export reads every column of ``memories``/``sessions`` (so columns added by later migrations travel
too) and refuses a value of a wrong kind, naming its row and column (``columns.read_row``): SQLite
keeps whatever type a statement writes, so a row written by another program may hold one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from robotmem.store.shared import records
from robotmem.store.sqlite import columns, text_index, vectors

# table → (how a message names one of its rows, the column that names it, the kinds of its columns)
_ROWS = {
    "memories": ("memory {}", "id", columns.MEMORY_COLUMNS),
    "sessions": ("session {!r}", "id", columns.SESSION_COLUMNS),
    "session_outcomes": ("outcome of session {!r}", "session_id", columns.OUTCOME_COLUMNS),
}


def _insert(verb: str, table: str, names: Sequence[str]) -> str:
    return f"{verb} INTO {table} ({', '.join(names)}) VALUES ({', '.join(':' + name for name in names)})"


class Transfer(records.ExportRows):
    """``TransferRows`` on SQLite."""

    style = records.SQLITE
    _conn: sqlite3.Connection

    def schema_version(self) -> int:
        return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    def insert_memory(self, uid: str, fields: dict[str, Any], keep_id: int | None) -> int:
        values = self._new_values(uid, fields, keep_id)
        cursor = self._conn.execute(_insert("INSERT", "memories", list(values)), values)
        return int(values.get("id") or cursor.lastrowid or 0)

    def overwrite_memory(self, memory_id: int, fields: dict[str, Any]) -> None:
        values = self._memory_values(fields)
        if values:
            assignments = ", ".join(f"{name} = :{name}" for name in values)
            self._conn.execute(
                f"UPDATE memories SET {assignments} WHERE id = :memory_id", {**values, "memory_id": memory_id}
            )
        vectors.drop(self._conn, memory_id)

    def _columns(self, table: str) -> list[str]:
        return [str(row[1]) for row in self._conn.execute(f"PRAGMA table_info({table})")]

    def _records(self, table: str, where: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        names = self._columns(table)
        what, key, kinds = _ROWS[table]
        at = names.index(key)
        rows = self._run(f"SELECT {', '.join(names)} FROM {table} {where}", params)
        return [columns.read_row(what.format(row[at]), names, row, kinds) for row in rows]

    def _among(self, column: str, values: Sequence[Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        # A statement binds a bounded number of parameters: an ``IN`` list of BATCH values at a time.
        for start in range(0, len(values), records.BATCH):
            keyed = {f"v{i}": value for i, value in enumerate(values[start : start + records.BATCH])}
            yield f"{column} IN ({', '.join(':' + key for key in keyed)})", keyed

    def _tags(self, ids: Sequence[int]) -> dict[int, list[dict[str, str]]]:
        found: dict[int, list[dict[str, str]]] = {}
        sql = "SELECT memory_id, tag, source FROM memory_tags WHERE {among} ORDER BY rowid"
        for memory_id, tag, source in self._select_among(sql, "memory_id", ids):
            if type(tag) is not str or type(source) is not str:
                what = f"tag of memory {memory_id}"
                columns.read_row(what, ("tag", "source"), (tag, source), columns.TAG_COLUMNS)
            found.setdefault(memory_id, []).append({"tag": tag, "source": source})
        return found

    def _payloads(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        sql = "SELECT memory_id, data, metadata FROM perception_payloads WHERE {among}"
        return {
            int(memory_id): columns.read_row(
                f"payload of memory {memory_id}",
                ("data", "metadata"),
                (data, metadata),
                columns.PAYLOAD_COLUMNS,
            )
            for memory_id, data, metadata in self._select_among(sql, "memory_id", ids)
        }

    def _vectors(self, ids: Sequence[int]) -> dict[int, bytes]:
        model = vectors.stored_model(self._conn)
        if model is None:
            return {}
        sql = (
            "SELECT memory_id, embedding FROM memory_vectors WHERE {among} "
            "AND embedding IS NOT NULL AND model_id = :model"
        )
        rows = self._select_among(sql, "memory_id", ids, model=model[0])
        return {int(memory_id): bytes(blob) for memory_id, blob in rows if len(blob) == 4 * model[1]}

    def _index(self, memory_id: int, body: str | None) -> None:
        text_index.replace(self._conn, memory_id, body)

    def _put(self, table: str, key: str, fields: Mapping[str, Any]) -> None:
        values = records.column_values(fields, self._columns(table), records.JSON_COLUMNS[table])
        self._conn.execute(_insert("INSERT OR REPLACE", table, list(values)), values)
