"""Search queries: BM25 over FTS5 and id selection under a compiled filter predicate.

``predicate`` is a boolean SQL expression over ``memories m`` built by ``robotmem.filters`` and the
recall planner; ``params`` are its named parameters.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any


def search_fts(
    conn: sqlite3.Connection, match: str, predicate: str, params: dict[str, Any], limit: int
) -> list[tuple[int, float]]:
    """Return up to ``limit`` ``(id, bm25)`` pairs best first (lower bm25 is better) among rows passing ``predicate``."""
    sql = (
        "SELECT m.id, bm25(memories_fts) AS rank FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid "
        f"WHERE memories_fts MATCH :fts_match AND {predicate} ORDER BY rank LIMIT :fts_limit"
    )
    return [
        (int(r[0]), float(r[1]))
        for r in conn.execute(sql, {**params, "fts_match": match, "fts_limit": limit})
    ]


def passing(conn: sqlite3.Connection, ids: Sequence[int], predicate: str, params: dict[str, Any]) -> set[int]:
    """Return the ids among ``ids`` whose rows pass ``predicate``."""
    found: set[int] = set()
    for start in range(0, len(ids), 900):
        chunk = ids[start : start + 900]
        keyed = {f"id{i}": memory_id for i, memory_id in enumerate(chunk)}
        marks = ",".join(":" + key for key in keyed)
        sql = f"SELECT m.id FROM memories m WHERE m.id IN ({marks}) AND {predicate}"
        found.update(int(r[0]) for r in conn.execute(sql, {**params, **keyed}))
    return found


def select_ids(
    conn: sqlite3.Connection, predicate: str, params: dict[str, Any], *, newest_first: bool, limit: int | None
) -> list[int]:
    """Return the ids passing ``predicate`` in time order (newest or oldest first), up to ``limit``."""
    order = "DESC" if newest_first else "ASC"
    sql = f"SELECT m.id FROM memories m WHERE {predicate} ORDER BY m.created_at {order}, m.id {order}"
    bound = dict(params)
    if limit is not None:
        sql += " LIMIT :select_limit"
        bound["select_limit"] = limit
    return [int(r[0]) for r in conn.execute(sql, bound)]


def coordinates(
    conn: sqlite3.Connection, path: Sequence[str], predicate: str, params: dict[str, Any]
) -> dict[int, Any]:
    """Return id → the JSON value at context ``path`` for rows passing ``predicate`` that have it."""
    json_path = "$" + "".join(
        f"[{p}]" if p.isdigit() else "." + json.dumps(p, ensure_ascii=False) for p in path
    )
    sql = (
        "SELECT m.id, json_extract(m.context, :spatial_path) FROM memories m "
        f"WHERE {predicate} AND json_type(m.context, :spatial_path) IN ('array', 'object')"
    )
    out: dict[int, Any] = {}
    for memory_id, raw in conn.execute(sql, {**params, "spatial_path": json_path}):
        try:
            out[int(memory_id)] = json.loads(raw)
        except (TypeError, ValueError):
            continue
    return out
