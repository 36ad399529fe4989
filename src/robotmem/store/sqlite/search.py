"""Search queries: BM25 over FTS5 and id selection under a compiled filter predicate.

``predicate`` is a boolean SQL expression over ``memories m`` built by ``robotmem.filters`` and the
recall planner; ``params`` are its named parameters.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from robotmem.filters import json_path
from robotmem.text import fts_query, word_set

# Words of plain ASCII letters, digits, '_' and '.' give the same FTS tokens alone as inside a sentence
# (CJK segmentation may differ), so only they are used as probe words.
_PROBE_WORD = re.compile(r"[0-9a-z_.]+")
_DF_CAP = 100


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


def jaccard_candidates(
    conn: sqlite3.Connection, text: str, predicate: str, params: dict[str, Any], limit: int, threshold: float
) -> list[tuple[int, float]]:
    """Return ``search_fts`` results for ``text`` restricted to rows that can reach word Jaccard ≥ ``threshold``.

    A text with Jaccard ≥ ``threshold`` to one with words W misses at most ⌊(1 − threshold)·|W|⌋ of them,
    so it contains one of any ⌊(1 − threshold)·|W|⌋ + 1 words of W. Requiring one of the rarest that many
    (AND-ed with the OR of all words, which still ranks) spares scoring every row that shares only common
    words, and loses no possible duplicate. Falls back to the plain OR query when too few words qualify.
    """
    match = fts_query(text)
    if match is None:
        return []
    words = sorted(word_set(text))
    needed = math.floor((1.0 - threshold) * len(words)) + 1
    probes = {w: q for w in words if _PROBE_WORD.fullmatch(w) and (q := fts_query(w)) is not None}
    if not 0.0 < threshold <= 1.0 or len(probes) < needed:
        return search_fts(conn, match, predicate, params, limit)
    counts = {
        w: int(
            conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH :q LIMIT :cap)",
                {"q": q, "cap": _DF_CAP},
            ).fetchone()[0]
        )
        for w, q in probes.items()
    }
    rarest = sorted(probes, key=lambda w: (counts[w], w))[:needed]
    if all(counts[w] == 0 for w in rarest):
        return []  # no stored row holds any of them, so none can be a duplicate
    probe = " OR ".join(f"({probes[w]})" for w in rarest)
    return search_fts(conn, f"({match}) AND ({probe})", predicate, params, limit)


def id_chunks(ids: Sequence[int], size: int = 900) -> Iterator[tuple[str, dict[str, int]]]:
    """Yield ``(marks, params)`` for ``m.id IN (marks)`` over ``ids``, ``size`` at a time (SQLite's bound)."""
    for start in range(0, len(ids), size):
        keyed = {f"id{i}": memory_id for i, memory_id in enumerate(ids[start : start + size])}
        yield ",".join(":" + key for key in keyed), keyed


def passing(conn: sqlite3.Connection, ids: Sequence[int], predicate: str, params: dict[str, Any]) -> set[int]:
    """Return the ids among ``ids`` whose rows pass ``predicate``."""
    found: set[int] = set()
    for marks, keyed in id_chunks(ids):
        sql = f"SELECT m.id FROM memories m WHERE m.id IN ({marks}) AND {predicate}"
        found.update(int(r[0]) for r in conn.execute(sql, {**params, **keyed}))
    return found


def real_world(conn: sqlite3.Connection, ids: Sequence[int]) -> set[int]:
    """Return the ids among ``ids`` whose context has ``env.sim_or_real`` equal to ``"real"``."""
    found: set[int] = set()
    for marks, keyed in id_chunks(ids):
        sql = (
            f"SELECT m.id FROM memories m WHERE m.id IN ({marks}) "
            "AND json_extract(m.context, '$.env.sim_or_real') = 'real'"
        )
        found.update(int(r[0]) for r in conn.execute(sql, keyed))
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


def first_ids(conn: sqlite3.Connection, predicate: str, params: dict[str, Any], limit: int) -> list[int]:
    """Return up to ``limit`` ids passing ``predicate``, smallest first."""
    sql = f"SELECT m.id FROM memories m WHERE {predicate} ORDER BY m.id LIMIT :first_limit"
    return [int(r[0]) for r in conn.execute(sql, {**params, "first_limit": limit})]


def coordinates(
    conn: sqlite3.Connection, path: Sequence[str], predicate: str, params: dict[str, Any]
) -> dict[int, Any]:
    """Return id → the JSON value at context ``path`` for rows passing ``predicate`` that have it."""
    sql = (
        "SELECT m.id, json_extract(m.context, :spatial_path) FROM memories m "
        f"WHERE {predicate} AND json_type(m.context, :spatial_path) IN ('array', 'object')"
    )
    out: dict[int, Any] = {}
    for memory_id, raw in conn.execute(sql, {**params, "spatial_path": json_path(path)}):
        try:
            out[int(memory_id)] = json.loads(raw)
        except (TypeError, ValueError):
            continue
    return out
