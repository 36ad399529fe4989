"""``SqliteStore``: the storage contract (``robotmem.store.protocol``) on one SQLite file.

One writer connection serialises this process's writes (``BEGIN IMMEDIATE``, retried when another process
holds the lock); reads run on pooled connections of their own, so in WAL mode a read never waits for a
write. The store also keeps what a process caches about the file: the vector index (``MirroredIndex``,
one per model) and the recall mirror, both brought up to date inside the transaction that reads them.
"""

from __future__ import annotations

import contextlib
import os
import queue
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from robotmem.errors import DatabaseError
from robotmem.store.protocol import CandidateSource, RecallScope, StoreTx
from robotmem.store.sqlite import maintenance
from robotmem.store.sqlite import vectors as vector_rows
from robotmem.store.sqlite.access import AccessRecorder
from robotmem.store.sqlite.browse import Browse
from robotmem.store.sqlite.candidates import MirrorCandidates, SqlCandidates
from robotmem.store.sqlite.connection import describe_error, is_read_only, open_database, read, write
from robotmem.store.sqlite.jobs import Jobs
from robotmem.store.sqlite.maintenance import Maintenance
from robotmem.store.sqlite.memories import Memories, register_functions
from robotmem.store.sqlite.mirror import RecallMirror
from robotmem.store.sqlite.schema import migrate
from robotmem.store.sqlite.sessions import Sessions
from robotmem.store.sqlite.sync import Sync
from robotmem.store.sqlite.transfer import Transfer
from robotmem.store.sqlite.vectors import MirroredIndex, Vectors

T = TypeVar("T")


class SqliteTx:
    """One transaction on the file: the tables of the contract over one connection. A reading one reads
    the objects memories name from the recall mirror (a write's uncommitted rows never reach the mirror)."""

    def __init__(self, conn: sqlite3.Connection, store: SqliteStore, *, reading: bool = False) -> None:
        self.conn = conn
        self._store = store
        self.memories = Memories(conn, store.mirror if reading else None)
        self.sessions = Sessions(conn)
        self.vectors = Vectors(conn, store.vector_index)
        self.jobs = Jobs(conn)
        self.transfer = Transfer(conn)
        self.browse = Browse(conn)
        self.maintenance = Maintenance(conn)
        self.sync = Sync(conn)

    def candidates(self, scope: RecallScope) -> CandidateSource:
        """Recall's questions over ``scope``: from the mirror (synced now) or, without one, from SQL."""
        store = self._store
        sql = SqlCandidates(self.conn, scope, store.vector_index, store.episode_index)
        return sql if store.mirror is None else MirrorCandidates(sql, scope, store.mirror)


class SqliteStore:
    """The SQLite engine: ``path`` (or ``":memory:"``), created and migrated on open.

    ``use_mirror`` keeps the recall mirror (about 100 MB at 100k memories); without it recall asks
    SQLite per query. Raises ``DatabaseError`` when the file cannot be opened or is newer than this code.
    """

    def __init__(
        self,
        path: Path,
        *,
        now: Callable[[], str],
        busy_timeout_ms: int = 5000,
        write_retries: int = 8,
        use_mirror: bool = True,
    ) -> None:
        self.path = path
        self._busy_timeout_ms = busy_timeout_ms
        self._write_retries = write_retries
        self._lock = threading.RLock()
        # A file on read-only media (or without write permission) is opened for reading only:
        # reads, check, export and backup work; writes fail as read-only; recall counts no access.
        self.read_only = is_read_only(path)
        self._conn = open_database(path, busy_timeout_ms=busy_timeout_ms, read_only=self.read_only)
        register_functions(self._conn)
        try:
            migrate(self._conn, path, read_only=self.read_only)
        except BaseException:
            self._conn.close()
            raise
        self._closed = False
        self._idle_readers: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self.mirror = RecallMirror() if use_mirror else None
        self._index: MirroredIndex | None = None
        self._episode_index: MirroredIndex | None = None
        # Guards the vector index; distinct from the write lock so recall does not queue behind writes.
        self._index_lock = threading.RLock()
        self._access = AccessRecorder(path, now, busy_timeout_ms=busy_timeout_ms)

    @property
    def location(self) -> str:
        return str(self.path)

    @property
    def in_memory(self) -> bool:
        return str(self.path) == ":memory:"

    def write(self, work: Callable[[StoreTx], T]) -> T:
        with self._lock:
            return write(
                self._conn,
                lambda conn: work(SqliteTx(conn, self)),
                path=self.path,
                retries=self._write_retries,
            )

    def read(self, work: Callable[[StoreTx], T]) -> T:
        if self.in_memory:  # one connection is the whole database
            with self._lock:
                return read(self._conn, lambda conn: work(SqliteTx(conn, self, reading=True)), path=self.path)
        # A pooled connection of its own: in WAL mode a read then never waits for a write, neither
        # another process's nor one that another thread runs (or waits to run) on the writer connection.
        try:
            conn = self._idle_readers.get_nowait()
        except queue.Empty:
            if self._closed:
                raise DatabaseError(f"database {self.path}: this RobotMemory is closed") from None
            conn = open_database(
                self.path, busy_timeout_ms=self._busy_timeout_ms, create=False, read_only=self.read_only
            )
            register_functions(conn)
        try:
            return read(conn, lambda c: work(SqliteTx(c, self, reading=True)), path=self.path)
        finally:
            if self._closed:
                conn.close()
            else:
                self._idle_readers.put(conn)

    def vector_index(self, model_id: str, dim: int) -> MirroredIndex:
        """Return this process's index of ``model_id`` vectors (sync it inside a transaction before use)."""
        with self._index_lock:
            if self._index is None or self._index.model_id != model_id or self._index.index.dim != dim:
                self._index = MirroredIndex(model_id, dim)
            return self._index

    def episode_index(self, model_id: str, dim: int) -> MirroredIndex:
        """Return this process's index of ``model_id`` episode vectors (sync it inside a transaction)."""
        with self._index_lock:
            index = self._episode_index
            if index is None or index.model_id != model_id or index.index.dim != dim:
                index = self._episode_index = MirroredIndex(model_id, dim, vector_rows.EPISODE_TABLE)
            return index

    def record_access(self, ids: Iterable[int]) -> None:
        if not self.read_only:  # nothing may be written to a read-only file
            self._access.record(ids)

    def settle_access(self) -> None:
        with self._lock:
            self._access.settle(self._conn)

    def warm_up(self, model_id: str | None, dim: int | None) -> None:
        def load(tx: StoreTx) -> None:
            conn = tx.conn  # type: ignore[attr-defined]  # this store's own transactions
            if model_id is not None and dim is not None:
                self.vector_index(model_id, dim).sync(conn)
            if self.mirror is not None:
                self.mirror.sync(conn)

        self.read(load)

    def backup(self, target: Path) -> int:
        partial = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.partial")
        try:
            self._copy_to(partial)
            integrity, count = maintenance.verify_copy(partial)
            if integrity != ("ok",):
                raise DatabaseError(
                    f"backup {target}: the copy failed its integrity check ({'; '.join(integrity[:3])}); "
                    "run `robotmem doctor` on the source"
                )
            os.replace(partial, target)
        except sqlite3.Error as exc:
            raise describe_error(exc, target) from None
        except OSError as exc:
            raise DatabaseError(f"backup {target}: cannot write the copy ({exc})") from None
        finally:
            remove_copy(partial)
        return count

    def _copy_to(self, partial: Path) -> None:
        if self.in_memory:
            with self._lock:
                maintenance.backup_to(self._conn, partial)
            return
        # A connection of its own, so the copy does not hold the writer's lock.
        source = open_database(
            self.path, busy_timeout_ms=self._busy_timeout_ms, create=False, read_only=self.read_only
        )
        try:
            maintenance.backup_to(source, partial)
        finally:
            source.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._access.close()
        with self._lock:
            self._conn.close()
        if self.mirror is not None:
            self.mirror.close()
        while True:
            try:
                self._idle_readers.get_nowait().close()
            except queue.Empty:
                break


def remove_copy(partial: Path) -> None:
    """Remove an unfinished copy with the rollback journal, WAL and shared-memory files SQLite made beside
    it (a copy that failed on a full disk leaves its journal behind)."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        with contextlib.suppress(OSError):
            Path(f"{partial}{suffix}").unlink()
