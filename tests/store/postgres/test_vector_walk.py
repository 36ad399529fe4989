"""The HNSW walk that large stores use (made to run here on a small one): n results whenever n memories
pass the filters, the same nearest memories as the exact search, and the planner settings restored."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.query.filters import parse_filter
from robotmem.store.postgres import vectors as pg_vectors
from robotmem.store.postgres.candidates import PgCandidates
from robotmem.store.protocol import ChannelQuery, RecallScope, VectorQuery


@pytest.fixture(scope="module")
def store(postgres_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RobotMemory]:
    dsn = postgres_server.create()
    settings = Settings(home=Path(tmp_path_factory.mktemp("walk")), embed_backend="hash", embed_dim=64)
    mem = RobotMemory(dsn, settings=settings)
    try:
        for i in range(240):
            mem.learn(
                f"episode {i}: pushed the {['red', 'blue', 'green'][i % 3]} block {i % 17} cm to the left",
                context={"bucket": i % 40, "lot": i % 3},
            )
        yield mem
    finally:
        mem.close()
        postgres_server.drop(dsn)


def _search(mem: RobotMemory, text: str, context_filter: dict[str, Any] | None, depth: int) -> Any:
    embedder = mem.engine.embedder
    query = VectorQuery(embedder.embed_one(text, is_query=True), embedder.model_id, embedder.dim)
    scope = RecallScope(
        collection="default",
        min_confidence=0.0,
        filter=parse_filter(context_filter) if context_filter is not None else None,
    )

    def run(tx: Any) -> tuple[list[tuple[int, float]], str]:
        indexes = tx.conn.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'memories'").fetchall()
        assert any("hnsw" in str(r[0]) for r in indexes), "recording the model built the HNSW index"
        found = PgCandidates(tx.conn, scope).ranked(ChannelQuery(vector=query, depth=depth)).vectors
        seqscan = str(tx.conn.execute("SHOW enable_seqscan").fetchone()[0])
        return found, seqscan

    return mem.engine.read(run)


@pytest.mark.parametrize("context_filter", [None, {"lot": 1}, {"bucket": 7}, {"bucket": {"$gt": 1000}}])
def test_the_walk_finds_what_the_exact_search_finds(
    store: RobotMemory, context_filter: dict[str, Any] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    exact, _ = _search(store, "pushed the blue block", context_filter, 10)
    monkeypatch.setattr(pg_vectors, "EXACT_BELOW", 0)  # every store counts as large: walk the index
    walked, seqscan = _search(store, "pushed the blue block", context_filter, 10)
    assert seqscan == "on", "the planner settings are restored after the walk"
    passing = {"None": 240, "{'lot': 1}": 80, "{'bucket': 7}": 6, "{'bucket': {'$gt': 1000}}": 0}[
        str(context_filter)
    ]
    assert len(walked) == min(10, passing)
    assert len(exact) == min(10, passing)
    # The graph of a few hundred vectors is walked whole at ef_search 40: the same memories, in order.
    assert [m for m, _ in walked] == [m for m, _ in exact]
    for (_, got), (_, want) in zip(walked, exact, strict=True):
        assert got == pytest.approx(want, abs=1e-6)


@pytest.mark.parametrize("narrow", [True, False])
def test_a_short_time_window_is_searched_exactly_without_the_walk(
    store: RobotMemory, narrow: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recall confined to a time window the planner puts under ``WINDOW_EXACT_BELOW`` rows is searched
    exactly at once (the walk would pass every memory outside the window first); a wider one walks."""
    embedder = store.engine.embedder
    query = VectorQuery(
        embedder.embed_one("pushed the red block", is_query=True), embedder.model_id, embedder.dim
    )
    window = parse_filter({"observed_at": {"$gte": "2000-01-01T00:00:00+00:00"}, "lot": 0})
    monkeypatch.setattr(pg_vectors, "is_small", lambda conn: False)  # a large store: the walk is the default
    monkeypatch.setattr(pg_vectors, "WINDOW_EXACT_BELOW", 10**9 if narrow else 0)

    def run(tx: Any) -> tuple[list[tuple[int, float]], list[str], list[tuple[int, float]]]:
        statements: list[str] = []

        class Recording:
            def __init__(self, conn: Any) -> None:
                self.conn = conn

            def execute(self, sql: str, params: Any = None) -> Any:
                statements.append(sql)
                return self.conn.execute(sql, params)

            def pipeline(self) -> Any:
                return self.conn.pipeline()

        scope = RecallScope(collection="default", min_confidence=0.0, filter=window)
        found = PgCandidates(Recording(tx.conn), scope).ranked(ChannelQuery(vector=query, depth=10)).vectors  # type: ignore[arg-type]
        plain = RecallScope(collection="default", min_confidence=0.0, filter=parse_filter({"lot": 0}))
        every = PgCandidates(tx.conn, plain).ranked(ChannelQuery(vector=query, depth=10)).vectors
        return found, statements, every

    found, statements, every = store.engine.read(run)
    walked = any("hnsw.iterative_scan" in str(s) or "set_config" in str(s) for s in statements)
    assert walked is not narrow
    assert [m for m, _ in found] == [m for m, _ in every]  # every memory is inside this window
