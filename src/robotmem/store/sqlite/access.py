"""Access counting off the read path on SQLite: recall queues ids (``rows.AccessQueue``), and a background
thread writes them on a connection of its own, so a recall never waits for the write lock."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path

from robotmem.errors import RobotMemError
from robotmem.store.shared.rows import AccessQueue
from robotmem.store.sqlite.connection import open_database, write
from robotmem.store.sqlite.memories import record_access

log = logging.getLogger("robotmem.store")


class AccessRecorder:
    """Batches ``access_count``/``last_accessed`` updates of one file."""

    def __init__(
        self, path: Path, now: Callable[[], str], *, busy_timeout_ms: int, interval_s: float = 0.5
    ) -> None:
        self._path = path
        self._now = now
        self._busy_timeout_ms = busy_timeout_ms
        self._conn: sqlite3.Connection | None = None
        self._queue = AccessQueue(self._write, interval_s)

    def record(self, ids: Iterable[int]) -> None:
        """Queue one access for each id."""
        self._queue.record(ids)

    def settle(self, conn: sqlite3.Connection) -> None:
        """Write what is queued now, on ``conn`` (the caller holds it), instead of at the next tick."""
        self._queue.flush(lambda pending: self._write(pending, conn))

    def close(self) -> None:
        """Write what is queued, stop the thread and close its connection."""
        self._queue.close()
        if self._conn is not None:
            self._conn.close()

    def _write(self, pending: dict[int, int], conn: sqlite3.Connection | None = None) -> None:
        try:
            if conn is None:
                if self._conn is None:
                    self._conn = open_database(self._path, busy_timeout_ms=self._busy_timeout_ms)
                conn = self._conn
            write(conn, lambda c: record_access(c, pending, self._now()), path=self._path)
        except RobotMemError as exc:
            log.warning("access counts not recorded: %s", exc)
