"""The spatial index of ``spatial.position`` on PostgreSQL: ``cube`` boxes under a GiST index.

``memory_positions`` holds one row per active memory with a position (a list of 2 or 3 numbers) and a
frame (``query.regions``: none named is ``DEFAULT_FRAME``): the exact coordinates, and a ``cube`` whose
first coordinate is a hash of the frame and whose next three are x, y, z (a 2-D position spans every z).
The GiST index proposes the rows whose cube meets the region's bounding box; ``within`` keeps those of the
frame that the region truly holds (``Region.contains``, float64) — the same rule as SQLite's R*Tree. A row
trigger on ``memories`` keeps it (a schema migration adds it, with the contrib extension ``cube``).

``predicate`` states the same test in SQL over ``memories m``, so a recall's other conditions and its order
decide how the server finds the region's memories: walking a time window and probing each memory's
position, or the GiST index first. ``within`` reads every position of the region into this process, which
costs what the region holds (a room of a million sightings: a hundred thousand rows), so only a scope mask
held in the process asks for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg

from robotmem.query.regions import DEFAULT_FRAME, Region

_ANY_Z = 1e300
_NO_OVERFLOW = 1e150  # an offset whose square, summed three times, stays a float8


def _functions(*, timed: bool) -> str:
    """The trigger functions that keep ``memory_positions``: ``timed`` (schema 8) also copies each memory's
    ``observed_at``, so a region with a time window is found from the positions alone."""
    observed = ", observed text" if timed else ""
    column, value = (", observed_at", ", observed") if timed else ("", "")
    passed = ", NEW.observed_at" if timed else ""
    return f"""
CREATE OR REPLACE FUNCTION rm_index_position_of(memory bigint, context jsonb{observed}) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    p jsonb;
    f jsonb;
    fr text;
    n int;
    x float8;
    y float8;
    z float8;
BEGIN
    p := context #> '{{spatial,position}}';
    f := context #> '{{spatial,frame}}';
    IF f IS NULL THEN
        fr := '{DEFAULT_FRAME}';
    ELSIF jsonb_typeof(f) = 'string' THEN
        fr := f #>> '{{}}';
    ELSE
        RETURN;
    END IF;
    IF p IS NULL OR jsonb_typeof(p) <> 'array' THEN
        RETURN;
    END IF;
    IF jsonb_array_length(p) NOT IN (2, 3) THEN
        RETURN;
    END IF;
    n := jsonb_array_length(p);
    x := rm_coordinate(p -> 0);
    y := rm_coordinate(p -> 1);
    z := CASE WHEN n = 3 THEN rm_coordinate(p -> 2) END;
    IF x IS NULL OR y IS NULL OR (n = 3 AND z IS NULL) THEN
        RETURN;
    END IF;
    INSERT INTO memory_positions (memory_id, frame, dims, x, y, z, box{column}) VALUES (
        memory, fr, n, x, y, z,
        cube(ARRAY[hashtext(fr)::float8, x, y, coalesce(z, -{_ANY_Z})],
             ARRAY[hashtext(fr)::float8, x, y, coalesce(z, {_ANY_Z})]){value});
END $$;
CREATE OR REPLACE FUNCTION rm_index_position() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        DELETE FROM memory_positions WHERE memory_id = OLD.id;
    END IF;
    IF NEW.status = 'active' THEN
        PERFORM rm_index_position_of(NEW.id, NEW.context{passed});
    END IF;
    RETURN NULL;
END $$;
"""


def _update_trigger(columns: str) -> str:
    return f"""
DROP TRIGGER IF EXISTS memory_positions_update ON memories;
CREATE TRIGGER memory_positions_update AFTER UPDATE OF {columns} ON memories FOR EACH ROW
    EXECUTE FUNCTION rm_index_position();
"""


CREATE = (
    """
CREATE EXTENSION IF NOT EXISTS cube;
CREATE TABLE memory_positions (
    memory_id bigint PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
    frame     text NOT NULL,
    dims      int NOT NULL,
    x         float8 NOT NULL,
    y         float8 NOT NULL,
    z         float8,
    box       cube NOT NULL
);
CREATE INDEX idx_memory_positions_box ON memory_positions USING gist (box);
"""
    + _functions(timed=False)
    + """
CREATE TRIGGER memory_positions_insert AFTER INSERT ON memories FOR EACH ROW
    EXECUTE FUNCTION rm_index_position();
"""
    + _update_trigger("context, status")
)

# Schema 8: each position carries its memory's ``observed_at`` (kept by the trigger, which now also fires
# when the time changes) under an index by frame and time holding the coordinates. A region with a time
# window then reads the window's positions in its frame, not every memory of the window and its position
# one by one (1M sightings, a 2-hour window of 18,663 memories and a 4 m sphere: 43 ms → 10 ms).
TIMED = (
    """
ALTER TABLE memory_positions ADD COLUMN IF NOT EXISTS observed_at text COLLATE "C" NOT NULL DEFAULT '';
UPDATE memory_positions p SET observed_at = m.observed_at FROM memories m WHERE m.id = p.memory_id;
CREATE INDEX IF NOT EXISTS idx_memory_positions_time ON memory_positions (frame, observed_at)
    INCLUDE (x, y, z, memory_id);
DROP FUNCTION IF EXISTS rm_index_position_of(bigint, jsonb);
"""
    + _functions(timed=True)
    + _update_trigger("context, status, observed_at")
)
# ``TIMED`` undone (tests write stores of version 7 this way). ``TIMED`` itself may run again over its own
# work (a test's store of version 5 that kept the positions' times): every step is written to allow it.
TIMED_DROP = (
    "DROP INDEX idx_memory_positions_time",
    "ALTER TABLE memory_positions DROP COLUMN observed_at",
    "DROP FUNCTION rm_index_position_of(bigint, jsonb, text)",
    _functions(timed=False) + _update_trigger("context, status"),
)


# What the migration adds, undone (tests write stores of earlier versions this way); the extension stays.
DROP = (
    "DROP TABLE memory_positions",
    "DROP FUNCTION rm_index_position CASCADE",
    "DROP FUNCTION rm_index_position_of",
)


def create(conn: psycopg.Connection[Any]) -> None:
    """Create the index and its trigger, and fill it from every stored memory (schema 5)."""
    conn.execute(CREATE)
    conn.execute("SELECT count(rm_index_position_of(id, context)) FROM memories WHERE status = 'active'")


def add_times(conn: psycopg.Connection[Any]) -> None:
    """Give every position its memory's ``observed_at`` and index them by frame and time (schema 8)."""
    conn.execute(TIMED)


def listing(
    region: Region, window: Sequence[tuple[str, str]], prefix: str = "rg"
) -> tuple[str, dict[str, Any]]:
    """SQL listing the ids (``memory_id``) of the positions in ``region`` (``predicate``'s test) whose
    ``observed_at`` lies in ``window``, and its parameters. ``window``: pairs of a comparison (``>=``, ``>``,
    ``<=`` or ``<``) and a stored time, which bound the positions' times as a recall's window bounds its
    memories' (the same text, compared the same way), so the index by frame and time reads them."""
    test, params = _inside(region, False, window, prefix)
    return f"SELECT p.memory_id FROM memory_positions p WHERE {test}", params


def predicate(region: Region, *, indexed: bool = True, prefix: str = "rg") -> tuple[str, dict[str, Any]]:
    """SQL over ``memories m`` true for the memories whose indexed position lies in ``region``, exactly as
    ``Region.contains`` decides (float64: the same differences, squares and sums in the same order), and its
    parameters (named with ``prefix``).

    ``indexed`` offers the server the GiST index (``&&`` on the box). The planner cannot estimate how many
    positions a box meets (``cube`` gives every overlap the same small share), so it then starts from the
    index even when the region is a room holding a tenth of the store; without it, the position is only
    probed (by memory id) for the memories the rest of the plan reads: the better plan when another
    condition, a time window, narrows more."""
    test, params = _inside(region, indexed, (), prefix)
    return f"EXISTS (SELECT 1 FROM memory_positions p WHERE p.memory_id = m.id AND {test})", params


def _inside(
    region: Region, indexed: bool, window: Sequence[tuple[str, str]], prefix: str
) -> tuple[str, dict[str, Any]]:
    """``predicate``'s test of a position ``p``, and its parameters."""
    low, high = region.bounds
    z = (low[2], high[2]) if region.dims == 3 else (-_ANY_Z, _ANY_Z)
    names = ("x", "y", "z")[: region.dims]
    params: dict[str, Any] = {
        f"{prefix}_f": region.frame,
        **{f"{prefix}_lo{k}": v for k, v in enumerate((low[0], low[1], z[0]))},
        **{f"{prefix}_hi{k}": v for k, v in enumerate((high[0], high[1], z[1]))},
    }
    if region.radius is not None:
        squares = " + ".join(
            f"(p.{c} - %({prefix}_c{k})s) * (p.{c} - %({prefix}_c{k})s)" for k, c in enumerate(names)
        )
        # A stored position may be anywhere a float8 reaches (1e200), and its square would overflow, which
        # the server raises: CASE squares only offsets up to _NO_OVERFLOW, far past any radius (1e12).
        near = " AND ".join(
            f"abs(p.{c} - %({prefix}_c{k})s) <= {_NO_OVERFLOW:g}" for k, c in enumerate(names)
        )
        exact = f"CASE WHEN {near} THEN ({squares}) <= %({prefix}_r2)s ELSE false END"
        params.update({f"{prefix}_c{k}": float(v) for k, v in enumerate(region.center)})
        params[f"{prefix}_r2"] = region.radius * region.radius
    else:
        exact = " AND ".join(
            f"p.{c} >= %({prefix}_lo{k})s AND p.{c} <= %({prefix}_hi{k})s" for k, c in enumerate(names)
        )
    if region.dims == 3:
        exact += " AND p.z IS NOT NULL"
    timed, times = _window_condition(window, prefix)
    exact = f"p.frame = %({prefix}_f)s AND {exact}{timed}"
    params.update(times)
    box = (
        f"p.box && cube(ARRAY[hashtext(%({prefix}_f)s)::float8, %({prefix}_lo0)s, %({prefix}_lo1)s, "
        f"%({prefix}_lo2)s], ARRAY[hashtext(%({prefix}_f)s)::float8, %({prefix}_hi0)s, %({prefix}_hi1)s, "
        f"%({prefix}_hi2)s]) AND "
        if indexed
        else ""
    )
    return f"{box}{exact}", params


def positions_in_window(
    conn: psycopg.Connection[Any], frame: str, window: Sequence[tuple[str, str]]
) -> float:
    """The planner's count of the positions in ``frame`` whose ``observed_at`` lies in ``window``
    (``listing``'s pairs)."""
    where, params = _window_condition(window, "w")
    row = conn.execute(
        f"EXPLAIN (FORMAT JSON) SELECT 1 FROM memory_positions p WHERE p.frame = %(w_f)s{where}",
        {**params, "w_f": frame},
    ).fetchone()
    return float(row[0][0]["Plan"]["Plan Rows"]) if row else float("inf")


def _window_condition(window: Sequence[tuple[str, str]], prefix: str) -> tuple[str, dict[str, Any]]:
    """`` AND p.observed_at <op> <time>`` for each pair of ``window``, and the parameters."""
    sql, params = "", {}
    for k, (operator, time) in enumerate(window):
        if operator not in (">=", ">", "<=", "<"):
            raise ValueError(f"window: unknown comparison {operator!r}")
        sql += f" AND p.observed_at {operator} %({prefix}_t{k})s"
        params[f"{prefix}_t{k}"] = time
    return sql, params


def within(conn: psycopg.Connection[Any], region: Region) -> npt.NDArray[np.int64]:
    """The ids (ascending) of the active memories whose position lies in ``region``, exactly."""
    low, high = region.bounds
    z = (low[2], high[2]) if region.dims == 3 else (-_ANY_Z, _ANY_Z)
    rows = conn.execute(
        "SELECT memory_id, x, y, z FROM memory_positions "
        "WHERE box && cube(ARRAY[hashtext(%(f)s)::float8, %(x0)s, %(y0)s, %(z0)s], "
        "ARRAY[hashtext(%(f)s)::float8, %(x1)s, %(y1)s, %(z1)s]) AND frame = %(f)s",
        {"f": region.frame, "x0": low[0], "x1": high[0], "y0": low[1], "y1": high[1], "z0": z[0], "z1": z[1]},
    ).fetchall()
    if not rows:
        return np.zeros(0, dtype=np.int64)
    table = np.array([(r[1], r[2], np.nan if r[3] is None else r[3]) for r in rows], dtype=np.float64)
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    return np.sort(ids[region.contains(table)])
