"""Storage engines behind one contract (``robotmem.store.protocol``): the only code that touches a database.

``open_store`` returns the engine the settings select; today that is ``SqliteStore`` on the file at
``settings.database``.
"""

from __future__ import annotations

from collections.abc import Callable

from robotmem.config import Settings
from robotmem.store.protocol import Store
from robotmem.store.sqlite.store import SqliteStore


def open_store(settings: Settings, now: Callable[[], str]) -> Store:
    """Open (creating and migrating) the store of ``settings``; ``now`` stamps access times.

    Raises ``DatabaseError`` when it cannot be opened.
    """
    return SqliteStore(
        settings.database,
        now=now,
        busy_timeout_ms=settings.busy_timeout_ms,
        write_retries=settings.write_retries,
        use_mirror=settings.recall_mirror,
    )


__all__ = ["Store", "open_store"]
