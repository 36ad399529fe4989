"""The context-value index: which memory carries which context value (``robotmem.text.naming``), in SQL.

``context_values(collection, value, memory_id)`` holds, for every memory (any status), the folded string
values of its context that a query may name, keyed by collection so that how many memories of a
collection carry a value is a count over one range of the primary key. Triggers on ``memories`` keep it (schema version 5), so every writer —
learn, update, import, sync, another process, the sqlite3 shell — keeps it right without knowing it
exists. ``VALUES_OF`` is ``naming.context_values`` in SQL: three levels of ``json_each``, the skipped
sections and fields, ``lower(trim(v, ' '))`` and the length bounds
(``tests/store/sqlite/test_context_values.py`` checks the two agree).

Recall looks a query's ``naming.value_candidates`` up in the index: ``carried_counts`` (a probe of the
primary key per candidate, counting index entries only), then ``carriers`` of the values that are rare
enough to name memories.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection
from typing import Any

from robotmem.text.naming import MAX_CHARS, MIN_CHARS, SKIPPED_FIELDS, SKIPPED_SECTIONS


def _quoted(names: Collection[str]) -> str:
    return ", ".join("'" + name.replace("'", "''") + "'" for name in sorted(names))


def _skipped_fields(depth: int) -> str:
    """SQL that is true when a level-``depth`` value lies at or under one of ``SKIPPED_FIELDS``."""
    tests = [
        " AND ".join(f"e{level + 1}.key = '{key}'" for level, key in enumerate(path))
        for path in sorted(SKIPPED_FIELDS)
        if len(path) <= depth
    ]
    return " OR ".join(f"({t})" for t in tests) if tests else "0"


def values_of(context: str, memory_id: str, collection: str, source: str = "") -> str:
    """Return SQL selecting ``(collection, value, memory_id)`` of the values of the JSON ``context`` expression.

    ``source`` is put before the ``json_each`` calls in the FROM clause (``"memories m, "`` for every
    row); ``context`` and ``memory_id`` may refer to it.
    """
    sections = _quoted(SKIPPED_SECTIONS)
    safe = f"(CASE WHEN json_valid({context}) AND json_type({context}) = 'object' THEN {context} ELSE '{{}}' END)"

    def nested(level: int) -> str:
        outer = f"e{level - 1}"
        return f"json_each(CASE WHEN {outer}.type = 'object' THEN {outer}.value ELSE '{{}}' END) e{level}"

    levels = [
        f"FROM {source}json_each({safe}) e1",
        f"FROM {source}json_each({safe}) e1, {nested(2)}",
        f"FROM {source}json_each({safe}) e1, {nested(2)}, {nested(3)}",
    ]
    selects = []
    for depth, from_clause in enumerate(levels, start=1):
        leaf = f"e{depth}.value"
        # Up to the first NUL (length() stops there in every SQLite version), spaces trimmed.
        text = f"trim(substr({leaf}, 1, length({leaf})), ' ')"
        where = [f"e{depth}.type = 'text'", f"e1.key NOT IN ({sections})", f"NOT ({_skipped_fields(depth)})"]
        where += [f"e{level}.type = 'object'" for level in range(1, depth)]
        where.append(f"length({text}) BETWEEN {MIN_CHARS} AND {MAX_CHARS}")
        selects.append(
            f"SELECT {collection} AS collection, lower({text}) AS value, {memory_id} AS memory_id "
            f"{from_clause} WHERE {' AND '.join(where)}"
        )
    return " UNION ".join(selects)


CREATE_TABLE = (
    "CREATE TABLE context_values (collection TEXT NOT NULL, value TEXT NOT NULL, memory_id INTEGER NOT NULL, "
    "PRIMARY KEY (collection, value, memory_id)) WITHOUT ROWID"
)
CREATE_INDEX = "CREATE INDEX idx_context_values_memory ON context_values(memory_id)"
_COLUMNS = "context_values (collection, value, memory_id)"
_INSERT_NEW = f"INSERT OR IGNORE INTO {_COLUMNS} {values_of('NEW.context', 'NEW.id', 'NEW.collection')}"
TRIGGERS = (
    f"CREATE TRIGGER context_values_insert AFTER INSERT ON memories BEGIN {_INSERT_NEW}; END",
    "CREATE TRIGGER context_values_update AFTER UPDATE OF id, collection, context ON memories BEGIN "
    f"DELETE FROM context_values WHERE memory_id = OLD.id; {_INSERT_NEW}; END",
    "CREATE TRIGGER context_values_delete AFTER DELETE ON memories BEGIN "
    "DELETE FROM context_values WHERE memory_id = OLD.id; END",
)
EXPECTED = values_of("m.context", "m.id", "m.collection", "memories m, ")
_ROW = "collection, value, memory_id"


def rebuild(conn: sqlite3.Connection) -> int:
    """Recompute the whole index from the contexts; return the rows it holds."""
    conn.execute("DELETE FROM context_values")
    conn.execute(f"INSERT OR IGNORE INTO {_COLUMNS} {EXPECTED}")
    return int(conn.execute("SELECT COUNT(*) FROM context_values").fetchone()[0])


# The memories whose index rows differ from what their contexts give (``robotmem check``).
STALE = (
    f"FROM (SELECT memory_id FROM (SELECT {_ROW} FROM ({EXPECTED}) EXCEPT SELECT {_ROW} FROM context_values) "
    f"UNION SELECT memory_id FROM (SELECT {_ROW} FROM context_values EXCEPT SELECT {_ROW} FROM ({EXPECTED}))) d"
)


def carried_counts(conn: sqlite3.Connection, candidates: Collection[str], collection: str) -> dict[str, int]:
    """Return value → memories of ``collection`` (any status) carrying it, for the ``candidates`` some carry.

    One count over a range of the primary key per value: no memory row is read.
    """
    if not candidates:
        return {}
    sql = (
        "SELECT value, COUNT(*) FROM context_values WHERE collection = :collection "
        "AND value IN (SELECT value FROM json_each(:candidates)) GROUP BY value"
    )
    params = {"candidates": json.dumps(sorted(candidates)), "collection": collection}
    return {str(value): int(count) for value, count in conn.execute(sql, params)}


def collection_size(conn: sqlite3.Connection, collection: str) -> int:
    """Return how many memories (any status) ``collection`` holds."""
    sql = "SELECT COUNT(*) FROM memories WHERE collection = :collection"
    return int(conn.execute(sql, {"collection": collection}).fetchone()[0])


def carriers(
    conn: sqlite3.Connection,
    collection: str,
    values: Collection[str],
    predicate: str = "1",
    params: dict[str, Any] | None = None,
) -> list[tuple[int, str]]:
    """Return ``(memory id, value)`` for the memories of ``collection`` passing ``predicate`` (over
    ``memories m``; the default reads no memory row) that carry one of ``values``."""
    if not values:
        return []
    joined = "" if predicate == "1" else "JOIN memories m ON m.id = v.memory_id "
    sql = (
        f"SELECT v.memory_id, v.value FROM context_values v {joined}WHERE v.collection = :cv_collection "
        f"AND v.value IN (SELECT value FROM json_each(:cv_values)) AND {predicate}"
    )
    bound = {**(params or {}), "cv_collection": collection, "cv_values": json.dumps(sorted(values))}
    return [(int(memory_id), str(value)) for memory_id, value in conn.execute(sql, bound)]
