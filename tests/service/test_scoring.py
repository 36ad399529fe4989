"""Recall scoring: score fusion, episode structure and named context values, on real stores."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from robotmem import RobotMemory, ValidationError
from robotmem.config import Settings
from robotmem.filters import parse_filter
from robotmem.service.recall import RecallPlan, Tuning, run_on
from robotmem.service.scoring import bm25_words
from robotmem.store.protocol import VectorQuery
from robotmem.store.sqlite.candidates import MirrorCandidates, SqlCandidates
from robotmem.store.sqlite.connection import open_database
from robotmem.store.sqlite.mirror import RecallMirror
from robotmem.store.sqlite.store import SqliteStore, SqliteTx

STEPS = [
    "Episode {e} set-up: Franka at the kitchen bench, grasping the {o}.",
    "Episode {e} first attempt: grip_force={f} N, approach_speed=0.0{e} m/s.",
    "The {o} slipped out of the gripper fingers during the lift in run {e}.",
    "Swapped to high-friction silicone pads and halved the lift acceleration ({e}).",
    "Episode {e} finished: success after 2 attempts, {s} steps.",
]
OBJECTS = ["ceramic mug", "glass jar", "cereal box"]


def _log(mem: RobotMemory) -> dict[tuple[int, int], int]:
    """Three sessions of five steps; returns (episode, step) → memory id."""
    ids: dict[tuple[int, int], int] = {}
    for e, thing in enumerate(OBJECTS, start=1):
        session = mem.start_session(collection="grasping")["session_id"]
        for step, template in enumerate(STEPS):
            context = {
                "robot": {"id": f"franka-0{e}"},
                "object": thing,
                "date": f"2026-03-1{e}",
                "kept": step != 3 or e != 2,
            }
            text = template.format(e=e, o=thing, f=6 + e, s=30 + e)
            learned = mem.learn(text, context=context, collection="grasping", session_id=session)
            assert learned["status"] == "created", text
            ids[(e, step)] = int(learned["memory_id"])
    return ids


@pytest.fixture
def logged(
    locate: Callable[[str], Any], settings: Settings
) -> Iterator[tuple[RobotMemory, dict[tuple[int, int], int]]]:
    with RobotMemory(locate("log.db"), settings=settings, embed_backend="hash") as mem:
        yield mem, _log(mem)


def _recall(mem: RobotMemory, query: str, **changes: Any) -> list[int]:
    mem.settings = mem.settings.replace(**changes)
    return [int(m["id"]) for m in mem.recall(query, n=5, collection="grasping")["memories"]]


def test_a_neighbour_of_the_described_step_joins_the_results(
    logged: tuple[RobotMemory, dict[tuple[int, int], int]],
) -> None:
    mem, ids = logged
    query = "the glass jar slipped out of the gripper fingers"
    fix = ids[(2, 3)]  # the step after the slip, which shares no word with the query
    plain = _recall(mem, query, vector_weight=0.0, neighbour_share=0.0)
    assert plain[0] == ids[(2, 2)] and fix not in plain
    spread = _recall(mem, query, vector_weight=0.0, neighbour_share=0.5)
    assert spread[0] == ids[(2, 2)] and fix in spread
    assert ids[(1, 3)] not in spread  # the fix after the other episode's slip gains less


def test_neighbours_and_episode_scores_pass_the_filters(
    logged: tuple[RobotMemory, dict[tuple[int, int], int]],
) -> None:
    mem, ids = logged
    mem.settings = mem.settings.replace(neighbour_share=1.0, episode_share=0.5)
    result = mem.recall("ceramic mug slipped", n=10, collection="grasping", context_filter={"kept": True})
    returned = {int(m["id"]) for m in result["memories"]}
    assert ids[(2, 3)] not in returned  # filtered out, however high its neighbour scored
    assert ids[(1, 3)] in returned  # the first episode's fix is a neighbour that passes


def test_a_named_context_value_lifts_the_memories_carrying_it(
    logged: tuple[RobotMemory, dict[tuple[int, int], int]],
) -> None:
    mem, ids = logged
    query = "finished success after 2 attempts on 2026-03-13"
    outcomes = [ids[(e, 4)] for e in (1, 2, 3)]
    plain = _recall(mem, query, vector_weight=0.0, context_boost=0.0)
    assert plain[0] in outcomes
    boosted = _recall(mem, query, vector_weight=0.0, context_boost=1.0)
    assert boosted[0] == ids[(3, 4)]
    assert ids[(3, 1)] in boosted[:3]  # same date, another step among the candidates: lifted too


def test_extended_stopwords_leave_out_question_words() -> None:
    assert bm25_words("What should be used for the mug now?", "basic") == ["should", "used", "mug", "now"]
    assert bm25_words("What should be used for the mug now?", "extended") == ["mug"]
    assert bm25_words("现在铝销钉应该用多大的插入力？", "extended") == [
        w
        for w in bm25_words("现在铝销钉应该用多大的插入力？", "basic")
        if w not in {"现在", "应该", "多大", "的"}
    ]


@pytest.mark.sqlite_only  # the recall mirror
@pytest.mark.parametrize("fusion", ["rrf", "zscore", "minmax"])
def test_mirror_and_sql_sources_score_alike_with_every_technique_on(
    logged: tuple[RobotMemory, dict[tuple[int, int], int]], fusion: str
) -> None:
    mem, _ = logged
    store = mem.engine.store
    assert isinstance(store, SqliteStore)
    model, _ = mem.engine.vector_model()
    assert model is not None
    tuning = Tuning(
        rrf_k=1, fusion=fusion, vector_weight=2.0, neighbour_share=0.5, episode_share=0.2, context_boost=0.5
    )
    conn: sqlite3.Connection = open_database(mem.path)
    mirror = RecallMirror()
    try:
        for query, raw in [
            ("what was changed after the cereal box slipped", None),
            ("franka-02 on 2026-03-12", {"kept": True}),
            ("grip_force=8 N", None),
        ]:
            plan = RecallPlan(
                query=query, n=8, min_confidence=0.0, collection="grasping", filter=parse_filter(raw)
            )
            vector = VectorQuery(mem.embedder.embed_one(query, is_query=True), *model)
            tx = SqliteTx(conn, store)
            with_sql = run_on(SqlCandidates(conn, plan.scope, store.vector_index), tx, plan, tuning, vector)
            with_mirror = run_on(
                MirrorCandidates(conn, plan.scope, store.vector_index, mirror), tx, plan, tuning, vector
            )
            assert with_sql.mode == with_mirror.mode == "hybrid"
            assert [h.memory.id for h in with_mirror.hits] == [h.memory.id for h in with_sql.hits]
            assert [h.score for h in with_mirror.hits] == pytest.approx(
                [h.score for h in with_sql.hits], rel=1e-6
            )
    finally:
        mirror.close()
        conn.close()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"fusion": "borda"}, r"setting 'fusion' is 'borda'; accepted: one of rrf, zscore, minmax"),
        ({"bm25_b": 1.5}, r"setting 'bm25_b' is 1.5; accepted: a finite number within 0..1"),
        (
            {"neighbour_share": -0.1},
            r"setting 'neighbour_share' is -0.1; accepted: a finite number within 0..10",
        ),
        ({"query_stopwords": "none"}, r"setting 'query_stopwords' is 'none'; accepted: basic or extended"),
    ],
)
def test_scoring_settings_out_of_range_are_named(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Settings().replace(**changes)


@pytest.mark.sqlite_only  # the recall mirror
@pytest.mark.parametrize(
    ("k1", "b", "coverage"), [(1.2, 0.75, 0.0), (0.6, 0.1, 0.0), (0.9, 0.0, 0.3), (1.2, 0.75, 0.5)]
)
def test_sql_and_mirror_score_bm25_alike_with_any_constants_and_coverage(
    logged: tuple[RobotMemory, dict[tuple[int, int], int]], k1: float, b: float, coverage: float
) -> None:
    mem, _ = logged
    mem.learn("湿滑表面需要更大的抓取力，陶瓷杯子打滑", context={"kept": True}, collection="grasping")
    store = mem.engine.store
    assert isinstance(store, SqliteStore)
    conn = open_database(mem.path)
    mirror = RecallMirror()
    try:
        for query in [
            "glass jar slipped during the lift",
            "grip_force=8 N approach_speed",
            "杯子打滑",
            "episode 2",
        ]:
            plan = RecallPlan(
                query=query,
                n=8,
                min_confidence=0.0,
                collection="grasping",
                filter=parse_filter({"kept": True}),
            )
            words = bm25_words(query, "basic")
            with_sql = SqlCandidates(conn, plan.scope, store.vector_index).text_scored(
                words, 50, coverage, k1, b
            )
            with_mirror = MirrorCandidates(conn, plan.scope, store.vector_index, mirror).text_scored(
                words, 50, coverage, k1, b
            )
            assert len(with_sql) > 0, query
            assert [m for m, _ in with_mirror] == [m for m, _ in with_sql]
            assert [s for _, s in with_mirror] == pytest.approx([s for _, s in with_sql], rel=1e-9)
    finally:
        mirror.close()
        conn.close()
