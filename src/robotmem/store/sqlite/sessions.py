"""``SessionTable`` on SQLite: the shared SQL (``store/shared/sessions.py``) with SQLite's placeholders."""

from __future__ import annotations

from robotmem.store.shared.checks import NAMED
from robotmem.store.shared.sessions import SharedSessions


class Sessions(SharedSessions):
    """``SessionTable`` on SQLite."""

    _mark = NAMED
