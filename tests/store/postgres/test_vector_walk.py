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
