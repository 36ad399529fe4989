"""The process's masks of which memories pass a scope (``store/postgres/passing.py``) hold exactly what the
server's predicate passes, follow every writer's changes, and are never read where they could be wrong."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.query.filters import parse_filter, reads_volatile
from robotmem.store.postgres.candidates import PgCandidates, predicate
from robotmem.store.postgres.passing import PassingMasks
from robotmem.store.postgres.store import PostgresStore
from robotmem.store.protocol import ChannelQuery, RecallScope

FILTERS: list[dict[str, Any] | None] = [
    None,
    {"passed": True},
    {"bucket": {"$in": [3, 50]}},
    {"$or": [{"bucket": {"$lt": 10}}, {"$not": {"passed": False}}]},
    {"tags": "tactile"},
    {"robot.id": "arm-2", "bucket": {"$gte": 20}},
]


def _learn(mem: RobotMemory, i: int, collection: str = "default") -> int:
    return int(
        mem.learn(
            f"trial {i}: grip force {i % 7} newtons, the cup slipped at step {i % 13}",
            context={"bucket": i % 97, "passed": i % 5 == 0, "robot": {"id": f"arm-{i % 3}"}},
            collection=collection,
        )["memory_id"]
    )


@pytest.fixture
def store(postgres_server: Any, tmp_path: Path) -> Iterator[tuple[str, RobotMemory]]:
    dsn = postgres_server.create()
    mem = RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path))
    try:
        for i in range(120):
            _learn(mem, i, "default" if i % 4 else "other")
        yield dsn, mem
    finally:
        mem.close()
        postgres_server.drop(dsn)


def _server_passing(mem: RobotMemory, scope: RecallScope) -> set[int]:
    where, params = predicate(scope)
    return mem.engine.read(
        lambda tx: {int(r[0]) for r in tx.conn.execute(f"SELECT m.id FROM memories m WHERE {where}", params)}
    )


def _held(mem: RobotMemory, masks: PassingMasks, scope: RecallScope) -> set[int] | None:
    where, params = predicate(scope)
    found = mem.engine.read(lambda tx: masks.allowed(tx.conn, where, params))
    return None if found is None else {int(m) for m in np.flatnonzero(found)}


def _scopes() -> list[RecallScope]:
    return [
        RecallScope(collection=c, min_confidence=0.0, filter=parse_filter(f) if f is not None else None)
        for c in ("default", "other")
        for f in FILTERS
    ]


def test_masks_follow_every_writer(store: tuple[str, RobotMemory], tmp_path: Path) -> None:
    dsn, mem = store
    masks = PassingMasks()
    for scope in _scopes():
        assert _held(mem, masks, scope) == _server_passing(mem, scope)
    # Another process's writes: new memories, a forget, a moved memory, a changed context, a tag, a repair.
    with RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path / "other")) as other:
        new = [_learn(other, 1000 + i) for i in range(9)]
        other.forget(new[0], "wrong")
        other.update(new[1], "trial 1001: grip force 9 newtons", context={"bucket": 3, "passed": True})
    with psycopg.connect(dsn) as conn:  # by hand, past robotmem: the change log still sees it
        conn.execute("INSERT INTO memory_tags (memory_id, tag) VALUES (%s, 'tactile')", (new[2],))
        conn.execute("UPDATE memories SET collection = 'other' WHERE id = %s", (new[3],))
        conn.execute("UPDATE memories SET confidence = 0.05 WHERE id = %s", (new[4],))
        conn.execute("DELETE FROM memories WHERE id = %s", (new[5],))
    mem.repair()
    for scope in _scopes():
        assert _held(mem, masks, scope) == _server_passing(mem, scope)
    confident = RecallScope(collection="default", min_confidence=0.5, filter=None)
    assert new[4] not in (_held(mem, masks, confident) or set())
    assert _held(mem, masks, confident) == _server_passing(mem, confident)


def test_a_snapshot_older_than_the_mask_is_not_answered_from_it(store: tuple[str, RobotMemory]) -> None:
    dsn, mem = store
    masks = PassingMasks()
    scope = RecallScope(collection="default", min_confidence=0.0, filter=parse_filter({"passed": True}))
    where, params = predicate(scope)
    with psycopg.connect(dsn) as old:
        old.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        before = masks.allowed(old, where, params)
        assert before is not None
        _learn(mem, 490)  # a new memory that passes the filter
        assert _held(mem, masks, scope) == _server_passing(mem, scope)  # a newer snapshot moves the mask on
        assert masks.allowed(old, where, params) is None
        old.execute("ROLLBACK")
    assert int(np.count_nonzero(before)) + 1 == len(_server_passing(mem, scope))


def test_filters_on_access_counts_are_checked_on_the_server(store: tuple[str, RobotMemory]) -> None:
    """Recall bumps ``access_count`` without a logged change, so a mask of it would go stale."""
    _, mem = store
    volatile = parse_filter({"$or": [{"passed": True}, {"$not": {"access_count": {"$lt": 1}}}]})
    assert reads_volatile(volatile)
    assert not reads_volatile(parse_filter({"passed": True, "bucket": {"$lt": 5}}))
    before = mem.recall("grip force cup", n=50, context_filter={"access_count": {"$gte": 1}})["total"]
    mem.recall("grip force cup", n=3)
    mem.engine.store.settle_access()
    after = mem.recall("grip force cup", n=50, context_filter={"access_count": {"$gte": 1}})["total"]
    assert (before, after) == (0, 3)
    store_ = mem.engine.store
    assert isinstance(store_, PostgresStore) and store_.masks is not None
    scope = RecallScope(collection="default", min_confidence=0.0, filter=volatile)
    assert mem.engine.read(lambda tx: PgCandidates(tx.conn, scope, masks=store_.masks)._scope_mask()) is None


def test_a_store_with_sparse_ids_holds_no_mask(store: tuple[str, RobotMemory]) -> None:
    dsn, mem = store
    with psycopg.connect(dsn) as conn:
        conn.execute("SELECT setval(pg_get_serial_sequence('memories', 'id'), 1::bigint << 40)")
    far = mem.learn("the vacuum gripper lost suction on the wet tile", context={"passed": True})["memory_id"]
    assert far > 1 << 40
    scope = RecallScope(collection="default", min_confidence=0.0, filter=parse_filter({"passed": True}))
    assert _held(mem, PassingMasks(), scope) is None
    found = mem.recall("vacuum suction wet tile", n=3, context_filter={"passed": True})["memories"]
    assert [m["id"] for m in found][:1] == [far]


def _channels(
    mem: RobotMemory, scope: RecallScope, words: list[str], vector: Any, postings: Any, masks: Any
) -> Any:
    """The two channels: asked one after the other without copies, else side by side."""

    def run(tx: Any) -> Any:
        ranked = PgCandidates(tx.conn, scope, postings, masks=masks).ranked(
            ChannelQuery(words, vector, depth=20, min_coverage=0.2)
        )
        return ranked.text, ranked.vectors

    return mem.engine.read(run)


def test_text_beside_vectors_gives_each_channel_alone(postgres_server: Any, tmp_path: Path) -> None:
    """With the scope's mask the process ranks BM25 in a thread while the server walks the vectors: the
    same two lists as the channels asked one after the other, with and without the process's copies."""
    from robotmem.embedders.hashing import HashingEmbedder
    from robotmem.service.recall.scoring import bm25_words
    from robotmem.store.postgres.postings import TextPostings
    from robotmem.store.protocol import VectorQuery

    dsn = postgres_server.create()
    embedder = HashingEmbedder(dim=64)
    try:
        with RobotMemory(dsn, settings=Settings(home=tmp_path), embedder=embedder) as mem:
            for i in range(150):
                _learn(mem, i, "default" if i % 4 else "other")
            postings, masks = TextPostings(), PassingMasks()
            for query in ("grip force cup", "slipped at step 4", "nothing like it"):
                vector = VectorQuery(embedder.embed_one(query, is_query=True), embedder.model_id, 64)
                words = bm25_words(query, "basic")
                for raw in FILTERS:
                    scope = RecallScope(
                        collection="default", min_confidence=0.0, filter=parse_filter(raw) if raw else None
                    )

                    text, vectors = _channels(mem, scope, words, vector, None, None)
                    text_beside, vectors_beside = _channels(mem, scope, words, vector, postings, masks)
                    assert [m for m, _ in text_beside] == [m for m, _ in text]
                    assert [x for _, x in text_beside] == pytest.approx([x for _, x in text], rel=1e-9)
                    assert vectors_beside == vectors
                    if query == "grip force cup" and raw is None:
                        assert text and vectors
            assert masks.stats()["masks"] == len(FILTERS)
    finally:
        postgres_server.drop(dsn)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_ranks_beside_the_server_too(postgres_server: Any, tmp_path: Path) -> None:
    """A child forked after recalls made the ranking threads gets threads of its own (a copy of the
    parent's pool would hold threads that did not survive the fork, and hang)."""
    from robotmem.embedders.hashing import HashingEmbedder

    dsn = postgres_server.create()
    try:
        settings = Settings(home=tmp_path)
        with RobotMemory(dsn, settings=settings, embedder=HashingEmbedder(dim=64)) as mem:
            for i in range(40):
                _learn(mem, i)
            assert mem.recall("grip force cup", context_filter={"passed": True})["memories"]
        pid = os.fork()
        if pid == 0:  # the child: exit 0 when its recall answers, 14 (SIGALRM) when it hangs
            code = 1
            try:
                signal.alarm(60)
                with RobotMemory(dsn, settings=settings, embedder=HashingEmbedder(dim=64)) as child:
                    code = (
                        0
                        if child.recall("grip force cup", context_filter={"passed": True})["memories"]
                        else 2
                    )
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        postgres_server.drop(dsn)


def test_the_real_world_flag_is_read_from_a_mask_that_follows_writes(store: tuple[str, RobotMemory]) -> None:
    """``marks`` answers the real-world flag from the process's mask of it, as the server would."""
    dsn, mem = store
    masks = PassingMasks()
    scope = RecallScope(collection="default", min_confidence=0.0, filter=parse_filter({"passed": True}))
    real = [
        int(
            mem.learn(
                f"real trial {i}: the cup slipped",
                context={"env": {"sim_or_real": "real"}},
                robot_id="arm-2" if i % 2 else None,
            )["memory_id"]
        )
        for i in range(4)
    ]
    ids = [*range(1, 140), *real, 10**6]

    def both(robot: str | None = None) -> tuple[set[int], set[int]]:
        def read(tx: Any) -> tuple[set[int], set[int]]:
            server = PgCandidates(tx.conn, scope).marks(ids, robot)
            held = PgCandidates(tx.conn, scope, masks=masks).marks(ids, robot)
            assert held.own == server.own
            assert bool(server.own) == (robot is not None)
            return server.real_world, held.real_world

        return mem.engine.read(read)

    server, held = both()
    assert held == server == set(real)
    assert masks.stats()["masks"] == 1  # answered from the mask
    server, held = both("arm-2")
    assert held == server == set(real)
    assert masks.stats()["masks"] == 2  # and the own robot's
    with psycopg.connect(dsn) as conn:
        conn.execute(
            'UPDATE memories SET context = context || \'{"env": {"sim_or_real": "real"}}\'::jsonb WHERE id = 5'
        )
        conn.execute("UPDATE memories SET context = '{}'::jsonb WHERE id = %s", (real[0],))
    server, held = both()
    assert held == server == {5, *real[1:]}
