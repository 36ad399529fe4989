"""``PostgresStore``: the storage contract (``robotmem.store.protocol``) on a PostgreSQL server with pgvector.

One store is one database (or one schema, with ``options=-csearch_path=...`` in the DSN). Connections
come from a pool; every write transaction holds the store's write lock (``connection.WRITE_LOCK``), so
several processes and robots may write at once and none loses a write, while reads run on snapshots
of their own and never wait. Access counts are written by a background thread, as on SQLite.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

import psycopg
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool, PoolTimeout

from robotmem.errors import DatabaseError, RobotMemError
from robotmem.store.postgres import connection
from robotmem.store.postgres.browse import Browse
from robotmem.store.postgres.candidates import REAL_WORLD, PgCandidates
from robotmem.store.postgres.connection import describe_error, redact
from robotmem.store.postgres.episodes import SessionMembers
from robotmem.store.postgres.jobs import Jobs
from robotmem.store.postgres.maintenance import Maintenance
from robotmem.store.postgres.memories import Memories, record_access
from robotmem.store.postgres.passing import PassingMasks
from robotmem.store.postgres.points import SpatialPoints
from robotmem.store.postgres.postings import TextPostings
from robotmem.store.postgres.schema import migrate
from robotmem.store.postgres.sessions import Sessions
from robotmem.store.postgres.sync import Sync
from robotmem.store.postgres.transfer import Transfer
from robotmem.store.postgres.vectors import Vectors
from robotmem.store.protocol import RecallScope, StoreTx
from robotmem.store.shared.rows import AccessQueue

log = logging.getLogger("robotmem.store")
T = TypeVar("T")


def _configure(conn: psycopg.Connection) -> None:
    """Prepare a pooled connection: pgvector's types, and no JIT (recall's short queries paid 70-90 ms
    of compilation for plans the planner costed high, such as an HNSW walk under a filter)."""
    register_vector(conn)
    conn.execute("SET jit = off")


class PostgresTx:
    """One transaction on the server: the tables of the contract over one connection."""

    def __init__(
        self,
        conn: psycopg.Connection,
        postings: TextPostings | None = None,
        points: SpatialPoints | None = None,
        masks: PassingMasks | None = None,
        members: SessionMembers | None = None,
    ) -> None:
        self.conn = conn
        # The process's copies, given to read transactions only: a write's rows may still roll back.
        self._postings = postings
        self._points = points
        self._masks = masks
        self._members = members
        self.memories = Memories(conn)
        self.sessions = Sessions(conn)
        self.vectors = Vectors(conn)
        self.jobs = Jobs(conn)
        self.transfer = Transfer(conn)
        self.browse = Browse(conn)
        self.maintenance = Maintenance(conn)
        self.sync = Sync(conn)

    def candidates(self, scope: RecallScope) -> PgCandidates:
        return PgCandidates(self.conn, scope, self._postings, self._points, self._masks, self._members)


class PostgresStore:
    """The PostgreSQL engine at ``dsn`` (``postgresql://user@host:port/db``), created and migrated on open.

    Raises ``DatabaseError`` when the server cannot be reached, the ``vector`` extension is missing, or
    the database is another program's or newer than this code.
    """

    def __init__(
        self,
        dsn: str,
        *,
        now: Callable[[], str],
        busy_timeout_ms: int = 5000,
        write_retries: int = 8,
        pool_size: int = 4,
        use_mirror: bool = True,
    ) -> None:
        self.dsn = dsn
        self._location = redact(dsn)
        self._now = now
        self._busy_timeout_ms = busy_timeout_ms
        self._write_retries = write_retries
        first = connection.connect(dsn, self._location)
        try:
            migrate(first, self._location)
        finally:
            first.close()
        self._pool = ConnectionPool(
            dsn,
            min_size=1,
            max_size=max(2, pool_size),
            kwargs={"autocommit": True, "connect_timeout": 10},
            configure=_configure,
            open=False,
            name="robotmem",
        )
        try:
            self._pool.open(wait=True, timeout=15)
        except PoolTimeout:
            raise DatabaseError(
                f"database {self._location}: no connection could be opened within 15 s; check the server",
                transient=True,
            ) from None
        self._closed = False
        self._access = AccessQueue(self._write_access)
        self.postings = TextPostings() if use_mirror else None
        self.points = SpatialPoints() if use_mirror else None
        self.masks = PassingMasks() if use_mirror else None
        self.members = SessionMembers() if use_mirror else None

    @property
    def location(self) -> str:
        return self._location

    def _connection(self) -> psycopg.Connection:
        if self._closed:
            raise DatabaseError(f"database {self._location}: this RobotMemory is closed")
        try:
            return self._pool.getconn(timeout=30)
        except PoolTimeout:
            raise DatabaseError(
                f"database {self._location}: every connection of the pool stayed busy for 30 s; retry later",
                transient=True,
            ) from None
        except psycopg.Error as exc:
            raise describe_error(exc, self._location) from None

    def _run(self, runner: Callable[[psycopg.Connection], T]) -> T:
        conn = self._connection()
        try:
            return runner(conn)
        finally:
            self._pool.putconn(conn)

    def write(self, work: Callable[[StoreTx], T]) -> T:
        return self._run(
            lambda conn: connection.write(
                conn,
                lambda c: work(PostgresTx(c)),
                location=self._location,
                retries=self._write_retries,
                lock_timeout_ms=self._busy_timeout_ms,
            )
        )

    def read(self, work: Callable[[StoreTx], T]) -> T:
        return self._run(
            lambda conn: connection.read(
                conn,
                lambda c: work(PostgresTx(c, self.postings, self.points, self.masks, self.members)),
                location=self._location,
            )
        )

    def record_access(self, ids: Iterable[int]) -> None:
        self._access.record(ids)

    def settle_access(self) -> None:
        self._access.flush()

    def warm_up(self, model_id: str | None, dim: int | None) -> None:
        """Load this process's copies of the text postings, of the sessions' members and of the
        real-world flag (the server holds every other index)."""
        postings = self.postings
        if postings is not None:
            self._run(lambda conn: connection.read(conn, postings.sync, location=self._location))
        members = self.members
        if members is not None:
            self._run(lambda conn: connection.read(conn, members.load, location=self._location))
        masks = self.masks
        if masks is not None:  # the real-world flag of every recall's boost
            self._run(
                lambda conn: connection.read(
                    conn, lambda c: masks.allowed(c, REAL_WORLD, {}), location=self._location
                )
            )

    def backup(self, target: Path) -> int:
        raise DatabaseError(
            f"backup {target}: a PostgreSQL store is backed up by the server's tools (pg_dump, or "
            "continuous archiving); `robotmem export` writes its memories to a file"
        )

    def close(self) -> None:
        if self._closed:
            return
        self._access.close()
        self._closed = True
        self._pool.close()

    def _write_access(self, counts: dict[int, int]) -> None:
        def apply(conn: psycopg.Connection) -> None:
            # Row locks only (not the write lock): access counts are not changes a sync carries.
            for attempt in range(4):
                try:
                    with conn.transaction():
                        record_access(conn, counts, self._now())
                    return
                except psycopg.errors.DeadlockDetected:
                    if attempt == 3:
                        raise

        try:
            self._run(apply)
        except (RobotMemError, psycopg.Error) as exc:
            log.warning("access counts not recorded: %s", exc)
