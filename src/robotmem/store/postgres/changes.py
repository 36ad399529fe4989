"""What the process's copies of server data (``postings``, ``points``) share to follow the change log.

Every write to a memory takes the next ``change_seq`` number in ``memory_changes`` while holding the
store's write lock, so numbers commit in order: the memories changed after number ``seen`` are all
those a copy synced at ``seen`` has not applied.
"""

from __future__ import annotations

import psycopg

# Ids past this many per row (plus a margin) would leave per-id arrays mostly empty: not held.
_SPARSE_FACTOR = 8
_SPARSE_MARGIN = 1 << 20


# What ``head`` selects, for a query that reads more in the same round trip.
HEAD_COLUMNS = (
    "(SELECT COALESCE(MAX(seq), 0) FROM memory_changes), (SELECT value FROM meta WHERE key = 'fts_epoch')"
)


def head(conn: psycopg.Connection) -> tuple[int, str]:
    """The last change number this snapshot sees, and the text index's epoch."""
    row = conn.execute(f"SELECT {HEAD_COLUMNS}").fetchone()
    assert row is not None
    return as_head(row[0], row[1])


def as_head(seq: object, epoch: object) -> tuple[int, str]:
    """``head`` from the two values of ``HEAD_COLUMNS``."""
    return int(str(seq)), str(epoch or "0")


def changed_since(conn: psycopg.Connection, seen: int) -> list[int]:
    """The memories changed after change number ``seen``."""
    return [int(r[0]) for r in conn.execute("SELECT memory_id FROM memory_changes WHERE seq > %s", (seen,))]


def to_apply(
    conn: psycopg.Connection, seen: int, epoch: str | None, now_epoch: str, most: int
) -> list[int] | None:
    """The memories a copy synced at change ``seen`` of ``epoch`` must read again, or None when it must
    load everything: nothing held yet, a new epoch (``now_epoch``), or more than ``most`` changes."""
    if seen < 0 or epoch != now_epoch:
        return None
    changed = changed_since(conn, seen)
    return None if len(changed) > most else changed


def too_sparse(top_id: int, rows: float) -> bool:
    """Whether ids up to ``top_id`` for about ``rows`` rows are too sparse for per-id arrays."""
    return top_id > _SPARSE_FACTOR * max(rows, 0.0) + _SPARSE_MARGIN


def dense_top(conn: psycopg.Connection) -> int | None:
    """The largest memory id, or None when the ids are too sparse for per-id arrays (``too_sparse``
    against the planner's row estimate)."""
    row = conn.execute(
        "SELECT (SELECT COALESCE(MAX(id), 0) FROM memories), "
        "(SELECT reltuples FROM pg_class WHERE oid = 'memories'::regclass)"
    ).fetchone()
    assert row is not None
    top = int(row[0])
    return None if too_sparse(top, float(row[1] or 0)) else top
