"""``SessionTable`` on PostgreSQL: the shared SQL (``store/shared/sessions.py``) with psycopg's placeholders."""

from __future__ import annotations

from robotmem.store.shared.checks import PYFORMAT
from robotmem.store.shared.sessions import SharedSessions


class Sessions(SharedSessions):
    """``SessionTable`` on PostgreSQL."""

    _mark = PYFORMAT
