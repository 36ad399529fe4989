"""Storage engines behind one contract (``robotmem.store.protocol``): the only code that touches a database.

``open_store`` returns the engine the settings select: ``PostgresStore`` when ``database_url`` names a
PostgreSQL server (extra ``robotmem[postgres]``), else ``SqliteStore`` on the file at
``settings.database``.
"""

from __future__ import annotations

from collections.abc import Callable

from robotmem.config import Settings
from robotmem.errors import ValidationError
from robotmem.store.protocol import Store
from robotmem.store.sqlite.store import SqliteStore


def open_store(settings: Settings, now: Callable[[], str]) -> Store:
    """Open (creating and migrating) the store of ``settings``; ``now`` stamps access times.

    Raises ``DatabaseError`` when it cannot be opened, ``ValidationError`` when a PostgreSQL store is
    asked for and its driver is not installed.
    """
    if settings.database_url:
        try:
            from robotmem.store.postgres.store import PostgresStore
        except ImportError as exc:
            raise ValidationError(
                f"database_url: a PostgreSQL store needs the postgres extra ({exc.name} is missing); "
                "pip install 'robotmem[postgres]'"
            ) from None
        return PostgresStore(
            settings.database_url,
            now=now,
            busy_timeout_ms=settings.busy_timeout_ms,
            write_retries=settings.write_retries,
            use_mirror=settings.recall_mirror,
        )
    return SqliteStore(
        settings.database,
        now=now,
        busy_timeout_ms=settings.busy_timeout_ms,
        write_retries=settings.write_retries,
        use_mirror=settings.recall_mirror,
    )


def is_server_address(location: str) -> bool:
    """True when ``location`` names a PostgreSQL server rather than a SQLite file."""
    return location.startswith(("postgresql://", "postgres://"))


__all__ = ["Store", "is_server_address", "open_store"]
