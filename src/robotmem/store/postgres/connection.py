"""Connections to the server: the pool, the write lock, retries, and errors that say what to do.

Writes keep SQLite's semantics: one writer at a time for the whole store. Each write transaction first
takes a transaction-level advisory lock (``WRITE_LOCK``), held until it commits, so a duplicate check
and the insert it guards, or the end of a session and its consolidation, see no other writer between
them, and change numbers commit in the order they were given (what ``robotmem sync`` relies on).
Reads take a REPEATABLE READ snapshot and never wait for a writer.
"""

from __future__ import annotations

import logging
import random
import re
import time
import urllib.parse
from collections.abc import Callable
from typing import TypeVar

import psycopg
from psycopg import errors as pg_errors

from robotmem.errors import DatabaseError, ValidationError

log = logging.getLogger("robotmem.store")
T = TypeVar("T")

# One advisory lock key for every robotmem write on a database (the bytes of "robotmem").
WRITE_LOCK = 0x726F626F746D656D
_RETRYABLE = (
    pg_errors.SerializationFailure,
    pg_errors.DeadlockDetected,
    pg_errors.LockNotAvailable,
)


def is_dsn(location: str) -> bool:
    """True when ``location`` names a PostgreSQL server (``postgresql://`` or ``postgres://``)."""
    return location.startswith(("postgresql://", "postgres://"))


def redact(dsn: str) -> str:
    """Return ``dsn`` without its password (for messages and reports)."""
    try:
        parts = urllib.parse.urlsplit(dsn)
    except ValueError:
        return "postgresql://<unreadable address>"
    netloc = parts.netloc
    if "@" in netloc:
        user, host = netloc.rsplit("@", 1)
        netloc = f"{user.split(':', 1)[0]}@{host}"
    query = re.sub(r"(?i)(password=)[^&]*", r"\1***", parts.query)
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def describe_error(exc: psycopg.Error, location: str) -> DatabaseError | ValidationError:
    """Return the ``DatabaseError`` (or, for a filter beyond the server's limits, ``ValidationError``) for ``exc``."""
    if isinstance(exc, pg_errors.StatementTooComplex | pg_errors.ProgramLimitExceeded):
        return ValidationError(
            "context_filter: is too complex for the server to evaluate; use fewer nested levels or fewer terms"
        )
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, psycopg.OperationalError) and not isinstance(exc, pg_errors.DiskFull):
        return DatabaseError(
            f"database {location}: the server cannot be reached or dropped the connection ({detail}); "
            "check that PostgreSQL runs and the address is right, then retry",
            transient=True,
        )
    if isinstance(exc, _RETRYABLE):
        return DatabaseError(
            f"database {location}: other writers held the store through every retry; retry later",
            transient=True,
        )
    if isinstance(exc, pg_errors.DiskFull):
        hint = "the server's disk is full; free space and retry (nothing was written)"
    elif isinstance(exc, pg_errors.InsufficientPrivilege):
        hint = "the database user lacks a privilege robotmem needs; grant it or use another user"
    elif isinstance(exc, pg_errors.ReadOnlySqlTransaction):
        hint = "the server is read-only (a standby?); connect to the primary"
    else:
        hint = "the server refused the statement"
    return DatabaseError(f"database {location}: {hint} ({detail})")


def connect(dsn: str, location: str) -> psycopg.Connection:
    """Open one connection in autocommit mode (transactions are begun explicitly)."""
    try:
        return psycopg.connect(dsn, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise describe_error(exc, location) from None


def write(
    conn: psycopg.Connection,
    work: Callable[[psycopg.Connection], T],
    *,
    location: str,
    retries: int,
    lock_timeout_ms: int,
) -> T:
    """Run ``work`` in one transaction holding the store's write lock; retry on lock timeouts and deadlocks.

    Everything ``work`` wrote commits together or not at all; a ``RobotMemError`` raised by ``work``
    rolls back and propagates unchanged.
    """
    delay = 0.02
    for attempt in range(retries + 1):
        try:
            conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
            try:
                conn.execute(f"SET LOCAL lock_timeout = {int(lock_timeout_ms)}")
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                result = work(conn)
                conn.execute("COMMIT")
                return result
            except BaseException:
                _rollback(conn)
                raise
        except _RETRYABLE as exc:
            if attempt < retries:
                log.debug("write retried after %s", type(exc).__name__)
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 1.0)
                continue
            raise describe_error(exc, location) from None
        except psycopg.Error as exc:
            raise describe_error(exc, location) from None
    raise DatabaseError(
        f"database {location}: the write lock stayed busy through {retries} retries; retry later",
        transient=True,
    )


def read(conn: psycopg.Connection, work: Callable[[psycopg.Connection], T], *, location: str) -> T:
    """Run the read-only ``work`` on one snapshot and turn server failures into ``DatabaseError``."""
    try:
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            return work(conn)
        finally:
            _rollback(conn)
    except psycopg.Error as exc:
        raise describe_error(exc, location) from None


def _rollback(conn: psycopg.Connection) -> None:
    if conn.closed or conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
        return
    try:
        conn.execute("ROLLBACK")
    except psycopg.Error:
        log.debug("rollback failed", exc_info=True)
