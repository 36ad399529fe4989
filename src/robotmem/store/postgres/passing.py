"""Which memories pass a recall's scope, kept in this process, so that PostgreSQL recall filters in numpy.

With BM25 ranked from the process's postings and the nearest measured from its points, what still went
to the server per recall was the question "which of these ranked memories pass the filters?": a round
trip per window of the ranking, and for a query that names a common object, a join of its tens of
thousands of carriers with ``memories`` (60-70 ms at 1M memories). ``PassingMasks`` asks the server
once per scope predicate (``candidates.predicate``: collection, status, confidence, session and filter),
and for the predicates of recall's boosts (``candidates.REAL_WORLD``, ``OWN_ROBOT``), for every memory that
passes it, holds the answer as a boolean array over memory ids, and keeps it in
step through the change log:

- the memories changed after the number a mask was synced at are checked again with the same
  predicate, on the server, inside the recall's snapshot, so the semantics stay the server's;
- a mask is read only in a snapshot at or after the change it was synced to (an older snapshot gets
  None, and the candidates check on the server as before);
- a predicate over a field written without a logged change (``filters.VOLATILE_FIELDS``: every
  recall bumps ``access_count``), or over a time window (``filters.UNCACHED_FIELDS``), is never held (``PgCandidates`` asks ``filters.reads_volatile``); nor are masks of a store whose ids are too sparse for per-id arrays.

Every write to a memory row or its tags takes a new ``change_seq`` number under the store's write lock
(``schema``), so the numbers commit in order and nothing changed is missed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg

from robotmem.store.postgres import changes

BoolArray = npt.NDArray[np.bool_]

_MAX_MASKS = 16  # predicates held at once, the least recently used dropped first


class _Mask:
    """One predicate's passing memories, as synced at change number ``seen``."""

    __slots__ = ("passing", "seen")

    def __init__(self, passing: BoolArray, seen: int) -> None:
        self.passing = passing
        self.seen = seen


class PassingMasks:
    """This process's copy of which memories pass each recently used scope predicate."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._masks: OrderedDict[tuple[str, str], _Mask] = OrderedDict()

    def allowed(
        self,
        conn: psycopg.Connection,
        where: str,
        params: dict[str, Any],
        head: tuple[int, str] | None = None,
    ) -> BoolArray | None:
        """A boolean array over memory ids, true for the memories passing ``where`` (over ``memories m``)
        in this read snapshot (ids past its end pass nothing); None when it cannot be held or read here.

        The array is never changed afterwards (a sync makes a new one), so it can be used without a lock.
        ``head`` is ``changes.head`` of this snapshot when the caller has read it already.
        """
        key = (where, repr(sorted(params.items())))
        with self._lock:
            seq, _ = head if head is not None else changes.head(conn)
            held = self._masks.get(key)
            if held is not None and seq < held.seen:
                return None  # this snapshot is older than the mask
            if held is None or seq > held.seen:
                passing = self._synced(conn, held, where, params)
                if passing is None:
                    self._masks.pop(key, None)
                    return None
                held = self._masks[key] = _Mask(passing, seq)
                if len(self._masks) > _MAX_MASKS:
                    self._masks.popitem(last=False)
            self._masks.move_to_end(key)
            return held.passing

    def _synced(
        self, conn: psycopg.Connection, held: _Mask | None, where: str, params: dict[str, Any]
    ) -> BoolArray | None:
        """``held`` brought up to this snapshot (the memories changed since checked again), or a fresh load."""
        if held is not None:
            changed = changes.changed_since(conn, held.seen)
            top = max(changed, default=0)
            if len(changed) <= max(2048, len(held.passing) // 16) and top < 2 * len(held.passing) + 1024:
                passing = np.zeros(max(len(held.passing), top + 1), dtype=np.bool_)
                passing[: len(held.passing)] = held.passing
                if changed:
                    passing[changed] = False
                    rows = conn.execute(
                        f"SELECT m.id FROM memories m WHERE m.id = ANY(%(pm_ids)s) AND {where}",
                        {**params, "pm_ids": changed},
                    )
                    passing[[int(r[0]) for r in rows]] = True
                return passing
        return _load(conn, where, params)

    def stats(self) -> dict[str, Any]:
        """How many predicates are held and the change each was synced at (for tests and diagnostics)."""
        with self._lock:
            return {"masks": len(self._masks), "seen": [m.seen for m in self._masks.values()]}


def _load(conn: psycopg.Connection, where: str, params: dict[str, Any]) -> BoolArray | None:
    """Every memory passing ``where``, read in one query; None when the store's ids are too sparse."""
    row = conn.execute(
        "SELECT (SELECT COALESCE(MAX(id), 0) FROM memories), (SELECT COALESCE(SUM(memories), 0) FROM collection_sizes)"
    ).fetchone()
    assert row is not None
    top, rows = int(row[0]), int(row[1])
    if changes.too_sparse(top, rows):
        return None
    passing = np.zeros(top + 1, dtype=np.bool_)
    with conn.cursor(binary=True) as cursor:
        cursor.execute(f"SELECT m.id FROM memories m WHERE {where}", params)
        ids = np.fromiter((r[0] for r in cursor), dtype=np.int64)
    passing[ids] = True
    return passing
