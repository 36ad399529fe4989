"""The process's copy of the sessions' members (``store/postgres/episodes.py``) gives the episodes the server's
query gives, follows every writer's changes, and is never read where it could be wrong."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.query.filters import parse_filter
from robotmem.store.postgres.candidates import PgCandidates
from robotmem.store.postgres.episodes import SessionMembers
from robotmem.store.postgres.passing import PassingMasks
from robotmem.store.protocol import RecallScope

FILTERS: list[dict[str, Any] | None] = [None, {"passed": True}, {"bucket": {"$lt": 40}}]


def _learn(mem: RobotMemory, i: int, session: str | None, collection: str = "default") -> int:
    return int(
        mem.learn(
            f"trial {i}: grip force {i % 7} newtons, the cup slipped at step {i % 13}",
            context={"bucket": i % 97, "passed": i % 3 == 0},
            collection=collection,
            session_id=session,
        )["memory_id"]
    )


def _fill(mem: RobotMemory, start: int, sessions: int, each: int) -> list[int]:
    ids = []
    for s in range(sessions):
        collection = "default" if s % 4 else "other"
        session = mem.start_session(collection=collection)["session_id"]
        ids += [_learn(mem, start + s * each + k, session, collection) for k in range(each)]
    ids += [_learn(mem, start + 900 + k, None) for k in range(5)]  # memories without a session
    return ids


@pytest.fixture
def store(postgres_server: Any, tmp_path: Path) -> Iterator[tuple[str, RobotMemory, list[int]]]:
    dsn = postgres_server.create()
    mem = RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path))
    try:
        ids = _fill(mem, 0, 8, 7)
        yield dsn, mem, ids
    finally:
        mem.close()
        postgres_server.drop(dsn)


def _scopes() -> list[RecallScope]:
    return [
        RecallScope(collection=c, min_confidence=0.0, filter=parse_filter(f) if f is not None else None)
        for c in ("default", "other")
        for f in FILTERS
    ]


def _both(
    mem: RobotMemory, members: SessionMembers, scope: RecallScope, ids: list[int]
) -> tuple[list[list[int]], list[list[int]] | None]:
    """The episodes of ``ids`` from the server's query and from the copy, on one snapshot."""

    def read(tx: Any) -> tuple[list[list[int]], list[list[int]] | None]:
        server = PgCandidates(tx.conn, scope).episodes(ids)
        allowed = PgCandidates(tx.conn, scope, masks=PassingMasks())._scope_mask()
        assert allowed is not None
        return server, members.episodes(tx.conn, ids, allowed)

    return mem.engine.read(read)


def test_the_copy_gives_the_servers_episodes_after_every_writer(
    store: tuple[str, RobotMemory, list[int]], tmp_path: Path
) -> None:
    dsn, mem, ids = store
    members = SessionMembers()
    for scope in _scopes():
        server, held = _both(mem, members, scope, ids[::5])
        assert held == server
        assert any(len(episode) > 1 for episode in server) or scope.collection == "other"
    # Another process's writes: new sessions and memories, a forget, a changed context, a moved memory,
    # a memory moved to another session, a new created_at (learn order), a deleted memory.
    with RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path / "other")) as other:
        ids += _fill(other, 2000, 3, 6)
        other.forget(ids[3], "wrong")
        other.update(ids[4], "trial 4: grip force 9 newtons", context={"bucket": 3, "passed": False})
    with psycopg.connect(dsn) as conn:  # by hand, past robotmem: the change log still sees it
        conn.execute("UPDATE memories SET collection = 'other' WHERE id = %s", (ids[8],))
        conn.execute(
            "UPDATE memories SET session_id = (SELECT session_id FROM memories WHERE id = %s) WHERE id = %s",
            (ids[20], ids[9]),
        )
        conn.execute("UPDATE memories SET created_at = '2000-01-01T00:00:00+00:00' WHERE id = %s", (ids[12],))
        conn.execute("UPDATE memories SET session_id = NULL WHERE id = %s", (ids[15],))
        conn.execute("DELETE FROM memories WHERE id = %s", (ids[17],))
    for scope in _scopes():
        for asked in (ids[::3], ids[1::4], ids[-20:]):
            server, held = _both(mem, members, scope, asked)
            assert held == server
    assert members.stats()["sessions"] == 11


def test_a_snapshot_older_than_the_copy_is_not_answered_from_it(
    store: tuple[str, RobotMemory, list[int]],
) -> None:
    dsn, mem, ids = store
    members = SessionMembers()
    scope = RecallScope(collection="default", min_confidence=0.0, filter=None)
    with psycopg.connect(dsn) as old:
        old.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        allowed = PgCandidates(old, scope, masks=PassingMasks())._scope_mask()
        assert allowed is not None and members.episodes(old, ids, allowed) is not None
        session = mem.start_session()["session_id"]
        _learn(mem, 700, session)
        server, held = _both(mem, members, scope, ids)
        assert held == server  # a newer snapshot moves the copy on
        assert members.episodes(old, ids, allowed) is None
        old.execute("ROLLBACK")


def test_recall_reads_the_episodes_from_the_copy(store: tuple[str, RobotMemory, list[int]]) -> None:
    _, mem, ids = store
    held = mem.engine.store.members  # type: ignore[attr-defined]
    assert held is not None and held.stats()["seen"] == -1
    found = mem.recall("grip force cup slipped", n=5, context_filter={"passed": True})
    assert found["memories"] and held.stats()["sessions"] == 8
    plain = RobotMemory(mem.engine.store.dsn, embed_backend="none", settings=Settings(recall_mirror=False))  # type: ignore[attr-defined]
    with plain:
        again = plain.recall("grip force cup slipped", n=5, context_filter={"passed": True})
    assert [(m["id"], m["score"]) for m in again["memories"]] == [
        (m["id"], m["score"]) for m in found["memories"]
    ]
