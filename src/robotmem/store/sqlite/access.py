"""Access counting off the read path: recall queues ids, a background thread writes them."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from robotmem.errors import RobotMemError
from robotmem.store.sqlite import memories
from robotmem.store.sqlite.connection import open_database, write

log = logging.getLogger("robotmem.store")


class AccessRecorder:
    """Batches ``access_count``/``last_accessed`` updates so a recall never waits for the write lock."""

    def __init__(
        self, path: Path, now: Callable[[], str], *, busy_timeout_ms: int, interval_s: float = 0.5
    ) -> None:
        self._path = path
        self._now = now
        self._busy_timeout_ms = busy_timeout_ms
        self._interval_s = interval_s
        self._pending: dict[int, int] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None

    def record(self, ids: Iterable[int]) -> None:
        """Queue one access for each id."""
        with self._lock:
            for memory_id in ids:
                self._pending[memory_id] = self._pending.get(memory_id, 0) + 1
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._loop, name="robotmem-access", daemon=True)
                self._thread.start()

    def _take(self) -> dict[int, int]:
        with self._lock:
            pending, self._pending = self._pending, {}
        return pending

    def _loop(self) -> None:
        conn = open_database(self._path, busy_timeout_ms=self._busy_timeout_ms)
        try:
            while True:
                self._wake.wait(self._interval_s)
                self._wake.clear()
                self._flush_with(conn)
                if self._closed:
                    break
        finally:
            conn.close()

    def _flush_with(self, conn: object) -> None:
        pending = self._take()
        if not pending:
            return
        try:
            write(conn, lambda c: memories.record_access(c, pending, self._now()), path=self._path)  # type: ignore[arg-type]
        except RobotMemError as exc:
            log.warning("access counts not recorded: %s", exc)

    def settle(self, conn: object) -> None:
        """Write what is queued now, on ``conn`` (the caller holds it), instead of at the next tick."""
        self._flush_with(conn)

    def close(self) -> None:
        """Write what is queued and stop the thread."""
        with self._lock:
            self._closed = True
            thread = self._thread
        if thread is not None:
            self._wake.set()
            thread.join(timeout=10)
