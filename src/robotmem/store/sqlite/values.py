"""The context-value index: which memory carries which context value (``robotmem.naming``), in SQL.

``context_values(value, memory_id)`` holds, for every memory (any status), the folded string values of its
context that a query may name. Triggers on ``memories`` keep it (schema version 5), so every writer —
learn, update, import, sync, another process, the sqlite3 shell — keeps it right without knowing it
exists. ``VALUES_OF`` is ``naming.context_values`` in SQL: three levels of ``json_each``, the skipped
sections and fields, ``lower(trim(v, ' '))`` and the length bounds
(``tests/store/sqlite/test_context_values.py`` checks the two agree).

Recall looks a query's ``naming.value_candidates`` up in the index (``named_values``): one probe of the
primary key per candidate.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection
from typing import Any

from robotmem.naming import MAX_CHARS, MIN_CHARS, SKIPPED_FIELDS, SKIPPED_SECTIONS


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


def values_of(context: str, memory_id: str, source: str = "") -> str:
    """Return SQL selecting ``(value, memory_id)`` of the values of the JSON ``context`` expression.

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
            f"SELECT lower({text}) AS value, {memory_id} AS memory_id {from_clause} WHERE {' AND '.join(where)}"
        )
    return " UNION ".join(selects)


CREATE_TABLE = (
    "CREATE TABLE context_values (value TEXT NOT NULL, memory_id INTEGER NOT NULL, "
    "PRIMARY KEY (value, memory_id)) WITHOUT ROWID"
)
CREATE_INDEX = "CREATE INDEX idx_context_values_memory ON context_values(memory_id)"
_INSERT_NEW = f"INSERT OR IGNORE INTO context_values (value, memory_id) {values_of('NEW.context', 'NEW.id')}"
TRIGGERS = (
    f"CREATE TRIGGER context_values_insert AFTER INSERT ON memories BEGIN {_INSERT_NEW}; END",
    "CREATE TRIGGER context_values_update AFTER UPDATE OF id, context ON memories BEGIN "
    f"DELETE FROM context_values WHERE memory_id = OLD.id; {_INSERT_NEW}; END",
    "CREATE TRIGGER context_values_delete AFTER DELETE ON memories BEGIN "
    "DELETE FROM context_values WHERE memory_id = OLD.id; END",
)
EXPECTED = values_of("m.context", "m.id", "memories m, ")


def rebuild(conn: sqlite3.Connection) -> int:
    """Recompute the whole index from the contexts; return the rows it holds."""
    conn.execute("DELETE FROM context_values")
    conn.execute(f"INSERT OR IGNORE INTO context_values (value, memory_id) {EXPECTED}")
    return int(conn.execute("SELECT COUNT(*) FROM context_values").fetchone()[0])


# The memories whose index rows differ from what their contexts give (``robotmem check``).
STALE = (
    f"FROM (SELECT memory_id FROM (SELECT value, memory_id FROM ({EXPECTED}) "
    "EXCEPT SELECT value, memory_id FROM context_values) "
    "UNION SELECT memory_id FROM (SELECT value, memory_id FROM context_values "
    f"EXCEPT SELECT value, memory_id FROM ({EXPECTED}))) d"
)


def carried_counts(conn: sqlite3.Connection, candidates: Collection[str], collection: str) -> dict[str, int]:
    """Return value → active memories of ``collection`` carrying it, for the ``candidates`` some carry."""
    if not candidates:
        return {}
    sql = (
        "SELECT v.value, COUNT(*) FROM context_values v JOIN memories m ON m.id = v.memory_id "
        "WHERE v.value IN (SELECT value FROM json_each(:candidates)) "
        "AND m.collection = :collection AND m.status = 'active' GROUP BY v.value"
    )
    params = {"candidates": json.dumps(sorted(candidates)), "collection": collection}
    return {str(value): int(count) for value, count in conn.execute(sql, params)}


def carriers(
    conn: sqlite3.Connection, values: Collection[str], predicate: str, params: dict[str, Any]
) -> list[tuple[int, str]]:
    """Return ``(memory id, value)`` for the memories passing ``predicate`` that carry one of ``values``."""
    if not values:
        return []
    sql = (
        "SELECT v.memory_id, v.value FROM context_values v JOIN memories m ON m.id = v.memory_id "
        f"WHERE v.value IN (SELECT value FROM json_each(:cv_values)) AND {predicate}"
    )
    rows = conn.execute(sql, {**params, "cv_values": json.dumps(sorted(values))})
    return [(int(memory_id), str(value)) for memory_id, value in rows]


def postings(conn: sqlite3.Connection, candidates: Collection[str]) -> list[tuple[str, int]]:
    """Return ``(value, memory id)`` of every memory (any collection or status) carrying a candidate."""
    if not candidates:
        return []
    sql = (
        "SELECT value, memory_id FROM context_values "
        "WHERE value IN (SELECT value FROM json_each(:candidates))"
    )
    return [(str(v), int(m)) for v, m in conn.execute(sql, {"candidates": json.dumps(sorted(candidates))})]


def active_count(conn: sqlite3.Connection, collection: str) -> int:
    """Return how many active memories ``collection`` holds."""
    sql = "SELECT COUNT(*) FROM memories WHERE collection = :collection AND status = 'active'"
    return int(conn.execute(sql, {"collection": collection}).fetchone()[0])
