"""BM25 from this process's copy of the text postings ranks as the server's SQL ranking does, and keeps
up with every change: another store's writes, a repair that rebuilds the index, a rolled-back write."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.query.filters import parse_filter
from robotmem.service.recall.scoring import bm25_words
from robotmem.store.postgres import candidates as pg_candidates
from robotmem.store.postgres.candidates import PgCandidates
from robotmem.store.postgres.passing import PassingMasks
from robotmem.store.postgres.postings import Ranking, TextPostings
from robotmem.store.postgres.store import PostgresStore
from robotmem.store.protocol import ChannelQuery, RecallScope

QUERIES = [
    "grip force trial",
    "gripper slipped on the glossy cup",
    "force",
    "shelf step 3",
    "nothing matches",
]
FILTERS: list[dict[str, Any] | None] = [
    None,
    {"passed": True},
    {"bucket": {"$in": [3, 50]}},
    {"bucket": {"$lt": 60}},
    {"bucket": {"$gt": 1000}},
]


def _store(mem: RobotMemory) -> PostgresStore:
    store = mem.engine.store
    assert isinstance(store, PostgresStore)
    return store


def _learn_trials(mem: RobotMemory, count: int, collection: str = "default") -> None:
    for i in range(count):
        words = " ".join(["grip force"] * (1 + i % 4))
        extra = "the gripper slipped on the glossy cup" if i % 7 == 0 else "arm reached the shelf"
        mem.learn(
            f"trial {i}: {words} {extra} at step {i % 13}",
            context={"bucket": i % 97, "passed": i % 61 == 5},
            collection=collection,
        )


@pytest.fixture(scope="module")
def server_store(postgres_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RobotMemory]:
    """400 memories in two collections on the server."""
    dsn = postgres_server.create()
    mem = RobotMemory(
        dsn, embed_backend="none", settings=Settings(home=Path(tmp_path_factory.mktemp("home")))
    )
    try:
        _learn_trials(mem, 300)
        _learn_trials(mem, 100, collection="other")
        yield mem
    finally:
        mem.close()
        postgres_server.drop(dsn)


def _ranked(
    mem: RobotMemory,
    scope: RecallScope,
    words: list[str],
    postings: TextPostings | None,
    depth: int,
    masks: PassingMasks | None = None,
    **knobs: Any,
) -> list[tuple[int, float]]:
    def run(tx: Any) -> list[tuple[int, float]]:
        return (
            PgCandidates(tx.conn, scope, postings, masks=masks)
            .ranked(ChannelQuery(words, depth=depth, **knobs))
            .text
        )

    return mem.engine.read(run)


def _same_ranking(found: list[tuple[int, float]], expected: list[tuple[int, float]]) -> None:
    assert [m for m, _ in found] == [m for m, _ in expected]
    for (_, score), (_, want) in zip(found, expected, strict=True):
        assert score == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("context_filter", FILTERS)
@pytest.mark.parametrize("knobs", [{"min_coverage": 0.0}, {"min_coverage": 0.3, "k1": 0.6, "b": 0.1}])
def test_postings_rank_as_the_server_does(
    server_store: RobotMemory, query: str, context_filter: dict[str, Any] | None, knobs: dict[str, Any]
) -> None:
    scope = RecallScope(
        collection="default",
        min_confidence=0.0,
        filter=parse_filter(context_filter) if context_filter is not None else None,
    )
    words = bm25_words(query, "basic")
    for depth in (1, 8, 40, 500):
        expected = _ranked(server_store, scope, words, None, depth, **knobs)
        found = _ranked(server_store, scope, words, TextPostings(), depth, **knobs)
        _same_ranking(found, expected)
        masked = _ranked(server_store, scope, words, TextPostings(), depth, PassingMasks(), **knobs)
        _same_ranking(masked, expected)
    if query == "nothing matches":
        assert expected == []
    elif context_filter is None:
        assert expected, "the other queries match memories"


def test_when_the_filters_pass_few_the_server_ranks(
    server_store: RobotMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the most memories it checks, the copy hands the ranking back to SQL: the same answer."""
    scope = RecallScope(collection="default", min_confidence=0.0, filter=parse_filter({"passed": True}))
    words = bm25_words("grip force trial", "basic")
    expected = _ranked(server_store, scope, words, None, 5, min_coverage=0.0)
    monkeypatch.setattr(pg_candidates, "_MOST_CHECKED", 64)
    calls: list[int] = []
    real_bm25 = pg_candidates.bm25

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real_bm25(*args, **kwargs)

    monkeypatch.setattr(pg_candidates, "bm25", counted)
    found = _ranked(server_store, scope, words, TextPostings(), 5, min_coverage=0.0)
    assert calls, "the SQL ranking answered"
    _same_ranking(found, expected)
    assert found, "some memories pass"


def _totals(mem: RobotMemory) -> tuple[int, int]:
    row = mem.engine.read(lambda tx: tx.conn.execute("SELECT docs, tokens FROM fts_totals").fetchone())
    return int(row[0]), int(row[1])


def _held(mem: RobotMemory) -> tuple[int, int]:
    postings = _store(mem).postings
    assert postings is not None
    stats = postings.stats()
    return int(stats["rows"]), int(stats["tokens"])


@contextlib.contextmanager
def _trial_store(server: Any, home: Path, trials: int, **settings: Any) -> Iterator[RobotMemory]:
    """A new database holding ``trials`` learned memories, its postings loaded; dropped afterwards."""
    dsn = server.create()
    mem = RobotMemory(dsn, embed_backend="none", settings=Settings(home=home, **settings))
    try:
        _learn_trials(mem, trials)
        mem.warm_up()
        yield mem
    finally:
        mem.close()
        server.drop(dsn)


def test_another_stores_writes_reach_the_next_recall(postgres_server: Any, tmp_path: Path) -> None:
    dsn = postgres_server.create()
    reader = RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path / "a"))
    writer = RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path / "b"))
    try:
        _learn_trials(writer, 40)
        reader.warm_up()
        assert _held(reader) == _totals(reader)
        fresh = writer.learn("the zeolite canister rattled when the arm braked", context={"passed": True})
        doomed = writer.learn("a marzipan gripper pad melted on the heater")
        assert [m["id"] for m in reader.recall("zeolite canister")["memories"]] == [fresh["memory_id"]]
        assert [m["id"] for m in reader.recall("marzipan pad")["memories"]] == [doomed["memory_id"]]
        writer.forget(doomed["memory_id"], "wrong")
        writer.update(fresh["memory_id"], "the quartz canister rattled when the arm braked")
        assert reader.recall("marzipan pad")["memories"] == []
        assert reader.recall("zeolite")["memories"] == []
        assert [m["id"] for m in reader.recall("quartz canister")["memories"]] == [fresh["memory_id"]]
        assert _held(reader) == _totals(reader)
    finally:
        reader.close()
        writer.close()
        postgres_server.drop(dsn)


def test_a_repair_loads_the_postings_again(postgres_server: Any, tmp_path: Path) -> None:
    with _trial_store(postgres_server, tmp_path, 30) as mem:
        postings = _store(mem).postings
        assert postings is not None
        # The index loses a row behind the change log's back (as a damaged store would), then a repair
        # rebuilds it without writing any memory: only the epoch tells the copy.
        mem.engine.write(
            lambda tx: tx.conn.execute(
                "DELETE FROM memory_terms WHERE memory_id = (SELECT min(memory_id) FROM memory_terms)"
            )
        )
        mem.repair()
        before = postings.stats()["seen"]
        scope = RecallScope(collection="default", min_confidence=0.0)
        words = bm25_words("grip force trial", "basic")
        found = _ranked(mem, scope, words, postings, 50, min_coverage=0.0)
        assert postings.stats()["seen"] == before  # no change was logged: the epoch alone reloaded
        assert _held(mem) == _totals(mem) == (30, _totals(mem)[1])
        _same_ranking(found, _ranked(mem, scope, words, None, 50, min_coverage=0.0))


def test_a_write_transaction_never_feeds_the_copy(postgres_server: Any, tmp_path: Path) -> None:
    """A recall inside a write (learn's duplicate check) ranks in SQL: its rows may yet roll back."""
    with _trial_store(postgres_server, tmp_path, 20) as mem:
        scope = RecallScope(collection="default", min_confidence=0.0)

        def work(tx: Any) -> None:
            tx.conn.execute("UPDATE memories SET content = content || ' obsidian' WHERE id = 1")
            candidates = tx.candidates(scope)
            assert candidates._postings is None
            raise RuntimeError("roll back")

        with pytest.raises(RuntimeError):
            mem.engine.write(work)
        assert mem.recall("obsidian")["memories"] == []
        assert _held(mem) == _totals(mem)


def test_recall_mirror_off_ranks_on_the_server(postgres_server: Any, tmp_path: Path) -> None:
    with _trial_store(postgres_server, tmp_path, 10, recall_mirror=False) as mem:
        assert _store(mem).postings is None
        assert len(mem.recall("grip force", n=3)["memories"]) == 3


@settings(max_examples=300, deadline=None)
@given(
    scores=st.lists(st.sampled_from([0.5, 1.0, 1.25, 2.0, 3.0, 7.5]) | st.floats(0, 10), max_size=3000),
    k=st.integers(1, 60),
    shuffle=st.randoms(use_true_random=False),
)
def test_the_best_of_a_ranking_are_those_of_a_full_sort(scores: list[float], k: int, shuffle: Any) -> None:
    """``Ranking.best`` narrows large rankings by a sampled bound: never at the cost of the exact answer
    (best first, ties by smaller id), whatever the ties and the order of the ids."""
    ids = list(range(5, 5 + 2 * len(scores), 2))
    shuffle.shuffle(ids)
    ranking = Ranking(np.asarray(ids, dtype=np.int64), np.asarray(scores, dtype=np.float64))
    expected = sorted(zip(ids, scores, strict=True), key=lambda p: (-p[1], p[0]))
    assert ranking.best(k) == expected[:k]
    if len(expected) >= k:
        assert ranking.best_with_ties(k) == [p for p in expected if p[1] >= expected[k - 1][1]]


@pytest.mark.parametrize("query", QUERIES)
def test_each_memorys_share_of_the_query_agrees_with_the_servers_matches(
    server_store: RobotMemory, query: str
) -> None:
    scope = RecallScope(collection="default", min_confidence=0.0)
    words = bm25_words(query, "basic")

    def run(tx: Any) -> None:
        everything = [
            int(m) for (m,) in tx.conn.execute("SELECT id FROM memories WHERE collection = 'default'")
        ]
        on_server = PgCandidates(tx.conn, scope, None)
        assert on_server.text_coverage(words, everything) is None  # no postings here: matches answer
        shares = PgCandidates(tx.conn, scope, TextPostings()).text_coverage(words, everything)
        assert shares is not None and set(shares) == set(everything)
        for coverage in (0.0, 0.3, 0.6, 1.0):
            reached = {m for m, share in shares.items() if share > 0 and share >= coverage - 1e-12}
            assert reached == on_server.text_matches(words, coverage, everything), coverage
        if query != "nothing matches":
            assert any(shares.values())

    server_store.engine.read(run)
