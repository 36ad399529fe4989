"""Which memories each session holds, in learn order, kept in this process, so that the episode structure
of a PostgreSQL recall is read in numpy.

Recall's scoring and its relevance gate both ask for the episodes of their best candidates: every memory
of those candidates' sessions that passes the scope, in ``created_at`` order (ties by id). On the server
that is one index scan per session and the filters evaluated on every member: 20-45 ms for the 85-120
sessions of a recall at 1M memories. ``SessionMembers`` reads every session's members once, in the
server's own order (``ORDER BY session_id, created_at, id``), and the scope's mask
(``passing.PassingMasks``) says which of them pass, so the answer needs no round trip but the change
log's head.

Keeping up with the server, as ``points.SpatialPoints`` does: the memories changed after the last change
applied (``changes``) are looked up again, and every session they were or now are in is read again whole,
in the server's order; a new ``fts_epoch`` or a burst of changes loads everything again, sparse ids are not
held, and a snapshot older than what is held gets None (the caller asks the server).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg

from robotmem.store.postgres import changes

IdArray = npt.NDArray[np.int64]

_ORDERED = "SELECT m.id, m.session_id FROM memories m WHERE {where} ORDER BY m.session_id, m.created_at, m.id"


class SessionMembers:
    """This process's copy of every session's members (active or not) in learn order, synced from the
    change log; ``episodes`` keeps those a scope's mask passes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._codes: dict[str, int] = {}
        self._names: list[str] = []  # per session code, its session id
        self._members: list[IdArray] = []  # per session code, its member ids in learn order
        self._session = np.full(0, -1, dtype=np.int32)  # per memory id, its session code (-1: none)
        self._seen = -1
        self._epoch: str | None = None

    def episodes(
        self,
        conn: psycopg.Connection,
        ids: Iterable[int],
        allowed: npt.NDArray[np.bool_],
        head: tuple[int, str] | None = None,
    ) -> list[list[int]] | None:
        """The members of the sessions of ``ids`` that ``allowed`` (a scope's mask over memory ids, in
        this snapshot) passes, each session in learn order, sessions in order of their smallest member;
        None when this snapshot is not the one held (or the store's ids are too sparse to hold).
        ``head`` is ``changes.head`` of this snapshot when the caller has read it already."""
        with self._lock:
            if not self._sync(conn, head):
                return None
            session = self._session
            wanted = np.fromiter(ids, dtype=np.int64)
            wanted = wanted[(wanted >= 0) & (wanted < len(session))]
            found: list[list[int]] = []
            for code in np.unique(session[wanted]).tolist():
                if code < 0:
                    continue
                members = self._members[code]
                members = members[members < len(allowed)]
                passing = members[allowed[members]]
                if len(passing):
                    found.append(passing.tolist())
        return sorted(found, key=min)

    def load(self, conn: psycopg.Connection) -> None:
        """Bring the copy up to this snapshot (``warm_up``: the first recall then pays nothing)."""
        with self._lock:
            self._sync(conn)

    def stats(self) -> dict[str, Any]:
        """Sessions held and the last change applied (for tests and diagnostics)."""
        with self._lock:
            return {"sessions": len(self._codes), "seen": self._seen}

    def _sync(self, conn: psycopg.Connection, at: tuple[int, str] | None = None) -> bool:
        """Apply what changed; return whether what is held is this snapshot's (whose ``changes.head`` is
        ``at`` when given)."""
        head, epoch = at if at is not None else changes.head(conn)
        if self._seen >= 0 and epoch == self._epoch and head <= self._seen:
            return head == self._seen
        changed = changes.to_apply(conn, self._seen, self._epoch, epoch, max(4096, head // 8))
        if changed is None:
            if not self._load(conn):
                self._seen, self._epoch = -1, None
                return False
        elif changed:
            self._apply(conn, changed)
        self._seen, self._epoch = head, epoch
        return True

    def _load(self, conn: psycopg.Connection) -> bool:
        """Read every session's members; False (nothing held) when the store's ids are too sparse."""
        self._codes, self._names, self._members = {}, [], []
        self._session = np.full(0, -1, dtype=np.int32)
        top = changes.dense_top(conn)
        if top is None:
            return False
        self._session = np.full(top + 1, -1, dtype=np.int32)
        self._read(conn, "m.session_id IS NOT NULL", {})
        return True

    def _apply(self, conn: psycopg.Connection, changed: Sequence[int]) -> None:
        """Read again every session a changed memory was in or is now in."""
        session = self._session
        held = [m for m in changed if m < len(session)]
        names = {self._names[code] for code in set(session[held].tolist()) if code >= 0}
        session[held] = -1
        names.update(
            str(r[0])
            for r in conn.execute(
                "SELECT DISTINCT session_id FROM memories WHERE id = ANY(%s) AND session_id IS NOT NULL",
                (list(changed),),
            )
        )
        for name in names:
            code = self._codes.get(name)
            if code is not None:
                session[self._members[code][self._members[code] < len(session)]] = -1
                self._members[code] = np.zeros(0, dtype=np.int64)
        if names:
            self._read(conn, "m.session_id = ANY(%(s_names)s)", {"s_names": sorted(names)})

    def _read(self, conn: psycopg.Connection, where: str, params: dict[str, Any]) -> None:
        """Read the members of the sessions ``where`` selects, in the server's order, into the copy."""
        with conn.cursor(binary=True) as cursor:
            cursor.execute(_ORDERED.format(where=where), params)
            rows = cursor.fetchall()
        if not rows:
            return
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        names = [str(r[1]) for r in rows]
        if int(ids.max()) >= len(self._session):
            grown = np.full(max(int(ids.max()) + 1, 2 * len(self._session)), -1, dtype=np.int32)
            grown[: len(self._session)] = self._session
            self._session = grown
        # Rows arrive grouped by session: split where the name changes.
        starts = [0] + [i for i in range(1, len(names)) if names[i] != names[i - 1]]
        for start, end in zip(starts, [*starts[1:], len(names)], strict=True):
            code = self._codes.setdefault(names[start], len(self._codes))
            if code == len(self._members):
                self._names.append(names[start])
                self._members.append(ids[start:end])
            else:
                self._members[code] = ids[start:end]
            self._session[ids[start:end]] = code
