"""The two candidate sources of recall on SQLite answer alike: ``SqlCandidates`` (the SQL of each channel)
and ``MirrorCandidates`` (the recall mirror's masks and postings), scope by scope and query by query."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from tests.conftest import rewrite_context
from tests.store.sqlite.conftest import query_vector, vector_index

from robotmem import RobotMemory
from robotmem.query.filters import parse_filter
from robotmem.query.regions import parse_region
from robotmem.query.spatial import parse_spatial_sort
from robotmem.store.protocol import ChannelQuery, RecallScope
from robotmem.store.sqlite import search
from robotmem.store.sqlite.candidates import MirrorCandidates, SqlCandidates, predicate
from robotmem.store.sqlite.connection import open_database
from robotmem.store.sqlite.mirror import RecallMirror
from robotmem.store.sqlite.store import SqliteStore
from robotmem.text.tokens import fts_query, query_tokens

QUERIES = ["grip force for the mug", "slipped on a wet surface", "打滑", "tennis ball grasp", "tries 3"]
FILTERS: list[dict[str, Any] | None] = [
    None,
    {"task.success": False},
    {"robot.id": {"$in": ["franka-01", "ur5-01"]}},
    {"$or": [{"labels": {"$contains": "soft"}}, {"params.grip_force": {"$lt": 8}}]},
]


@pytest.fixture
def episodes(filled: RobotMemory) -> Iterator[tuple[RobotMemory, str]]:
    """``filled`` with two episodes of grasps in ``manipulation``; yields it and the first episode's id."""
    first = filled.start_session(collection="manipulation")["session_id"]
    for i in range(5):
        filled.learn(f"grip_force={4 + i}N grasped the mug on try {i}", session_id=first)
    filled.end_session(first, outcome_score=0.8)
    second = filled.start_session(collection="manipulation")["session_id"]
    for i in range(3):
        filled.learn(f"the wet mug slipped at grip_force={20 + i}N", session_id=second)
    filled.end_session(second, outcome_score=0.1)
    yield filled, first


@contextlib.contextmanager
def _opened(memory: RobotMemory) -> Iterator[tuple[sqlite3.Connection, RecallMirror, SqliteStore]]:
    """A connection to ``memory``'s file, a fresh recall mirror and the store with its vector index synced."""
    conn = open_database(memory.path)
    mirror = RecallMirror()
    store, _ = vector_index(memory, conn)
    try:
        yield conn, mirror, store
    finally:
        mirror.close()
        conn.close()


def _scopes(session: str) -> list[RecallScope]:
    scopes = [RecallScope("manipulation", 0.0, filter=parse_filter(raw)) for raw in FILTERS]
    return [
        *scopes,
        RecallScope("navigation", 0.0, filter=parse_filter(FILTERS[2])),
        RecallScope("manipulation", 0.6),
        RecallScope("manipulation", 0.0, session_id=session),
        RecallScope("manipulation", 0.0, exclude_session=session),
        RecallScope("nowhere", 0.0),
    ]


def _same_scores(left: list[tuple[int, float]], right: list[tuple[int, float]], **tolerance: float) -> None:
    """The same ids with the same scores (the order among equal scores may differ)."""
    assert sorted(m for m, _ in left) == sorted(m for m, _ in right)
    assert dict(left) == pytest.approx(dict(right), **tolerance)


def test_both_sources_give_the_same_candidates_for_every_scope_and_query(
    episodes: tuple[RobotMemory, str],
) -> None:
    memory, session = episodes
    spatial = parse_spatial_sort({"field": "spatial.object_position", "target": [1.0, 0.5, 0.4]})
    matched = 0
    with _opened(memory) as (conn, mirror, store):
        for scope in _scopes(session):
            sql = SqlCandidates(conn, scope, store.vector_index, store.episode_index)
            mirrored = MirrorCandidates(sql, scope, mirror)
            everything = sql.listed(None, order="oldest")
            assert mirrored.listed(None, order="oldest") == everything
            assert mirrored.listed(7, order="newest") == everything[::-1][:7]
            for limit in (None, 1, 7):
                assert mirrored.listed(limit, order="recent") == sql.listed(limit, order="recent")
            for query in QUERIES:
                words = query_tokens(query)
                text = sql.ranked(ChannelQuery(words, depth=1000)).text
                _same_scores(mirrored.ranked(ChannelQuery(words, depth=1000)).text, text, rel=1e-9)
                tuned = ChannelQuery(words, depth=1000, min_coverage=0.3, k1=0.6, b=0.0)
                _same_scores(mirrored.ranked(tuned).text, sql.ranked(tuned).text, rel=1e-9)
                vector = ChannelQuery(vector=query_vector(memory, query), depth=1000)
                _same_scores(mirrored.ranked(vector).vectors, sql.ranked(vector).vectors, abs=1e-6)
                matched += len(text)
            assert mirrored.nearest(spatial, 10) == pytest.approx(sql.nearest(spatial, 10))
            skipped = set(everything[:3])
            assert mirrored.listed(6, order="id", exclude=skipped) == sql.listed(
                6, order="id", exclude=skipped
            )
            for some in (everything, everything[:1], everything[::7], everything[-3:], []):
                assert mirrored.episodes(some) == sql.episodes(some)
            named = {"franka-02", "mug", "kitchen", "nothing-named"}
            assert mirrored.named_values(named, 1.0) == sql.named_values(named, 1.0)
            robot = memory.engine.robot_id
            assert mirrored.marks(everything, robot) == sql.marks(everything, robot)
            assert sql.marks(everything, robot).own == set(everything)
            assert sql.marks(everything, None).own == set()
        assert matched > 0


def test_the_sql_source_ranks_text_as_fts5_does(filled: RobotMemory) -> None:
    conn = open_database(filled.path)
    store, _ = vector_index(filled, conn)
    try:
        for raw in FILTERS:
            scope = RecallScope("manipulation", 0.0, filter=parse_filter(raw))
            where, params = predicate(scope)
            for query in QUERIES:
                fts5 = [m for m, _ in search.search_fts(conn, fts_query(query) or "", where, params, 50)]
                source = SqlCandidates(conn, scope, store.vector_index, store.episode_index)
                assert [m for m, _ in source.ranked(ChannelQuery(query_tokens(query), depth=50)).text] == fts5
    finally:
        conn.close()


def test_a_scope_admits_exactly_the_rows_its_predicate_admits(episodes: tuple[RobotMemory, str]) -> None:
    memory, session = episodes
    with _opened(memory) as (conn, mirror, store):
        for scope in _scopes(session):
            where, params = predicate(scope)
            rows = sorted(
                int(r[0]) for r in conn.execute(f"SELECT m.id FROM memories m WHERE {where}", params)
            )
            sql = SqlCandidates(conn, scope, store.vector_index, store.episode_index)
            mirrored = MirrorCandidates(sql, scope, mirror)
            assert sorted(sql.listed(None, order="oldest")) == rows
            assert mirrored.listed(len(rows) + 1, order="id") == rows


REGIONS = [
    {"center": [1.0, 0.5, 0.5], "radius": 0.6},
    {"center": [1.0, 0.5], "radius": 0.6},
    {"min": [0.0, 0.0, 0.0], "max": [2.0, 1.0, 1.0], "frame": "odom"},
    {"min": [0.5, 0.0], "max": [1.5, 1.0]},
]


def _placed(memory: RobotMemory, count: int) -> list[int]:
    """``count`` memories with positions: 3-D and 2-D, in the default frame, ``odom`` or a non-text frame,
    and a few that are not positions."""
    ids = []
    for i in range(count):
        point = [0.1 * (i % 20), 0.05 * (i % 17), 0.1 * (i % 7)][: 2 + (i % 3 != 0)]
        spatial: dict[str, Any] = {"position": point if i % 11 else ["a", "b"]}
        if i % 19 == 3:  # a point a distance measures, not a position a region holds
            spatial["position"] = {"value": point, "unit": "m"}
        elif i % 23 == 4:
            spatial["position"] = [True, 0.5]
        if i % 4 == 1:
            spatial["frame"] = "odom"
        learned = memory.learn(
            f"placed the mug at spot {i}",
            context={"spatial": spatial},
            collection="placed",
            observed_at=1_780_000_000 + i // 4,  # four memories at each moment: ties by id
        )
        ids.append(learned["memory_id"])
        if i % 4 != 1 and i % 13 == 5:  # a frame that is no text, as another program could write it
            rewrite_context(memory, learned["memory_id"], {"spatial": {**spatial, "frame": 7}})
    return ids


def test_both_sources_give_the_same_memories_in_a_region(filled: RobotMemory) -> None:
    placed = _placed(filled, 90)
    with _opened(filled) as (conn, mirror, store):
        for raw in REGIONS:
            for narrow in (None, {"created_at": {"$gte": "2000-01-01"}}):
                region = parse_region({"field": "spatial.position", **raw})
                scope = RecallScope("placed", 0.0, filter=parse_filter(narrow), region=region)
                sql = SqlCandidates(conn, scope, store.vector_index, store.episode_index)
                mirrored = MirrorCandidates(sql, scope, mirror)
                inside = sql.listed(None, order="id")
                assert 0 < len(inside) < len(placed)
                assert mirrored.listed(None, order="id") == inside
                for limit in (None, 1, 3, 5):
                    skipped = set(inside[:2])
                    assert mirrored.listed(limit, order="recent", exclude=skipped) == sql.listed(
                        limit, order="recent", exclude=skipped
                    )
                vector = ChannelQuery(vector=query_vector(filled, "the mug"), depth=1000)
                _same_scores(mirrored.ranked(vector).vectors, sql.ranked(vector).vectors, abs=1e-6)
        # Kept in step: a point moved out of 3-D (its z gone) and another moved in.
        scope = RecallScope("placed", 0.0, region=parse_region({"field": "spatial.position", **REGIONS[0]}))
        before = MirrorCandidates(
            SqlCandidates(conn, scope, store.vector_index, store.episode_index), scope, mirror
        ).listed(None, order="id")
        moved = before[0]
        filled.update(moved, "placed the mug flat", context={"spatial": {"position": [1.0, 0.5]}})
        filled.update(placed[1], "placed the mug high", context={"spatial": {"position": [1.0, 0.5, 0.5]}})
        conn.rollback()
        sql = SqlCandidates(conn, scope, store.vector_index, store.episode_index)
        after = MirrorCandidates(sql, scope, mirror).listed(None, order="id")
        assert after == sql.listed(None, order="id")
        assert moved not in after and placed[1] in after


def test_each_memorys_share_of_the_query_agrees_with_the_matches_at_every_coverage(
    episodes: tuple[RobotMemory, str],
) -> None:
    memory, session = episodes
    with _opened(memory) as (conn, mirror, store):
        checked = 0
        for scope in _scopes(session)[:4]:
            sql = SqlCandidates(conn, scope, store.vector_index, store.episode_index)
            mirrored = MirrorCandidates(sql, scope, mirror)
            everything = sql.listed(None, order="id")
            for query in QUERIES:
                words = query_tokens(query)
                shares = mirrored.text_coverage(words, everything)
                assert shares is not None and set(shares) == set(everything)
                assert sql.text_coverage(words, everything) is None  # FTS5 answers by matches
                for coverage in (0.0, 0.2, 0.5, 0.8, 1.0):
                    reached = {m for m, share in shares.items() if share > 0 and share >= coverage - 1e-12}
                    assert reached == sql.text_matches(words, coverage, everything), (query, coverage)
                    checked += len(reached)
        assert checked > 0
