"""``TransferRows`` on PostgreSQL: the SQL of export and import that is this engine's own.

What both engines do alike (the record shape, the statements written the same in both dialects) is
``ExportRows`` in ``store/shared/records.py``; this class gives its hooks and the writes that differ.
A memory's context is stored twice, ``context`` (``jsonb``, what filters read) and ``context_text``
(the text as written): records read the text, import writes both and indexes the context's values.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import psycopg

from robotmem.store.postgres import text_index
from robotmem.store.postgres.memories import filterable, write_values
from robotmem.store.postgres.vectors import stored_model
from robotmem.store.shared import records


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


class Transfer(records.ExportRows):
    """``TransferRows`` on PostgreSQL."""

    style = records.POSTGRES
    _conn: psycopg.Connection

    def schema_version(self) -> int:
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0

    def insert_memory(self, uid: str, fields: dict[str, Any], keep_id: int | None) -> int:
        values = self._new_values(uid, fields, keep_id)
        names, marks, params = _assignments(values)
        row = self._conn.execute(
            f"INSERT INTO memories ({', '.join(names)}) VALUES ({', '.join(marks)}) RETURNING id", params
        ).fetchone()
        memory_id = int(row[0]) if row else 0
        self._index_values(memory_id)
        if "id" in values:  # ids are never reused: the sequence moves past a kept one
            self._conn.execute(
                "SELECT setval(pg_get_serial_sequence('memories', 'id'), "
                "GREATEST(%s, nextval(pg_get_serial_sequence('memories', 'id'))))",
                (memory_id,),
            )
        return memory_id

    def overwrite_memory(self, memory_id: int, fields: dict[str, Any]) -> None:
        values = self._memory_values(fields)
        if values:
            names, marks, params = _assignments(values)
            assignments = ", ".join(f"{name} = {mark}" for name, mark in zip(names, marks, strict=True))
            self._conn.execute(f"UPDATE memories SET {assignments} WHERE id = %s", [*params, memory_id])
            self._index_values(memory_id)
        self._conn.execute(
            "UPDATE memories SET embedding = NULL, embedding_model = NULL WHERE id = %s", (memory_id,)
        )

    def _index_values(self, memory_id: int) -> None:
        """Index the context values of a memory just written from a record."""
        row = self._conn.execute(
            "SELECT collection, context_text FROM memories WHERE id = %s", (memory_id,)
        ).fetchone()
        if row is not None:
            context = json.loads(row[1] or "{}")
            write_values(
                self._conn,
                [(memory_id, str(row[0]), context if isinstance(context, dict) else {})],
                replace=True,
            )

    def _columns(self, table: str) -> tuple[str, ...]:
        return records.COLUMNS[table]

    def _records(self, table: str, where: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        names = self._columns(table)
        parsed = records.JSON_COLUMNS[table]
        select = ", ".join(
            "context_text" if (table, name) == ("memories", "context") else name for name in names
        )
        return [
            {
                name: json.loads(value) if name in parsed and isinstance(value, str) else value
                for name, value in zip(names, row, strict=True)
            }
            for row in self._run(f"SELECT {select} FROM {table} {where}", params)
        ]

    def _among(self, column: str, values: Sequence[Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        if values:
            yield f"{column} = ANY(:values)", {"values": list(values)}

    def _tags(self, ids: Sequence[int]) -> dict[int, list[dict[str, str]]]:
        found: dict[int, list[dict[str, str]]] = {}
        sql = "SELECT memory_id, tag, source FROM memory_tags WHERE {among} ORDER BY position"
        for memory_id, tag, source in self._select_among(sql, "memory_id", ids):
            found.setdefault(int(memory_id), []).append({"tag": tag, "source": source})
        return found

    def _payloads(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        sql = "SELECT memory_id, data, metadata FROM perception_payloads WHERE {among}"
        return {
            int(memory_id): {
                "data": None if data is None else json.loads(data),
                "metadata": None if metadata is None else json.loads(metadata),
            }
            for memory_id, data, metadata in self._select_among(sql, "memory_id", ids)
        }

    def _vectors(self, ids: Sequence[int]) -> dict[int, bytes]:
        model = stored_model(self._conn)
        if model is None:
            return {}
        sql = (
            "SELECT id, embedding FROM memories WHERE {among} AND embedding IS NOT NULL "
            "AND embedding_model = :model AND vector_dims(embedding) = :dim"
        )
        rows = self._select_among(sql, "id", ids, model=model[0], dim=model[1])
        return {
            int(memory_id): np.asarray(vector.to_numpy(), dtype="<f4").tobytes() for memory_id, vector in rows
        }

    def _index(self, memory_id: int, body: str | None) -> None:
        text_index.replace(self._conn, memory_id, body)

    def _put(self, table: str, key: str, fields: Mapping[str, Any]) -> None:
        values = records.column_values(fields, self._columns(table), records.JSON_COLUMNS[table])
        names = list(values)
        updates = ", ".join(f"{n} = EXCLUDED.{n}" for n in names if n != key) or f"{key} = EXCLUDED.{key}"
        self._conn.execute(
            f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('%s' for _ in names)}) "
            f"ON CONFLICT ({key}) DO UPDATE SET {updates}",
            [values[n] for n in names],
        )
