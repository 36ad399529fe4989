"""Opening the database and running writes that survive contention from other processes."""

from __future__ import annotations

import json
import logging
import os
import random
import sqlite3
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from robotmem.errors import DatabaseError, ValidationError

log = logging.getLogger("robotmem.store")
T = TypeVar("T")

_LOCKED = ("database is locked", "database table is locked", "database schema is locked", "busy")


# SQLite's limits on one statement: reached only by a filter too large or deep for it, never by data.
_TOO_COMPLEX = (
    "parser stack overflow",
    "expression tree is too large",
    "too many sql variables",
    "too many terms",
    "too many arguments",
    "statement too complex",
)


_NOT_JSON_HINT = (
    "a stored JSON column holds text that is not JSON (written by another program); "
    "`robotmem check` lists such rows and `robotmem repair` rewrites them"
)


def not_json_error(exc: json.JSONDecodeError, path: Path | str) -> DatabaseError:
    """Return the ``DatabaseError`` for stored text that a JSON column should hold but does not."""
    return DatabaseError(f"database {path}: {_NOT_JSON_HINT} (json: {exc.msg} at position {exc.pos})")


def describe_error(exc: sqlite3.Error, path: Path | str) -> DatabaseError | ValidationError:
    """Return a ``DatabaseError`` that says what went wrong with ``path`` and what to do about it.

    A statement beyond SQLite's parser or expression limits is the caller's filter, not the storage:
    that is a ``ValidationError``. Busy/locked errors are marked ``transient``.
    """
    text = str(exc)
    lowered = text.lower()
    if any(limit in lowered for limit in _TOO_COMPLEX):
        return ValidationError(
            f"context_filter: is too complex for SQLite to evaluate (sqlite: {text}); "
            "use fewer nested levels or fewer terms"
        )
    if "readonly" in lowered or "read-only" in lowered:
        hint = "the database file or its directory is read-only; fix the permissions or use another --db"
    elif "disk is full" in lowered or ("disk i/o error" in lowered and _no_room(path)):
        hint = "the disk is full; free space and retry (nothing was written)"
    elif "not a database" in lowered:
        hint = (
            "the file is not a SQLite database, so not a robotmem database; check --db and ROBOTMEM_HOME "
            "(robotmem changes nothing in it)"
        )
    elif "malformed json" in lowered:
        hint = _NOT_JSON_HINT
    elif "malformed" in lowered or "corrupt" in lowered:
        hint = "the file is not a valid robotmem database; restore a backup or run `robotmem doctor --repair`"
    elif "unable to open" in lowered:
        hint = "the database cannot be opened; check that its directory exists and is writable"
    elif any(word in lowered for word in _LOCKED):
        hint = "another process held the write lock past every retry; retry later"
        return DatabaseError(f"database {path}: {hint} (sqlite: {text})", transient=True)
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


def is_read_only(path: Path) -> bool:
    """True when ``path`` is an existing database this process may read but not write.

    That is when the file, or its directory (where SQLite keeps the -wal and -shm files), is not
    writable: read-only media, a read-only mount, or permissions.
    """
    if str(path) == ":memory:" or not path.is_file():
        return False
    return not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))


def _open_read_only(path: Path, busy_timeout_ms: int) -> sqlite3.Connection:
    """Open ``path`` read-only: shared with writers when SQLite can use its -shm, else as immutable.

    Immutable (no locks, no -wal) is used only when the -shm can neither be found nor created and
    no -wal holds changes, so nothing can be writing the file.
    """
    uri = "file:" + urllib.parse.quote(str(path.absolute()))
    timeout = busy_timeout_ms / 1000
    conn: sqlite3.Connection | None = None
    try:
        conn = sqlite3.connect(
            f"{uri}?mode=ro", uri=True, isolation_level=None, check_same_thread=False, timeout=timeout
        )
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.Error as exc:
        if conn is not None:
            conn.close()
        if "not a database" in str(exc).lower():
            raise
        wal = Path(f"{path}-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise DatabaseError(
                f"database {path}: the file is read-only and its -wal holds changes that SQLite cannot read "
                "without creating a -shm file here; open it once where it is writable to fold them in "
                f"(sqlite: {exc})"
            ) from None
    conn = sqlite3.connect(
        f"{uri}?immutable=1", uri=True, isolation_level=None, check_same_thread=False, timeout=timeout
    )
    conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    return conn


def open_database(
    path: Path, *, busy_timeout_ms: int = 5000, create: bool = True, read_only: bool = False
) -> sqlite3.Connection:
    """Open (creating if allowed) the SQLite file at ``path`` in WAL mode, autocommit, usable across threads.

    With ``read_only`` the existing file is opened for reading only (see ``is_read_only``); every
    write on the connection then fails as a read-only database. Raises ``DatabaseError`` when the
    directory is missing and ``create`` is False, or SQLite cannot open it.
    """
    if read_only:
        try:
            conn = _open_read_only(path, busy_timeout_ms)
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            conn.execute("PRAGMA temp_store = MEMORY")
        except sqlite3.Error as exc:
            raise describe_error(exc, path) from None
        return conn
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
        except json.JSONDecodeError as exc:  # a stored JSON column another program wrote
            _rollback(conn)
            raise not_json_error(exc, path) from None
        except BaseException:
            _rollback(conn)
            raise
    raise DatabaseError(
        f"database {path}: the write lock stayed busy through {retries} retries; retry later", transient=True
    )


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
    except json.JSONDecodeError as exc:  # a stored JSON column another program wrote
        raise not_json_error(exc, path) from None
