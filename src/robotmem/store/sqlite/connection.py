"""Opening the database and running writes that survive contention from other processes."""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from robotmem.errors import DatabaseError

log = logging.getLogger("robotmem.store")
T = TypeVar("T")

_LOCKED = ("database is locked", "database table is locked", "database schema is locked", "busy")


def describe_error(exc: sqlite3.Error, path: Path | str) -> DatabaseError:
    """Return a ``DatabaseError`` that says what went wrong with ``path`` and what to do about it."""
    text = str(exc)
    lowered = text.lower()
    if "readonly" in lowered or "read-only" in lowered:
        hint = "the database file or its directory is read-only; fix the permissions or use another --db"
    elif "disk is full" in lowered or ("disk i/o error" in lowered and _no_room(path)):
        hint = "the disk is full; free space and retry (nothing was written)"
    elif "not a database" in lowered or "malformed" in lowered or "corrupt" in lowered:
        hint = "the file is not a valid robotmem database; restore a backup or run `robotmem doctor --repair`"
    elif "unable to open" in lowered:
        hint = "the database cannot be opened; check that its directory exists and is writable"
    elif any(word in lowered for word in _LOCKED):
        hint = "another process held the write lock past every retry; retry later"
    else:
        hint = "SQLite reported an error"
    return DatabaseError(f"database {path}: {hint} (sqlite: {text})")


def _no_room(path: Path | str) -> bool:
    """Whether the file system holding ``path`` has no free block (SQLite may report an I/O error then)."""
    try:
        stats = os.statvfs(Path(path).parent)
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < 65536


def is_locked(exc: sqlite3.Error) -> bool:
    """Return True when ``exc`` is SQLite's busy/locked condition, which a retry can cure."""
    return isinstance(exc, sqlite3.OperationalError) and any(word in str(exc).lower() for word in _LOCKED)


def open_database(path: Path, *, busy_timeout_ms: int = 5000, create: bool = True) -> sqlite3.Connection:
    """Open (creating if allowed) the SQLite file at ``path`` in WAL mode, autocommit, usable across threads.

    Raises ``DatabaseError`` when the directory is missing and ``create`` is False, or SQLite cannot open it.
    """
    if str(path) != ":memory:" and not path.parent.exists():
        if not create:
            raise DatabaseError(f"database {path}: directory {path.parent} does not exist")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DatabaseError(f"database {path}: cannot create directory {path.parent} ({exc})") from None
    try:
        conn = sqlite3.connect(
            str(path), isolation_level=None, check_same_thread=False, timeout=busy_timeout_ms / 1000
        )
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal" and str(path) != ":memory:":
            log.warning("database %s: journal mode is %s, not WAL", path, mode)
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA temp_store = MEMORY")
    except sqlite3.Error as exc:
        raise describe_error(exc, path) from None
    return conn


def write(
    conn: sqlite3.Connection, work: Callable[[sqlite3.Connection], T], *, path: Path | str, retries: int = 8
) -> T:
    """Run ``work`` inside ``BEGIN IMMEDIATE … COMMIT``; on a lock, roll back and retry with jittered backoff.

    Everything ``work`` wrote is committed together or not at all. Raises ``DatabaseError`` when the
    lock is still held after ``retries`` attempts or SQLite fails for another reason; any
    ``RobotMemError`` raised by ``work`` rolls back and propagates unchanged.
    """
    delay = 0.02
    for attempt in range(retries + 1):
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            if is_locked(exc) and attempt < retries:
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 1.0)
                continue
            raise describe_error(exc, path) from None
        try:
            result = work(conn)
            conn.execute("COMMIT")
            return result
        except sqlite3.Error as exc:
            _rollback(conn)
            if is_locked(exc) and attempt < retries:
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 1.0)
                continue
            raise describe_error(exc, path) from None
        except BaseException:
            _rollback(conn)
            raise
    raise DatabaseError(f"database {path}: the write lock stayed busy through {retries} retries; retry later")


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            log.exception("rollback failed")


def read(conn: sqlite3.Connection, work: Callable[[sqlite3.Connection], T], *, path: Path | str) -> T:
    """Run the read-only ``work`` on one snapshot and turn SQLite failures into ``DatabaseError``.

    In WAL mode a reader never waits for a writer; the deferred transaction only pins the snapshot.
    """
    try:
        conn.execute("BEGIN")
        try:
            return work(conn)
        finally:
            _rollback(conn)
    except sqlite3.Error as exc:
        raise describe_error(exc, path) from None
