"""``SyncRows`` on SQLite: the shared ``ChangeRows`` (``store/shared/records.py``) over this engine's records.

The change numbers are those of ``memory_changes`` and ``session_changes`` (kept by triggers). SQLite
serialises writers, so numbers commit in order: a reader that saw number n will never later find a
smaller one committed.
"""

from __future__ import annotations

from robotmem.store.shared import records
from robotmem.store.sqlite.transfer import Transfer


class Sync(records.ChangeRows):
    """``SyncRows`` on SQLite."""

    style = records.SQLITE
    transfer = Transfer
