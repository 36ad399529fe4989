"""``store/sqlite/text_index.py``: every FTS write changes the index rows and tells the recall mirrors about it."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.store.sqlite import text_index as fts
from robotmem.store.sqlite.connection import open_database
from robotmem.store.sqlite.mirror import RecallMirror
from robotmem.text.tokens import query_tokens


@pytest.fixture
def stored(tmp_path: Path, settings: Settings) -> Iterator[tuple[sqlite3.Connection, list[int]]]:
    """A connection to a database of three memories, and their ids."""
    with RobotMemory(tmp_path / "fts.db", settings=settings, embed_backend="none") as mem:
        ids = [
            mem.learn(text)["memory_id"]
            for text in (
                "grip_force=4N held the mug",
                "lidar misses glass doors",
                "the tray slid off the table",
            )
        ]
    conn = open_database(tmp_path / "fts.db")
    yield conn, ids
    conn.close()


def _bodies(conn: sqlite3.Connection) -> dict[int, str]:
    return {int(rowid): str(body) for rowid, body in conn.execute("SELECT rowid, body FROM memories_fts")}


def _logged(conn: sqlite3.Connection) -> dict[int, int]:
    return {int(m): int(seq) for m, seq in conn.execute("SELECT memory_id, seq FROM memory_changes")}


def _epoch(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'fts_epoch'").fetchone()
    return None if row is None else str(row[0])


def _matches(mirror: RecallMirror, conn: sqlite3.Connection, text: str) -> tuple[set[int], set[int]]:
    """The ids whose body matches a word of ``text``: by the mirror (after a sync) and by FTS5."""
    mirror.sync(conn)
    scored = mirror.bm25(query_tokens(text))
    assert scored is not None
    words = " OR ".join(f'"{word}"' for word in query_tokens(text))
    fts5 = {
        int(r[0])
        for r in conn.execute("SELECT rowid FROM memories_fts WHERE memories_fts MATCH :m", {"m": words})
    }
    return {int(m) for m in np.flatnonzero(scored[1])}, fts5


def test_add_remove_and_replace_change_the_rows_and_log_every_memory_they_touch(
    stored: tuple[sqlite3.Connection, list[int]],
) -> None:
    conn, (mug, lidar, tray) = stored
    mirror = RecallMirror()
    try:
        mirror.sync(conn)
        epoch = _epoch(conn)
        steps: list[tuple[Callable[[], None], set[int]]] = [
            (lambda: fts.remove(conn, [mug]), {mug}),
            (lambda: fts.replace(conn, lidar, "quartz crystal grip"), {lidar}),
            (lambda: fts.replace(conn, tray, None), {tray}),
            (lambda: fts.add(conn, [(mug, "amber lantern grip")]), {mug}),
        ]
        for write, touched in steps:
            head = max(_logged(conn).values())
            write()
            logged = _logged(conn)
            assert {m for m, seq in logged.items() if seq > head} == touched  # each logged, nothing else
        assert _bodies(conn) == {lidar: "quartz crystal grip", mug: "amber lantern grip"}
        assert _epoch(conn) == epoch  # row by row: no reload needed
        found, fts5 = _matches(mirror, conn, "quartz amber grip held")
        assert found == fts5 == {mug, lidar}
        assert _matches(mirror, conn, "tray slid") == (set(), set())
    finally:
        mirror.close()


def test_rebuild_indexes_exactly_the_rows_given_and_makes_every_mirror_reload(
    stored: tuple[sqlite3.Connection, list[int]],
) -> None:
    conn, (mug, lidar, tray) = stored
    mirror = RecallMirror()
    try:
        mirror.sync(conn)
        epoch = int(_epoch(conn) or 0)
        before = _logged(conn)
        assert fts.rebuild(conn, iter([(mug, "violet sponge"), (tray, "violet tray")])) == 2
        assert _bodies(conn) == {mug: "violet sponge", tray: "violet tray"}
        assert int(_epoch(conn) or 0) == epoch + 1
        assert _logged(conn) == before  # the epoch, not the log, tells the mirrors
        found, fts5 = _matches(mirror, conn, "violet lidar")
        assert found == fts5 == {mug, tray}
        assert lidar not in _bodies(conn)
    finally:
        mirror.close()
