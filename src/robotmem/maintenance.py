"""RobotMemory methods for maintenance (mixed into ``RobotMemory``): integrity report, repair, backup."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robotmem.errors import DatabaseError, ValidationError
from robotmem.store import maintenance as store
from robotmem.store.connection import describe_error, open_database

if TYPE_CHECKING:
    import threading

    from robotmem.config import Settings


class MaintenanceMixin:
    """Methods that ``RobotMemory`` gains for maintenance; they use its ``_read``/``_write`` helpers."""

    if TYPE_CHECKING:
        path: Path
        settings: Settings
        _conn: sqlite3.Connection
        _lock: threading.RLock

        def _read(self, work: Callable[[sqlite3.Connection], Any]) -> Any: ...

        def _write(self, work: Callable[[sqlite3.Connection], Any]) -> Any: ...

        def _now(self) -> str: ...

    def integrity_report(self) -> dict[str, Any]:
        """Check the file and every derived index against the memories table, changing nothing.

        Returns ``{"database", "ok", "integrity_check", "foreign_key_violations", "problems",
        "examples", "active_without_vector", "rows"}``; ``problems`` counts FTS rows missing,
        orphaned or stale, vectors stale or orphaned, dangling tags and payloads, missing or
        inconsistent sessions. Memories without a vector are not a problem (backfill embeds them).
        Raises ``DatabaseError`` when SQLite cannot read the file.
        """
        report: store.IntegrityReport = self._read(store.check)
        return {"database": str(self.path), **report.to_dict()}

    def repair(self) -> dict[str, Any]:
        """Rebuild the derived indexes from the memories table in one transaction and report the result.

        Rebuilds the FTS table from each active memory's content, turns vectors of non-active or
        deleted memories into tombstones, unmarks memories whose vector is missing (backfill embeds
        them again), deletes tags and payloads of deleted memories, recreates sessions that memories
        still name, and runs ``REINDEX`` when SQLite reports damage. Memories themselves are never
        changed or deleted. Returns ``{"database", "ok", "repaired", "before", "after"}``; raises
        ``DatabaseError`` when the file is too damaged to write (restore a backup then).
        """
        before: store.IntegrityReport = self._read(store.check)
        now = self._now()

        def work(conn: sqlite3.Connection) -> dict[str, Any]:
            actions: dict[str, Any] = {"reindexed": False}
            if before.integrity != ("ok",):
                store.reindex(conn)
                actions["reindexed"] = True
            actions["fts_rows_indexed"] = store.rebuild_fts(conn)
            actions.update(store.repair_vectors(conn))
            actions.update(store.repair_references(conn, now))
            return actions

        actions: dict[str, Any] = self._write(work)
        after: store.IntegrityReport = self._read(store.check)
        return {
            "database": str(self.path),
            "ok": after.ok,
            "repaired": actions,
            "before": before.to_dict(),
            "after": after.to_dict(),
        }

    def backup(self, path: str | os.PathLike[str]) -> dict[str, Any]:
        """Copy the database to the new file ``path`` with SQLite's online backup API.

        Other processes keep reading and writing meanwhile; the copy is one consistent snapshot in
        rollback-journal mode (a single self-contained file). It is written under a temporary name,
        checked with ``integrity_check`` and only then renamed to ``path``, so ``path`` never holds a
        partial copy. Returns ``{"status": "backed_up", "path", "bytes", "memories", "integrity_check",
        "duration_ms"}``. Raises ``ValidationError`` when ``path`` exists or its directory does not,
        ``DatabaseError`` when the copy fails (disk full, read-only directory, damaged source).
        """
        if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
            raise ValidationError("path: must name the backup file to create")
        target = Path(path).expanduser().absolute()
        if target.exists():
            raise ValidationError(f"path: {target} already exists; choose a new file name")
        if not target.parent.is_dir():
            raise ValidationError(f"path: directory {target.parent} does not exist; create it first")
        started = time.perf_counter()
        partial = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.partial")
        try:
            self._copy_to(partial)
            integrity, count = store.verify_copy(partial)
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
            with contextlib.suppress(OSError):
                partial.unlink()
        return {
            "status": "backed_up",
            "path": str(target),
            "bytes": target.stat().st_size,
            "memories": count,
            "integrity_check": "ok",
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
        }

    def _copy_to(self, partial: Path) -> None:
        if str(self.path) == ":memory:":
            with self._lock:
                store.backup_to(self._conn, partial)
            return
        # A connection of its own, so the copy does not hold this instance's lock.
        source = open_database(self.path, busy_timeout_ms=self.settings.busy_timeout_ms, create=False)
        try:
            store.backup_to(source, partial)
        finally:
            source.close()
