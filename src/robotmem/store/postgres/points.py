"""Spatial points kept in this process, so that a nearest-first recall on PostgreSQL measures in numpy.

No index serves an arbitrary context path, so the server had to read every filtered memory's context
and compute its point for each spatial recall (14 s at 1M memories). ``SpatialPoints`` reads the points
of a path once (``spatial.coordinates_at`` on each active memory's value there, as the SQLite mirror
does), keeps them in step through the change log as ``postings.TextPostings`` does (the same rules:
read snapshots only, a new ``fts_epoch`` or a burst of changes loads again, sparse ids are not held),
and measures with ``spatial.distances``, the same floats as ``spatial.distance``. The server then only
checks the filters on the nearest (``candidates.PgCandidates.nearest``).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg

from robotmem.query.spatial import MAX_DIMENSIONS, coordinates_at, distances
from robotmem.store.postgres import changes
from robotmem.store.postgres.filters import PgFilter

_MAX_PATHS = 8  # paths held at once, the least recently used dropped first


@dataclass(slots=True)
class _Path:
    """The points at one context path: per memory id, its collection code, dimensions and coordinates."""

    collection: npt.NDArray[np.int32]
    dims: npt.NDArray[np.int8]  # 0: no point
    coords: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 0)))


class SpatialPoints:
    """This process's copy of the points at the context paths recall sorts by, synced from the change log."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._paths: OrderedDict[tuple[str, ...], _Path] = OrderedDict()
        self._collections: dict[str, int] = {}
        self._seen = -1
        self._epoch: str | None = None

    def nearest(
        self, conn: psycopg.Connection, path: tuple[str, ...], target: Sequence[float], collection: str
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None:
        """``(ids, distances)`` of the memories of ``collection`` with a ``len(target)``-d point at
        ``path`` and a finite distance (unordered); None when the store's ids are too sparse to hold."""
        with self._lock:
            synced = self._sync(conn)
            if synced is None:
                return None
            current, top = synced
            held = self._paths.get(path)
            if held is None:
                if not current:
                    return None  # a snapshot older than the points held: not one to read a new path at
                held = self._paths[path] = self._read(conn, path, top, None, None)
                if len(self._paths) > _MAX_PATHS:
                    self._paths.popitem(last=False)
            self._paths.move_to_end(path)
            code = self._collections.get(collection)
            if code is None or len(target) > held.coords.shape[1]:
                return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
            ids = np.flatnonzero((held.dims == len(target)) & (held.collection == code)).astype(np.int64)
            far = distances(held.coords[ids, : len(target)], target)
            keep = np.isfinite(far)
            return ids[keep], far[keep]

    def stats(self) -> dict[str, Any]:
        """The paths held and the last change applied (for tests and diagnostics)."""
        with self._lock:
            return {"paths": list(self._paths), "seen": self._seen}

    def _sync(self, conn: psycopg.Connection) -> tuple[bool, int] | None:
        """Apply what changed; return whether the points held are this snapshot's, and the largest
        memory id it sees (None: the store's points are not held)."""
        head, epoch = changes.head(conn)
        top = changes.dense_top(conn)
        if top is None:
            self._paths.clear()
            self._seen, self._epoch = -1, None
            return None
        if self._seen >= 0 and epoch == self._epoch and head <= self._seen:
            return head == self._seen, top
        changed = changes.to_apply(conn, self._seen, self._epoch, epoch, max(4096, head // 8))
        if changed is None:
            self._paths.clear()  # each path reads again when next asked for
        else:
            for path, held in list(self._paths.items()):
                self._paths[path] = self._read(conn, path, top, held, changed)
        self._seen, self._epoch = head, epoch
        return True, top

    def _read(
        self,
        conn: psycopg.Connection,
        path: tuple[str, ...],
        top: int,
        held: _Path | None,
        ids: Sequence[int] | None,
    ) -> _Path:
        """Read the points at ``path`` of the active memories among ``ids`` (None: all) into ``held``,
        whose arrays grow to hold ids up to ``top``."""
        if held is None:
            held = _Path(
                np.full(top + 1, -1, dtype=np.int32), np.zeros(top + 1, dtype=np.int8), np.zeros((top + 1, 3))
            )
        elif top >= len(held.dims):
            grow = max(top + 1, 2 * len(held.dims)) - len(held.dims)
            held.collection = np.concatenate([held.collection, np.full(grow, -1, dtype=np.int32)])
            held.dims = np.concatenate([held.dims, np.zeros(grow, dtype=np.int8)])
            held.coords = np.concatenate([held.coords, np.zeros((grow, held.coords.shape[1]))])
        if ids is not None:
            listed = [m for m in ids if m < len(held.dims)]
            held.dims[listed] = 0
            held.collection[listed] = -1
        builder = PgFilter("p")
        value = builder.json_at(path)
        sql = (
            f"SELECT m.id, m.collection, ({value})::text FROM memories m WHERE m.status = 'active' "
            f"AND jsonb_typeof({value}) IN ('array', 'object')"
        )
        params = dict(builder.params)
        if ids is not None:
            sql += " AND m.id = ANY(%(p_ids)s)"
            params["p_ids"] = list(ids)
        cursor = conn.cursor(name="robotmem_points")  # server-side: rows arrive in batches
        cursor.itersize = 20_000
        try:
            cursor.execute(sql, params)
            for memory_id, collection, raw in cursor:
                try:
                    point = coordinates_at({"v": json.loads(raw)}, ("v",))
                except (TypeError, ValueError):
                    continue
                if point is None or len(point) > MAX_DIMENSIONS:
                    continue
                if len(point) > held.coords.shape[1]:
                    wider = np.zeros((len(held.coords), len(point)))
                    wider[:, : held.coords.shape[1]] = held.coords
                    held.coords = wider
                row = int(memory_id)
                held.collection[row] = self._collections.setdefault(str(collection), len(self._collections))
                held.dims[row] = len(point)
                held.coords[row, : len(point)] = point
        finally:
            cursor.close()
        return held
