"""Recall scoring: score fusion, episode structure and named context values, on real stores."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from robotmem import RobotMemory, ValidationError
from robotmem.config import RecallSettings, Settings
from robotmem.query.filters import parse_filter
from robotmem.service.recall.pipeline import run_on
from robotmem.service.recall.plan import RecallPlan
from robotmem.service.recall.scoring import bm25_words, step_direction, value_weights
from robotmem.store.protocol import ChannelQuery, NamedValues, VectorQuery
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
    # Ranking only: the relevance gate is off.
    return [int(m["id"]) for m in mem.recall(query, n=5, collection="grasping", min_relevance=0)["memories"]]


def test_a_neighbour_of_the_described_step_joins_the_results(
    logged: tuple[RobotMemory, dict[tuple[int, int], int]],
) -> None:
    mem, ids = logged
    query = "the glass jar slipped out of the gripper fingers"
    fix = ids[(2, 3)]  # the step after the slip, which shares no word with the query
    # Named values off: "glass jar" is the episode's object, which would bring the whole episode in.
    plain = _recall(mem, query, vector_weight=0.0, neighbour_share=0.0, context_boost=0.0)
    assert plain[0] == ids[(2, 2)] and fix not in plain
    spread = _recall(mem, query, vector_weight=0.0, neighbour_share=0.5, context_boost=0.0)
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


def test_a_named_context_value_breaks_a_near_tie(
    logged: tuple[RobotMemory, dict[tuple[int, int], int]],
) -> None:
    mem, ids = logged
    query = "finished with success, the run on 2026-03-13"  # three outcomes match its words alike
    outcomes = [ids[(e, 4)] for e in (1, 2, 3)]
    # date_boost off: the date the query names would raise the whole episode of that day.
    plain = _recall(mem, query, vector_weight=0.0, fusion="minmax", context_boost=0.0, date_boost=0.0)
    assert set(plain[:3]) == set(outcomes) and plain[0] != ids[(3, 4)]
    boosted = _recall(mem, query, vector_weight=0.0, fusion="minmax", context_boost=0.5, date_boost=0.0)
    assert boosted[0] == ids[(3, 4)]  # the outcome of the run on that date
    assert set(boosted[1:3]) == set(outcomes) - {ids[(3, 4)]}  # the date does not outrank the words


def test_a_memory_named_only_by_its_context_is_found(
    logged: tuple[RobotMemory, dict[tuple[int, int], int]],
) -> None:
    mem, ids = logged
    query = "whatever happened 2026-03-12"  # no word of any memory
    assert _recall(mem, query, vector_weight=0.0, context_boost=0.0) == []
    found = _recall(mem, query, vector_weight=0.0, context_boost=1.0)
    assert set(found) == {ids[(2, step)] for step in range(5)}


def test_a_named_value_does_not_override_relevance(tmp_path: Path, settings: Settings) -> None:
    with RobotMemory(
        tmp_path / "named.db", settings=settings.replace(real_world_boost=1.0), embed_backend="none"
    ) as mem:
        grasp = mem.learn(
            "grasp of the cup failed because the gripper slipped on the wet handle",
            context={"env": {"sim_or_real": "sim"}},
        )["memory_id"]
        for i in range(5):  # "real" (a kind of run, not a name) and a robot most of them carry
            mem.learn(
                f"battery charge routine number {i} completed without warnings",
                context={"env": {"sim_or_real": "real"}, "robot": {"id": "go1-01" if i < 4 else "go1-02"}},
            )
        query = "why did the grasp fail when the gripper slipped on the real go1-01 robot, or go1-02"
        for boost in (0.0, 0.5, 1.0):
            mem.settings = mem.settings.replace(context_boost=boost)
            found = mem.recall(query, n=3)["memories"]
            assert found[0]["id"] == grasp, boost
        # go1-02 (one memory of six) joins below the grasp; go1-01 (four of six) names none in particular.
        assert [m["content"][-30:] for m in found[1:2]] == ["number 4 completed without warnings"[-30:]]


def test_rarer_values_weigh_more() -> None:
    found = NamedValues(memories=1000, carried_by={"2026-03-02": 7, "go1-01": 300, "solo": 1})
    weights = value_weights(found)
    assert weights["solo"] == pytest.approx(1.0)
    assert 0.6 < weights["2026-03-02"] < 0.8
    assert 0.1 < weights["go1-01"] < 0.25


@pytest.mark.parametrize(
    ("query", "direction"),
    [
        ("What was changed right after the mug slipped?", 1),
        ("what came next after the slip", 1),
        ("滑落之后紧接着做了什么调整？", 1),
        ("What was done right before the mug slipped?", -1),
        ("抓取失败的前一步是什么", -1),
        ("Minimum charge level before sending the robot out", 0),
        ("why did touch sensing fire before the fingers reached the part", 0),
        ("the gripper slipped after lifting", 0),
    ],
)
def test_a_query_asking_for_the_next_or_previous_step_is_recognised(query: str, direction: int) -> None:
    assert step_direction(query) == direction


def test_the_step_after_the_described_one_comes_first(
    logged: tuple[RobotMemory, dict[tuple[int, int], int]],
) -> None:
    mem, ids = logged
    after = "what was changed right after the glass jar slipped out of the gripper fingers"
    assert _recall(mem, after, vector_weight=0.0, direction_share=0.0)[0] == ids[(2, 2)]
    assert _recall(mem, after, vector_weight=0.0, direction_share=0.8)[0] == ids[(2, 3)]
    before = "what was done right before the glass jar slipped out of the gripper fingers"
    assert _recall(mem, before, vector_weight=0.0, direction_share=0.8)[0] == ids[(2, 1)]
    plain = "the glass jar slipped out of the gripper fingers"  # no question about a neighbour
    assert _recall(mem, plain, vector_weight=0.0, direction_share=0.8)[0] == ids[(2, 2)]


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
    tmp_path: Path, settings: Settings, fusion: str
) -> None:
    mem = RobotMemory(
        tmp_path / "both.db", settings=settings.replace(episode_vector_weight=1.0), embed_backend="hash"
    )
    _log(mem)
    store = mem.engine.store
    assert isinstance(store, SqliteStore)
    model, _ = mem.engine.vector_model()
    assert model is not None
    tuning = RecallSettings(
        fusion=fusion,
        vector_weight=2.0,
        neighbour_share=0.5,
        episode_share=0.2,
        context_boost=0.5,
        direction_share=0.8,
        episode_vector_weight=0.5,
    )
    conn: sqlite3.Connection = open_database(mem.path)
    mirror = RecallMirror()
    try:
        for query, raw in [
            ("what was changed right after the cereal box slipped", None),
            ("franka-02 on 2026-03-12", {"kept": True}),
            ("what was done right before franka-03 finished", None),
            ("grip_force=8 N", None),
        ]:
            plan = RecallPlan(
                query=query, n=8, min_confidence=0.0, collection="grasping", filter=parse_filter(raw)
            )
            vector = VectorQuery(mem.embedder.embed_one(query, is_query=True), *model)
            tx = SqliteTx(conn, store)
            sql = SqlCandidates(conn, plan.scope, store.vector_index, store.episode_index)
            with_sql = run_on(sql, tx, plan, tuning, vector)
            from_mirror = MirrorCandidates(sql, plan.scope, mirror)
            with_mirror = run_on(from_mirror, tx, plan, tuning, vector)
            episodes = ChannelQuery(vector=vector, episode_vectors=True)
            assert from_mirror.ranked(episodes) == sql.ranked(episodes)
            # Steps 1-4 of the three episodes have one; the filter leaves out step 3 of the second.
            assert len(sql.ranked(episodes).episode_vectors) == (11 if raw else 12)
            assert with_sql.mode == with_mirror.mode == "hybrid"
            assert [h.memory.id for h in with_mirror.hits] == [h.memory.id for h in with_sql.hits]
            assert [h.score for h in with_mirror.hits] == pytest.approx(
                [h.score for h in with_sql.hits], rel=1e-6
            )
    finally:
        mirror.close()
        conn.close()
        mem.close()


def test_episode_vectors_are_learned_in_sessions_and_searched(tmp_path: Path, settings: Settings) -> None:
    path = tmp_path / "episode.db"
    with RobotMemory(path, settings=settings, embed_backend="hash") as mem:
        mem.settings = mem.settings.replace(episode_vector_weight=2.0)
        session = mem.start_session(collection="line")["session_id"]
        mem.learn("the conveyor belt jammed at the packing station", session_id=session, collection="line")
        fix = int(
            mem.learn(
                "swapped the worn roller and lowered the belt tension", session_id=session, collection="line"
            )["memory_id"]
        )
        mem.end_session(session)
        mem.learn("calibrated the wrist camera", collection="line")  # no session: no episode vector
        for i in range(8):
            mem.learn(f"inspected pallet {i} at the loading dock for damage", collection="line")
        query = "what happened when the conveyor belt jammed at the packing station"

        def rank(weight: float) -> int:
            mem.settings = mem.settings.replace(episode_vector_weight=weight, neighbour_share=0.0)
            found = [int(m["id"]) for m in mem.recall(query, n=10, collection="line")["memories"]]
            return found.index(fix)

        assert rank(2.0) < rank(0.0)  # the fix is found by the words of the step before it
        mem.forget(fix, reason="wrong roller")
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT memory_id, embedding IS NOT NULL FROM memory_episode_vectors").fetchall()
        assert rows == [(fix, 0)]  # only the second step of the session had one; forget tombstoned it
    finally:
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
            asked = ChannelQuery(words, depth=50, min_coverage=coverage, k1=k1, b=b)
            sql = SqlCandidates(conn, plan.scope, store.vector_index, store.episode_index)
            with_sql = sql.ranked(asked).text
            with_mirror = MirrorCandidates(sql, plan.scope, mirror).ranked(asked).text
            assert len(with_sql) > 0, query
            assert [m for m, _ in with_mirror] == [m for m, _ in with_sql]
            assert [s for _, s in with_mirror] == pytest.approx([s for _, s in with_sql], rel=1e-9)
    finally:
        mirror.close()
        conn.close()
