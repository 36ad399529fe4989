"""``SyncRows`` on PostgreSQL: the shared ``ChangeRows`` (``store/shared/records.py``) over this engine's
records. The change numbers come from one sequence; writers hold the store's write lock until they
commit, so numbers commit in order (``schema.py``)."""

from __future__ import annotations

from robotmem.store.postgres.transfer import Transfer
from robotmem.store.shared import records


class Sync(records.ChangeRows):
    """``SyncRows`` on PostgreSQL."""

    style = records.POSTGRES
    transfer = Transfer
