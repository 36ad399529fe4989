"""The spatial index of ``spatial.position``: SQLite's R*Tree, one row per active memory with a position.

``memory_positions`` is an ``rtree`` whose first dimension is the frame (a code from ``memory_frames``,
``query.regions``: a memory naming no frame is in ``DEFAULT_FRAME``) and whose next three are x, y, z; a 2-D
position spans every z. The R*Tree keeps its bounds as 32-bit floats rounded outward, so it proposes a
superset; the exact coordinates ride along as auxiliary columns and ``within`` keeps only the positions the
region truly holds (``Region.contains``, float64). Triggers on ``memories`` keep it (a schema migration adds
it), so learn, update, forget, import, sync and any other writer keep it right without knowing it exists.
A position is a list of 2 or 3 numbers; a frame, when named, a text.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import numpy.typing as npt

from robotmem.query.regions import DEFAULT_FRAME, Region

# A 2-D position spans this z range (within a 32-bit float), so a 3-D box proposes it and the exact test,
# which needs a third coordinate, turns it away.
_ANY_Z = 1e38

CREATE = (
    "CREATE TABLE memory_frames (code INTEGER PRIMARY KEY, frame TEXT NOT NULL UNIQUE)",
    "CREATE VIRTUAL TABLE memory_positions USING rtree("
    "id, f_lo, f_hi, x_lo, x_hi, y_lo, y_hi, z_lo, z_hi, +dims, +x, +y, +z)",
)


def _parts(context: str) -> tuple[str, str, str]:
    """SQL for the frame (NULL: not indexed), the position's length (NULL: not a position) and its
    coordinate ``K`` (to replace), of the JSON ``context`` expression."""
    safe = f"(CASE WHEN json_valid({context}) THEN {context} ELSE '{{}}' END)"
    frame = (
        f"(CASE WHEN json_type({safe}, '$.spatial.frame') IS NULL THEN '{DEFAULT_FRAME}' "
        f"WHEN json_type({safe}, '$.spatial.frame') = 'text' THEN json_extract({safe}, '$.spatial.frame') END)"
    )

    def number(k: int) -> str:
        return f"json_type({safe}, '$.spatial.position[{k}]') IN ('integer', 'real')"

    dims = (
        f"(CASE WHEN json_type({safe}, '$.spatial.position') = 'array' "
        f"AND json_array_length({safe}, '$.spatial.position') IN (2, 3) AND {number(0)} AND {number(1)} "
        f"AND (json_array_length({safe}, '$.spatial.position') = 2 OR {number(2)}) "
        f"THEN json_array_length({safe}, '$.spatial.position') END)"
    )
    return frame, dims, f"json_extract({safe}, '$.spatial.position[K]')"


def _insert(row: str, source: str = "") -> list[str]:
    """The statements indexing the active memory ``row`` (``NEW``, or ``m`` of ``source``)."""
    frame, dims, coordinate = _parts(f"{row}.context")
    x, y, z = (coordinate.replace("[K]", f"[{k}]") for k in range(3))
    rows = f"SELECT {row}.id AS id, {frame} AS frame, {dims} AS dims {source} WHERE {row}.status = 'active'"
    z_lo = f"CASE WHEN p.dims = 3 THEN p.z ELSE -{_ANY_Z} END"
    z_hi = f"CASE WHEN p.dims = 3 THEN p.z ELSE {_ANY_Z} END"
    located = (
        f"SELECT r.id, r.frame, r.dims, {x} AS x, {y} AS y, CASE WHEN r.dims = 3 THEN {z} END AS z "
        f"FROM ({rows}) r {', memories m' if source else ''} "
        f"WHERE r.frame IS NOT NULL AND r.dims IS NOT NULL{' AND m.id = r.id' if source else ''}"
    )
    return [
        f"INSERT OR IGNORE INTO memory_frames (frame) SELECT frame FROM ({rows}) "
        "WHERE frame IS NOT NULL AND dims IS NOT NULL",
        "INSERT INTO memory_positions (id, f_lo, f_hi, x_lo, x_hi, y_lo, y_hi, z_lo, z_hi, dims, x, y, z) "
        f"SELECT p.id, f.code, f.code, p.x, p.x, p.y, p.y, {z_lo}, {z_hi}, p.dims, p.x, p.y, p.z "
        f"FROM ({located}) p JOIN memory_frames f ON f.frame = p.frame",
    ]


def _trigger(name: str, event: str, statements: list[str]) -> str:
    return f"CREATE TRIGGER {name} AFTER {event} ON memories BEGIN {'; '.join(statements)}; END"


TRIGGERS = (
    _trigger("memory_positions_insert", "INSERT", _insert("NEW")),
    _trigger(
        "memory_positions_update",
        "UPDATE OF context, status",
        ["DELETE FROM memory_positions WHERE id = OLD.id", *_insert("NEW")],
    ),
    _trigger("memory_positions_delete", "DELETE", ["DELETE FROM memory_positions WHERE id = OLD.id"]),
)


# What the migration adds, undone (tests write files of earlier versions this way).
DROP = (
    "DROP TRIGGER memory_positions_insert",
    "DROP TRIGGER memory_positions_update",
    "DROP TRIGGER memory_positions_delete",
    "DROP TABLE memory_positions",
    "DROP TABLE memory_frames",
)


def create(conn: sqlite3.Connection) -> None:
    """Create the index and its triggers, and fill it from every stored memory (a migration's step)."""
    for statement in (*CREATE, *TRIGGERS):
        conn.execute(statement)
    rebuild(conn)


def rebuild(conn: sqlite3.Connection) -> int:
    """Index every active memory again from its context; return how many positions are indexed."""
    conn.execute("DELETE FROM memory_positions")
    for statement in _insert("m", "FROM memories m"):
        conn.execute(statement)
    return int(conn.execute("SELECT count(*) FROM memory_positions").fetchone()[0])


def within(conn: sqlite3.Connection, region: Region) -> npt.NDArray[np.int64]:
    """The ids (ascending) of the active memories whose position lies in ``region``, exactly."""
    found = conn.execute("SELECT code FROM memory_frames WHERE frame = ?", (region.frame,)).fetchone()
    if found is None:
        return np.zeros(0, dtype=np.int64)
    (low, high), code = region.bounds, int(found[0])
    z = (low[2], high[2]) if region.dims == 3 else (-_ANY_Z, _ANY_Z)
    rows = conn.execute(
        "SELECT id, x, y, z FROM memory_positions WHERE f_lo <= :c AND f_hi >= :c "
        "AND x_hi >= :x0 AND x_lo <= :x1 AND y_hi >= :y0 AND y_lo <= :y1 AND z_hi >= :z0 AND z_lo <= :z1",
        {"c": code, "x0": low[0], "x1": high[0], "y0": low[1], "y1": high[1], "z0": z[0], "z1": z[1]},
    ).fetchall()
    if not rows:
        return np.zeros(0, dtype=np.int64)
    table = np.array([(r[1], r[2], np.nan if r[3] is None else r[3]) for r in rows], dtype=np.float64)
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    return np.sort(ids[region.contains(table)])
