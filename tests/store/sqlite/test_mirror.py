"""The recall mirror gives what SQLite gives: FTS5's BM25 scores, the SQL filter's rows, every writer's changes."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.store.sqlite.conftest import fill, query_vector, vector_index
from tests.strategies import examples

from robotmem import RobotMemory
from robotmem.config import RecallSettings, Settings
from robotmem.query.bm25 import LexicalIndex
from robotmem.query.filters import parse_filter
from robotmem.query.spatial import parse_spatial_sort
from robotmem.service.recall.pipeline import RecallOutcome, run_on
from robotmem.service.recall.plan import RecallPlan
from robotmem.store.protocol import VectorQuery
from robotmem.store.shared.terms import Stemmer
from robotmem.store.sqlite.candidates import MirrorCandidates, SqlCandidates, predicate
from robotmem.store.sqlite.connection import open_database
from robotmem.store.sqlite.mirror import RecallMirror
from robotmem.store.sqlite.store import SqliteStore, SqliteTx
from robotmem.text.tokens import fts_query, query_tokens


def _run(
    store: SqliteStore,
    conn: sqlite3.Connection,
    plan: RecallPlan,
    tuning: RecallSettings,
    vector: VectorQuery | None,
    mirror: RecallMirror | None = None,
) -> RecallOutcome:
    """The recall pipeline on ``conn``'s snapshot, over the mirror's channels or (without one) SQL's."""
    sql = SqlCandidates(conn, plan.scope, store.vector_index, store.episode_index)
    source = sql if mirror is None else MirrorCandidates(sql, plan.scope, mirror)
    return run_on(source, SqliteTx(conn, store), plan, tuning, vector)


def _fts_scores(conn: sqlite3.Connection, query: str) -> dict[int, float]:
    match = fts_query(query)
    if match is None:
        return {}
    sql = "SELECT rowid, -bm25(memories_fts) FROM memories_fts WHERE memories_fts MATCH :m"
    return {int(r): float(s) for r, s in conn.execute(sql, {"m": match})}


def _mirror_scores(mirror: RecallMirror, query: str) -> dict[int, float]:
    scored = mirror.bm25(query_tokens(query))
    assert scored is not None
    scores, matched = scored
    return {int(m): float(scores[m]) for m in np.flatnonzero(matched)}


QUERIES = [
    "grip force for the mug",
    "why did the paper cup slip",
    "slipped slipping slips",  # three words, one porter stem: FTS5 counts it three times
    "wet glossy surface grasped",
    "打滑 杯子",
    "抓取力",
    "tries 3",
    "cafe naive x2 xii",
    "nothing like this exists",
]


def _assert_same_bm25(conn: sqlite3.Connection, mirror: RecallMirror) -> None:
    for query in QUERIES:
        expected = _fts_scores(conn, query)
        got = _mirror_scores(mirror, query)
        assert got.keys() == expected.keys(), query
        for memory_id, score in expected.items():
            assert got[memory_id] == pytest.approx(score, rel=1e-9, abs=1e-12), (query, memory_id)


def test_bm25_scores_equal_fts5_after_build_and_after_every_kind_of_change(filled: RobotMemory) -> None:
    conn = open_database(filled.path)
    mirror = RecallMirror()
    try:
        mirror.sync(conn)
        assert len(mirror.lexical) == conn.execute("SELECT count(*) FROM memories_fts").fetchone()[0]
        _assert_same_bm25(conn, mirror)
        # New rows, a changed text, a forgotten row: applied incrementally, from another connection.
        fill(filled, 30, seed=11)
        first = filled.recall("mug", n=1, collection="manipulation")["memories"][0]["id"]
        filled.update(first, "the mug handle was wet, grip_force=12N slipped")
        filled.forget(
            filled.recall("banana", n=1, collection="manipulation")["memories"][0]["id"], reason="wrong label"
        )
        mirror.sync(conn)
        _assert_same_bm25(conn, mirror)
        mirror.lexical.merge()
        _assert_same_bm25(conn, mirror)
    finally:
        mirror.close()
        conn.close()


def test_the_stemmer_gives_fts5s_terms_also_for_numbers_it_does_not_ask_about() -> None:
    stemmer = Stemmer()
    try:
        tokens = ["12.5", "0", "3_000", "2026.12.02", "slipped", "grasping", "机器人", "grip_force", "x"]
        shortcut = stemmer.terms(tokens)
        asked = Stemmer()
        asked._resolve_with_fts(tokens)
        assert shortcut == {t: asked._known[t] for t in tokens}
        assert shortcut["slipped"] == ("slip",) and shortcut["12.5"] == ("12.5",)
        asked.close()
    finally:
        stemmer.close()


def test_lexical_index_merge_keeps_scores() -> None:
    index = LexicalIndex()
    index.build([(1, ["grip", "mug"]), (2, ["grip", "grip", "cup"]), (5, ["box"])])
    index.add(7, ["grip", "box", "box"])
    index.remove(2)
    index.add(1, ["mug", "wet"])
    before = index.score(["grip", "box", "mug"])
    index.merge()
    after = index.score(["grip", "box", "mug"])
    assert np.array_equal(before[1], after[1])
    assert np.allclose(before[0], after[0])
    assert set(np.flatnonzero(after[1])) == {1, 5, 7}
    assert len(index) == 3


FILTER_PATHS = {
    "task.success": st.booleans(),
    "task.name": st.sampled_from(["grasp", "push", "place", "missing"]),
    "robot.id": st.sampled_from(["franka-01", "franka-02", "ur5-01"]),
    "params.grip_force": st.floats(0, 32, allow_nan=False).map(lambda x: round(x, 1)),
    "params.grip_force.value": st.integers(0, 32),
    "env.sim_or_real": st.sampled_from(["sim", "real"]),
    "labels": st.sampled_from(["fragile", "heavy", "wet"]),
    "confidence": st.floats(0.0, 1.0, allow_nan=False),
}


@st.composite
def leaf_filters(draw: st.DrawFn) -> dict[str, Any]:
    path = draw(st.sampled_from(sorted(FILTER_PATHS)))
    value = draw(FILTER_PATHS[path])
    if path == "labels":
        op = draw(st.sampled_from(["$contains", "$exists"]))
        return {path: {op: value if op == "$contains" else draw(st.booleans())}}
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        op = draw(st.sampled_from(["$lt", "$lte", "$gt", "$gte", "$ne", "$eq"]))
        return {path: {op: value}}
    op = draw(st.sampled_from(["$eq", "$ne", "$in", "$nin", "$exists"]))
    if op in ("$in", "$nin"):
        return {path: {op: [value]}}
    if op == "$exists":
        return {path: {op: draw(st.booleans())}}
    return {path: {op: value}}


# Any comparison on any kind of value (text, number, bool, array, object with or without "value",
# missing), so the mirror's value columns meet every SQLite comparison rule.
ANY_PATHS = [
    "task.name",
    "task.success",
    "labels",
    "params.grip_force",
    "spatial",
    "robot.id",
    "nothing.here",
]
operands = st.one_of(
    st.integers(-2, 32),
    st.floats(-1, 32, allow_nan=False),
    st.booleans(),
    st.sampled_from(["grasp", "push", "franka-01", "fragile", '["fragile","heavy"]', "", "zzz"]),
    st.none(),
)


@st.composite
def mixed_leaf_filters(draw: st.DrawFn) -> dict[str, Any]:
    path = draw(st.sampled_from(ANY_PATHS))
    op = draw(st.sampled_from(["$eq", "$ne", "$lt", "$lte", "$gt", "$gte", "$between", "$in", "$nin"]))
    if op in ("$in", "$nin"):
        return {path: {op: draw(st.lists(operands, min_size=1, max_size=3))}}
    if op == "$between":
        ends = st.one_of(st.integers(-2, 32), st.floats(-1, 32, allow_nan=False), st.sampled_from(["a", "z"]))
        return {path: {op: [draw(ends), draw(ends)]}}
    value = draw(operands)
    if op in ("$lt", "$lte", "$gt", "$gte") and (value is None or isinstance(value, bool)):
        value = 3
    return {path: {op: value}}


filters = st.recursive(
    st.one_of(leaf_filters(), mixed_leaf_filters()),
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3).map(lambda parts: {"$and": parts}),
        st.lists(inner, min_size=1, max_size=3).map(lambda parts: {"$or": parts}),
        inner.map(lambda part: {"$not": part}),
    ),
    max_leaves=5,
)


@settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(raw=filters, collection=st.sampled_from(["manipulation", "navigation", "nowhere"]))
def test_filter_mask_passes_exactly_the_rows_the_sql_predicate_passes(
    filled: RobotMemory, raw: dict[str, Any], collection: str
) -> None:
    plan = RecallPlan(query="", n=10, min_confidence=0.0, collection=collection, filter=parse_filter(raw))
    where, params = predicate(plan.scope)
    conn = open_database(filled.path)
    mirror = RecallMirror()
    try:
        mirror.sync(conn)
        mask = mirror.allowed(conn, collection=collection, min_confidence=0.0, filter=plan.filter)
        expected = {int(r[0]) for r in conn.execute(f"SELECT m.id FROM memories m WHERE {where}", params)}
        assert set(np.flatnonzero(mask).tolist()) == expected, raw
        # The second call answers from the cached condition masks, the same way.
        again = mirror.allowed(conn, collection=collection, min_confidence=0.0, filter=plan.filter)
        assert np.array_equal(again, mask)
    finally:
        mirror.close()
        conn.close()


SPATIAL_CASES = [
    ("", {"field": "spatial.object_position", "target": [1.0, 0.5, 0.4]}, None),
    ("", {"field": "spatial.object_position", "target": [1.0, 0.5, 0.4], "max_distance": 0.3}, None),
    ("", {"field": "spatial.object_position", "target": [0.2, 0.2]}, None),  # no 2-d points: id order
    ("", {"field": "spatial.home", "target": [0.0, 0.0, 0.0]}, {"task.success": True}),  # shared points
    ("grip force mug", {"field": "spatial.object_position", "target": [0.5, 0.5, 0.4]}, None),
    ("", {"field": "arm", "target": [1, 0.5, 0.5, 1, 0, 0, 2]}, None),
    ("", {"field": "arm", "target": [0, 0]}, None),
    ("", {"field": "arm", "target": [0, 0, 0, 0, 0, 0, 0, 0, 0]}, None),  # longer than any point
    (
        "slipped",
        {"field": "context.spatial.object_position", "target": [1.5, 0.1, 0.4]},
        {"robot.id": "ur5-01"},
    ),
]


@pytest.mark.parametrize(("query", "raw_spatial", "raw_filter"), SPATIAL_CASES)
def test_spatial_sort_from_the_mirror_matches_the_sql_path(
    filled: RobotMemory, query: str, raw_spatial: dict[str, Any], raw_filter: dict[str, Any] | None
) -> None:
    with sqlite3.connect(filled.path) as raw:  # a few memories share one position
        raw.execute(
            "UPDATE memories SET context = json_set(context, '$.spatial.home', json('[0.0, 0.0, 0.5]')) "
            "WHERE id % 7 = 0"
        )
        raw.execute(  # joint vectors of two lengths at one path: 2-d and 7-d
            "UPDATE memories SET context = json_set(context, '$.arm', "
            "CASE WHEN id % 2 = 0 THEN json('[0.1, 0.2]') ELSE json_array(id % 3, 0.5, 0.5, 1, 0, 0, id % 4) END) "
            "WHERE id % 5 = 0"
        )
    conn = open_database(filled.path)
    mirror = RecallMirror()
    store, _ = vector_index(filled, conn)
    try:
        plan = RecallPlan(
            query=query,
            n=12,
            min_confidence=0.0,
            collection="manipulation",
            filter=parse_filter(raw_filter),
            spatial=parse_spatial_sort(raw_spatial),
        )
        vector = query_vector(filled, query) if query else None
        with_sql = _run(store, conn, plan, RecallSettings(), vector)
        with_mirror = _run(store, conn, plan, RecallSettings(), vector, mirror)
        assert [h.spatial_distance for h in with_mirror.hits] == [h.spatial_distance for h in with_sql.hits]
        assert len(with_mirror.hits) > 0
        if not query:  # no channel scores: the order is fully determined
            assert [h.memory.id for h in with_mirror.hits] == [h.memory.id for h in with_sql.hits]
            assert [h.score for h in with_mirror.hits] == [h.score for h in with_sql.hits]
    finally:
        mirror.close()
        conn.close()


def test_another_writers_changes_reach_the_next_recall(tmp_path: Path, settings: Settings) -> None:
    db = tmp_path / "shared.db"
    reader = RobotMemory(db, settings=settings, embed_backend="none")
    writer = RobotMemory(db, settings=settings, embed_backend="none")
    text = "grip_force=9N held the glass bottle"
    try:
        kept = writer.learn(text, context={"task": {"success": True}})["memory_id"]
        ok = {"task.success": True}
        assert [m["id"] for m in reader.recall("glass bottle", context_filter=ok)["memories"]] == [kept]
        # A context change flips the cached condition for that memory only.
        writer.update(kept, text, context={"task": {"success": False}})
        assert reader.recall("glass bottle", context_filter=ok)["memories"] == []
        writer.update(kept, text + " twice", context={"task": {"success": True}})
        assert reader.recall("twice", context_filter=ok)["total"] == 1
        # Tags live in their own table; a tag written by any connection reaches the cached condition.
        other = writer.learn("grip_force=2N crushed the paper cup")["memory_id"]
        tagged = {"tags": {"$contains": "fragile-object"}}
        assert reader.recall("paper cup", context_filter=tagged)["memories"] == []
        with sqlite3.connect(db) as raw:
            raw.execute(
                "INSERT INTO memory_tags (memory_id, tag, source) VALUES (?, 'fragile-object', 'user')",
                (other,),
            )
        assert [m["id"] for m in reader.recall("paper cup", context_filter=tagged)["memories"]] == [other]
        # Coordinates read for a spatial sort follow a moved object.
        near = {"field": "spatial.object_position", "target": [0.0, 0.0, 0.0]}
        writer.update(
            other, "grip_force=2N crushed the paper cup", context={"spatial": {"object_position": [5, 5, 5]}}
        )
        first = reader.recall("", spatial_sort=near)["memories"][0]
        assert first["id"] == other and first["spatial_distance"] == pytest.approx(75**0.5)
        writer.update(
            other, "grip_force=2N crushed the paper cup", context={"spatial": {"object_position": [0, 3, 4]}}
        )
        assert reader.recall("", spatial_sort=near)["memories"][0]["spatial_distance"] == pytest.approx(5.0)
        writer.forget(kept, reason="sensor fault")
        assert reader.recall("glass bottle")["memories"] == []
        # A rebuilt FTS index (doctor --repair) makes every mirror reload, and recall still works.
        assert writer.repair()["repaired"]["fts_rows_indexed"] == 1
        assert [m["id"] for m in reader.recall("paper cup")["memories"]] == [other]
    finally:
        reader.close()
        writer.close()


def test_min_coverage_keeps_only_matches_carrying_enough_of_the_query_idf() -> None:
    index = LexicalIndex()
    # "grip" is in every document (IDF ~0); "mug" in one; "hen" in none.
    index.build([(1, ["grip", "mug"]), (2, ["grip", "cup"]), (3, ["grip", "box"]), (4, ["grip"])])
    everything = index.score(["grip", "mug", "hen"])
    assert set(np.flatnonzero(everything[1])) == {1, 2, 3, 4}
    covered = index.score(["grip", "mug", "hen"], min_coverage=0.3)
    # mug carries ln(3.5/1.5) = 0.85 of 0.85 + ln(4.5/0.5) = 3.05 in all: 28 %, under 30 %.
    assert set(np.flatnonzero(covered[1])) == set()
    assert set(np.flatnonzero(index.score(["grip", "mug", "hen"], min_coverage=0.25)[1])) == {1}
    assert np.array_equal(covered[0], everything[0])  # scores themselves do not change


def test_min_coverage_applies_to_hybrid_recall_only(tmp_path: Path, settings: Settings) -> None:
    strict = settings.replace(bm25_min_coverage=1.0)
    with RobotMemory(tmp_path / "c.db", settings=strict, embed_backend="none") as mem:
        kept = mem.learn("grip_force=3N held the sponge")["memory_id"]
        # BM25-only recall keeps a match on one of three words (the relevance gate off: this is about
        # the channel).
        found = mem.recall("sponge wobbly zebra", min_relevance=0)["memories"]
        assert [m["id"] for m in found] == [kept]
    with RobotMemory(tmp_path / "c.db", settings=strict, embed_backend="hash") as mem:
        out = mem.recall("sponge wobbly zebra")
        assert out["mode"] == "hybrid"
        assert all("text" not in m["matched_by"] for m in out["memories"])
        assert any("text" in m["matched_by"] for m in mem.recall("sponge grip_force")["memories"])


def test_a_snapshot_older_than_the_mirror_skips_memories_it_cannot_see(
    tmp_path: Path, settings: Settings
) -> None:
    db = tmp_path / "ahead.db"
    with RobotMemory(db, settings=settings, embed_backend="none") as writer:
        old = writer.learn("grip_force=4N lifted the sponge")["memory_id"]
        mirror = RecallMirror()
        before, after = open_database(db), open_database(db)
        try:
            before.execute("BEGIN")
            before.execute("SELECT count(*) FROM memories").fetchone()  # pins the snapshot
            new = writer.learn("grip_force=6N lifted the wet sponge")["memory_id"]
            after.execute("BEGIN")
            mirror.sync(after)  # the mirror now knows the new memory
            plan = RecallPlan(query="sponge", n=5, min_confidence=0.0, collection="default")
            store = writer.engine.store
            assert isinstance(store, SqliteStore)
            hits = _run(store, before, plan, RecallSettings(), None, mirror).hits
            assert [h.memory.id for h in hits] == [old]
            mirror.sync(before)  # an older snapshot never moves the mirror back
            assert {h.memory.id for h in _run(store, after, plan, RecallSettings(), None, mirror).hits} == {
                old,
                new,
            }
        finally:
            before.close()
            after.close()
            mirror.close()


def test_recall_mirror_false_asks_sqlite_and_ranks_the_same(filled: RobotMemory, settings: Settings) -> None:
    plain = settings.replace(bm25_min_coverage=0.0)
    with (
        RobotMemory(filled.path, settings=plain, embed_backend="none") as mirrored,
        RobotMemory(filled.path, settings=plain.replace(recall_mirror=False), embed_backend="none") as direct,
    ):
        for query, raw in [
            ("grip force mug", None),
            ("slipped wet", {"task.success": False}),
            ("打滑", None),
        ]:
            a = mirrored.recall(query, n=10, collection="manipulation", context_filter=raw)
            b = direct.recall(query, n=10, collection="manipulation", context_filter=raw)
            assert a["mode"] == b["mode"] == "bm25_only"
            assert [m["score"] for m in a["memories"]] == pytest.approx([m["score"] for m in b["memories"]])
            assert a["total"] == b["total"] > 0
        assert isinstance(direct.engine.store, SqliteStore)
        assert direct.engine.store.mirror is None  # none kept
