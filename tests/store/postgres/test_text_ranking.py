"""BM25 on the server ranks as FTS5 does when a filter passes few of the best-ranked memories.

The server ranks the memories holding a query word, checks the filters on a window of the best, and,
when too few of those pass, ranks again over the passing memories only. Stores here are large enough
that the first window falls short, so that second ranking is what decides, and it must give the SQLite
store's answer (the same scores in the same order, the same memories at each score).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.query.filters import parse_filter
from robotmem.service.recall.scoring import bm25_words
from robotmem.store.protocol import ChannelQuery, RecallScope

QUERIES = ["grip force trial", "gripper slipped on the glossy cup", "force"]


@pytest.fixture(scope="module")
def both(postgres_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[RobotMemory]]:
    """The same 600 memories in a SQLite file and a PostgreSQL database."""
    home = Path(tmp_path_factory.mktemp("ranking"))
    dsn = postgres_server.create()
    stores = [
        RobotMemory(location, embed_backend="none", settings=Settings(home=home))
        for location in (home / "reference.db", dsn)
    ]
    try:
        for i in range(600):
            # Term frequencies and lengths vary, so scores differ; a few rare memories pass the filter.
            words = " ".join(["grip force"] * (1 + i % 4))
            extra = "the gripper slipped on the glossy cup" if i % 7 == 0 else "arm reached the shelf"
            text = f"trial {i}: {words} {extra} at step {i % 13}"
            for mem in stores:
                mem.learn(text, context={"bucket": i % 97, "passed": i % 61 == 5})
        yield stores
    finally:
        for mem in stores:
            mem.close()
        postgres_server.drop(dsn)


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize(
    "context_filter",
    [{"passed": True}, {"bucket": {"$in": [3, 50]}}, {"bucket": {"$gt": 90}}, {"bucket": {"$lt": 60}}],
)
def test_a_selective_filter_ranks_alike_on_both_engines(
    both: list[RobotMemory], query: str, context_filter: dict[str, Any]
) -> None:
    scope = RecallScope(collection="default", min_confidence=0.0, filter=parse_filter(context_filter))
    words = bm25_words(query, "basic")
    found = [
        [
            (memory_id, f"{score:.12g}")
            for memory_id, score in mem.engine.read(
                lambda tx: tx.candidates(scope).ranked(ChannelQuery(words, depth=8)).text
            )
        ]
        for mem in both
    ]
    assert found[0], "the filter passes some of the memories holding a query word"
    # The same scores in the same order; memories of equal score may come in another order, and the
    # last score's group may be cut at other members of it.
    assert [score for _, score in found[1]] == [score for _, score in found[0]]
    last = found[0][-1][1]
    groups = [
        {score: {m for m, s in rows if s == score} for _, score in rows if score != last} for rows in found
    ]
    assert groups[1] == groups[0]


@pytest.mark.parametrize("query", [*QUERIES, "glossy shelf", "nothing here"])
@pytest.mark.parametrize("min_coverage", [0.0, 0.3, 0.7])
def test_the_server_tells_which_memories_match_as_the_ranking_would(
    both: list[RobotMemory], query: str, min_coverage: float
) -> None:
    """``text_matches`` without the process's postings asks the server about the given memories alone, and
    says of each what a ranking with no depth limit would (the SQLite store's answer too)."""
    scope = RecallScope(collection="default", min_confidence=0.0)
    words = bm25_words(query, "basic")
    asked = list(range(1, 601, 3))

    def answers(tx: Any) -> tuple[set[int], set[int]]:
        source = tx.candidates(scope)
        ranked = source.ranked(ChannelQuery(words, depth=10_000, min_coverage=min_coverage)).text
        return source.text_matches(words, min_coverage, asked), {m for m, _ in ranked} & set(asked)

    dsn = both[1].engine.store.dsn  # type: ignore[attr-defined]
    with RobotMemory(dsn, embed_backend="none", settings=Settings(recall_mirror=False)) as server_only:
        held = server_only.engine.store.postings  # type: ignore[attr-defined]
        assert held is None  # no copy of the postings: the server answers
        alone = server_only.engine.read(answers)
    reference, postgres = (mem.engine.read(answers) for mem in both)
    assert alone[0] == alone[1] == postgres[0] == postgres[1] == reference[0] == reference[1]
    assert reference[0] or query == "nothing here"
