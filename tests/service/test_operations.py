"""RobotMemory end to end on real stores (SQLite files, PostgreSQL databases): the behaviours the core promises."""

from __future__ import annotations

import os

import numpy as np
import pytest
from tests.conftest import FakeClock, location_of, stored_vector, table_counts

from robotmem import ConflictError, NotFoundError, RobotMemory, ValidationError


def test_filter_returns_matches_that_rank_below_the_candidate_pool(memory: RobotMemory) -> None:
    for i in range(30):
        memory.learn(
            f"grip force parameters sweep {i}: grip force parameters too low, object slipped",
            context={"task": {"success": False}},
        )
    wanted = {
        memory.learn(f"episode {i} closed the gripper slowly", context={"task": {"success": True}})[
            "memory_id"
        ]
        for i in range(5)
    }
    # Ranking only: the wanted memories share no word with the query, so the relevance gate is off.
    result = memory.recall(
        "grip force parameters", n=5, context_filter={"task.success": True}, min_relevance=0
    )
    assert {m["id"] for m in result["memories"]} == wanted
    assert result["mode"] == "hybrid"


def test_filter_never_loses_matches_to_the_pool_in_bm25_mode(bm25_memory: RobotMemory) -> None:
    for i in range(80):
        bm25_memory.learn(
            f"push block attempt {i} with push speed {i} cm/s failed", context={"task": {"success": False}}
        )
    good = [
        bm25_memory.learn(f"push block attempt {100 + i} succeeded", context={"task": {"success": True}})[
            "memory_id"
        ]
        for i in range(3)
    ]
    result = bm25_memory.recall(
        "push block attempt speed failed", n=10, context_filter={"task.success": True}
    )
    assert sorted(m["id"] for m in result["memories"]) == good
    assert result["mode"] == "bm25_only"


def test_chinese_two_character_query_finds_insight_through_bm25(bm25_memory: RobotMemory) -> None:
    created = bm25_memory.learn("机器人抓取杯子时夹爪力度设为12.5牛最好")
    bm25_memory.learn("导航时激光雷达在玻璃门前容易误判")
    result = bm25_memory.recall("杯子")
    assert result["mode"] == "bm25_only"
    assert [m["id"] for m in result["memories"]] == [created["memory_id"]]
    assert result["memories"][0]["matched_by"] == ["text"]


def test_scores_are_normalized_by_the_best(memory: RobotMemory) -> None:
    for text in ("grasp the red cup gently", "grasp the cup", "navigate the corridor slowly"):
        memory.learn(text)
    scores = [m["score"] for m in memory.recall("grasp cup", n=3)["memories"]]
    assert scores[0] == 1.0
    assert scores == sorted(scores, reverse=True)
    assert all(0 <= s <= 1 for s in scores)


def test_update_changes_what_bm25_and_vectors_find(real_memory: RobotMemory, bundled_embedder) -> None:  # type: ignore[no-untyped-def]
    target = real_memory.learn("the elbow joint overheats after ten minutes of lifting")["memory_id"]
    near_old = real_memory.learn("the shoulder motor gets hot during long lifting tasks")["memory_id"]
    real_memory.learn("lidar returns are noisy near glass doors")
    real_memory.update(target, "suction cups lose grip on dusty cardboard boxes")

    old = real_memory.recall("elbow joint overheats", n=3)["memories"]
    assert old[0]["id"] == near_old
    assert all("text" not in m["matched_by"] for m in old if m["id"] == target)
    new = real_memory.recall("suction grip on dusty boxes", n=3)["memories"]
    assert new[0]["id"] == target and new[0]["matched_by"] == ["text", "vector"]

    expected = bundled_embedder.embed_one("suction cups lose grip on dusty cardboard boxes")
    assert np.allclose(stored_vector(real_memory, target), expected, atol=1e-6)


def test_update_replaces_context_only_when_given(memory: RobotMemory) -> None:
    created = memory.learn("approach at 0.2 m/s", context={"task": {"success": True}})["memory_id"]
    memory.update(created, "approach at 0.15 m/s")
    assert memory.get_memory(created)["task"] == {"success": True}
    memory.update(created, "approach at 0.1 m/s", context={"task": {"success": False}})
    record = memory.get_memory(created)
    assert record["task"] == {"success": False} and record["content"] == "approach at 0.1 m/s"


def test_forget_removes_memory_from_every_search_path(memory: RobotMemory) -> None:
    session = memory.start_session()["session_id"]
    gone = memory.learn(
        "wet cups slip out of the gripper", context={"spatial": {"position": [1.0, 0.5, 0.4]}}
    )
    kept = memory.learn(
        "dry cups hold well in the gripper", context={"spatial": {"position": [1.0, 0.5, 0.41]}}
    )
    memory.forget(gone["memory_id"], reason="measured wrong")
    searches = [
        memory.recall("wet cups slip", min_relevance=0),  # every path, relevant or not
        memory.recall(""),
        memory.recall("cups", session_id=session, order="time"),
        memory.recall("cups", spatial_sort={"field": "spatial.position", "target": [1.0, 0.5, 0.4]}),
        memory.recall(
            "", spatial_sort={"field": "spatial.position", "target": [1.0, 0.5, 0.4], "max_distance": 1}
        ),
    ]
    for result in searches:
        ids = [m["id"] for m in result["memories"]]
        assert gone["memory_id"] not in ids
        assert kept["memory_id"] in ids
    with pytest.raises(ConflictError, match="invalidated"):
        memory.forget(gone["memory_id"], reason="again")
    assert memory.doctor()["vectors"]["stale"] == 0


def test_twenty_session_ends_decay_no_more_than_one(locate, settings) -> None:  # type: ignore[no-untyped-def]
    def confidence_after(session_ends: int) -> float:
        clock = FakeClock()
        with RobotMemory(
            locate(f"decay{session_ends}.db"), embed_backend="none", settings=settings, clock=clock
        ) as mem:
            memory_id = mem.learn("push speed of 0.3 m/s overshoots the goal")["memory_id"]
            clock.advance(days=10)
            for _ in range(session_ends):
                mem.end_session(mem.start_session()["session_id"])
            return float(mem.get_memory(memory_id)["confidence"])

    once, twenty = confidence_after(1), confidence_after(20)
    assert once == twenty
    assert once < 0.85  # it did decay: 0.85 × 0.99^10


def test_constraints_do_not_decay(memory: RobotMemory, clock: FakeClock) -> None:
    limit = memory.learn("never exceed 20 N on glass objects")["memory_id"]
    before = memory.get_memory(limit)["confidence"]
    clock.advance(days=100)
    ended = memory.end_session(memory.start_session()["session_id"])
    assert memory.get_memory(limit)["confidence"] == before
    assert ended["decayed_count"] == 0


def test_duplicates_are_results_not_errors(memory: RobotMemory) -> None:
    first = memory.learn("Close the gripper slowly on paper cups")
    assert memory.learn("close the gripper   slowly on paper cups") == {
        "status": "duplicate",
        "method": "exact",
        "existing_id": first["memory_id"],
        "similarity": 1.0,
    }
    near = memory.learn("Close the gripper slowly on paper cups!")
    assert (
        near["status"] == "duplicate"
        and near["method"] == "jaccard"
        and near["existing_id"] == first["memory_id"]
    )
    word = memory.learn("Close the gripper very slowly on paper cups")
    assert word["status"] == "duplicate" and word["method"] == "jaccard"


def test_texts_differing_in_a_number_are_distinct_experiences(memory: RobotMemory) -> None:
    a = memory.learn("Episode 3: failed, reward=-50, 50 steps")
    b = memory.learn("Episode 4: failed, reward=-50, 50 steps")
    c = memory.learn("grip_force=12.5N works best on mugs")
    d = memory.learn("grip_force=13.5N works best on mugs")
    assert {a["status"], b["status"], c["status"], d["status"]} == {"created"}


def test_repeated_perceptions_are_stored(memory: RobotMemory) -> None:
    ids = {
        memory.save_perception("wrist camera frame of the table", data={"frame": i})["memory_id"]
        for i in range(3)
    }
    assert len(ids) == 3
    stored = memory.get_memory(min(ids))
    assert stored["data"] == {"frame": 0} and stored["type"] == "perception"


def test_recall_includes_perception_data_only_when_asked(memory: RobotMemory) -> None:
    memory.save_perception(
        "tactile reading of the cup handle",
        perception_type="tactile",
        data=[1, 2, 3],
        metadata={"sensor": "gelsight"},
    )
    plain = memory.recall("tactile cup handle")["memories"][0]
    assert "data" not in plain
    full = memory.recall("tactile cup handle", include_data=True)["memories"][0]
    assert full["data"] == [1, 2, 3] and full["metadata"] == {"sensor": "gelsight"}


def test_learn_joins_the_open_session_and_end_session_consolidates(memory: RobotMemory) -> None:
    session = memory.start_session(context={"robot": {"id": "arm-01"}})["session_id"]
    # One lesson in three wordings that differ only in filler (word Jaccard 0.55..0.65). learn calls each
    # repeat a duplicate (see the next test); with its check off, all are stored and end_session merges them.
    memory.settings = memory.settings.replace(dedup_jaccard=1.5, dedup_cosine=1.5)
    texts = [
        "the cup slipped when the gripper closed too fast on the wet handle",
        "Basically, the cup really slipped when the gripper closed too fast on the wet handle, as expected, of course",
        "Note: the cup actually just slipped when the gripper closed too fast on the wet handle, as usual, honestly",
        "lidar misses glass doors in the hallway",
    ]
    created = [memory.learn(t, context={"task": {"name": "grasp"}}) for t in texts]
    assert [c["status"] for c in created] == ["created"] * 4
    ids = [c["memory_id"] for c in created]
    assert all(memory.get_memory(i)["session_id"] == session for i in ids)
    ended = memory.end_session(session, outcome_score=0.25)
    assert ended["consolidated"]["merged_groups"] == 1
    assert ended["consolidated"]["superseded_count"] == 2
    assert ended["consolidated"]["compression_ratio"] == 0.5
    statuses = [memory.get_memory(i)["status"] for i in ids]
    assert statuses.count("superseded") == 2 and statuses[3] == "active"
    representative = next(memory.get_memory(i) for i in ids[:3] if memory.get_memory(i)["status"] == "active")
    assert sorted(representative["merged_ids"]) == sorted(set(ids[:3]) - {representative["id"]})
    assert memory.recall("cup slipped gripper", n=10)["total"] == 2
    assert memory.get_session(session)["outcome_score"] == 0.25
    with pytest.raises(ConflictError):
        memory.end_session(session)


def test_a_repeat_that_differs_only_in_filler_is_a_duplicate(memory: RobotMemory) -> None:
    """However much filler a repeat adds (word Jaccard 0.55 here, or 0.67 for "the" in a short lesson),
    it is the same experience; a negator or another content word is not."""
    for number, (first, repeat) in enumerate((
        ("the cup slipped when the gripper closed too fast on the wet handle",
         "Basically, the cup really slipped when the gripper closed too fast on the wet handle, as expected, of course"),
        ("Grip mug", "Grip the mug"),
        ("Close gripper slowly", "Close a gripper slowly"),
        ("Grip the mug with 12 N force", "Grip the mug with 12 N of force"),
    )):  # fmt: skip
        collection = f"pair{number}"
        stored = memory.learn(first, collection=collection)
        again = memory.learn(repeat, collection=collection)
        assert again["status"] == "duplicate" and again["existing_id"] == stored["memory_id"], (first, repeat)
        assert memory.learn(f"never {repeat}", collection=collection)["status"] == "created"
    assert memory.learn("Grip the top of the box", collection="of")["status"] == "created"
    assert memory.learn("Grip the top box", collection="of")["status"] == "created"


def test_end_session_related_memories_exclude_the_current_session(memory: RobotMemory) -> None:
    older = memory.start_session()["session_id"]
    past = memory.learn("pushing the block from its left side drifts right")["memory_id"]
    memory.end_session(older)
    current = memory.start_session()["session_id"]
    memory.learn("pushing the block from the left side drifts it 3 cm to the right")
    memory.learn("pushing the block from the left side again drifts it 4 cm to the right")
    related = memory.end_session(current)["related_memories"]
    assert [m["id"] for m in related] == [past]


def test_session_replay_in_time_order(memory: RobotMemory, clock: FakeClock) -> None:
    session = memory.start_session()["session_id"]
    ids = []
    for step in ("approach the block", "contact the block", "push the block to the goal"):
        ids.append(memory.learn(step)["memory_id"])
        clock.advance(seconds=5)
    replay = memory.recall("", session_id=session, order="time", n=10)
    assert [m["id"] for m in replay["memories"]] == ids


def test_spatial_sort_orders_nearest_first_and_max_distance_drops(memory: RobotMemory) -> None:
    made = {}
    for name, pos in {"near": [1.0, 0.0, 0.0], "mid": [2.0, 0.0, 0.0], "far": [5.0, 0.0, 0.0]}.items():
        made[name] = memory.learn(
            f"pushed block at {name} spot", context={"spatial": {"object_position": pos}}
        )["memory_id"]
    memory.learn("pushed block without position")
    sort = {"field": "spatial.object_position", "target": [0.9, 0.0, 0.0]}
    result = memory.recall("pushed block", n=4, spatial_sort=sort)["memories"]
    assert [m["id"] for m in result[:3]] == [made["near"], made["mid"], made["far"]]
    assert result[0]["spatial_distance"] == pytest.approx(0.1)
    assert "spatial_distance" not in result[3]
    limited = memory.recall("pushed block", n=4, spatial_sort={**sort, "max_distance": 1.5})["memories"]
    assert [m["id"] for m in limited] == [made["near"], made["mid"]]


def test_real_world_memories_are_boosted(memory: RobotMemory) -> None:
    sim = memory.learn(
        "grasp mug handle from the side in simulation", context={"env": {"sim_or_real": "sim"}}
    )["memory_id"]
    real = memory.learn(
        "grasp mug handle from above with the real arm", context={"env": {"sim_or_real": "real"}}
    )["memory_id"]
    # Equal channel weights: each memory leads one channel of two, so they tie and the boost decides.
    memory.settings = memory.settings.replace(vector_weight=1.0)
    ranked = [m["id"] for m in memory.recall("grasp mug handle", n=2)["memories"]]
    assert ranked == [real, sim]


def test_module_functions_delegate_to_a_default_instance(tmp_path, monkeypatch, engine, locate) -> None:  # type: ignore[no-untyped-def]
    import robotmem

    monkeypatch.setenv("ROBOTMEM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ROBOTMEM_EMBED_BACKEND", "hash")
    if engine != "sqlite":  # the settings name the server instead of the home's file
        monkeypatch.setenv("ROBOTMEM_DATABASE_URL", locate())
    monkeypatch.setattr(robotmem, "_default", None)
    created = robotmem.learn("module level learn works")
    assert robotmem.recall("module level")["memories"][0]["id"] == created["memory_id"]
    assert robotmem.recall("module level", robots="self")["memories"][0]["id"] == created["memory_id"]
    assert robotmem.recall("module level", robots=["another-robot"])["total"] == 0
    if engine == "sqlite":
        assert robotmem.default_memory().path == tmp_path / "home" / "memory.db"
    else:
        assert location_of(robotmem.default_memory()) == os.environ["ROBOTMEM_DATABASE_URL"]
        assert not (tmp_path / "home" / "memory.db").exists()
    robotmem.default_memory().close()


def test_module_functions_have_the_signatures_of_their_methods() -> None:
    import inspect

    import robotmem

    functions = [
        name
        for name in robotmem.__all__
        if inspect.isfunction(getattr(robotmem, name)) and hasattr(robotmem.RobotMemory, name)
    ]
    assert len(functions) == 9, functions  # the nine operations
    for name in functions:
        method = inspect.signature(getattr(robotmem.RobotMemory, name))
        without_self = method.replace(parameters=list(method.parameters.values())[1:])
        # Parameters, kinds, defaults, annotations and the return type, compared as a whole.
        assert inspect.signature(getattr(robotmem, name)) == without_self, name


BAD_CALLS = [
    ("learn", {"insight": ""}, "insight"),
    ("learn", {"insight": "   "}, "insight"),
    ("learn", {"insight": "x" * 301}, "insight"),
    ("learn", {"insight": "ok text", "context": "{not json"}, "context"),
    ("learn", {"insight": "ok text", "context": "[1, 2]"}, "context"),
    ("learn", {"insight": "ok text", "context": {"a": float("nan")}}, "context"),
    ("learn", {"insight": "ok text", "context": {"a": ["grip", "x\x00y"]}}, "NUL"),
    ("update", {"memory_id": 1, "new_content": "new text", "context": {"k\x00": 1}}, "NUL"),
    ("learn", {"insight": 42}, "insight"),
    ("recall", {"query": "cup", "n": 0}, "n"),
    ("recall", {"query": "cup", "n": 101}, "n"),
    ("recall", {"query": "cup", "min_confidence": 2}, "min_confidence"),
    ("recall", {"query": "cup", "context_filter": "{bad"}, "context_filter"),
    ("recall", {"query": "cup", "context_filter": {"task.success": {"$less": 3}}}, "$less"),
    ("recall", {"query": "cup", "spatial_sort": {"field": "spatial.p", "target": "1,2"}}, "target"),
    ("recall", {"query": "cup", "spatial_sort": {"field": "spatial.p"}}, "target"),
    ("recall", {"query": "cup", "order": "random"}, "order"),
    ("save_perception", {"description": "abc"}, "description"),
    ("save_perception", {"description": "camera frame", "perception_type": "smell"}, "perception_type"),
    ("save_perception", {"description": "camera frame", "data": {"x": float("inf")}}, "data"),
    ("update", {"memory_id": 1, "new_content": ""}, "new_content"),
    ("forget", {"memory_id": "one", "reason": "x"}, "memory_id"),
    ("end_session", {"session_id": "s", "outcome_score": 1.5}, "outcome_score"),
]


@pytest.mark.parametrize(("method", "arguments", "named"), BAD_CALLS)
def test_bad_input_raises_validation_error_and_changes_nothing(
    memory: RobotMemory, method, arguments, named
) -> None:  # type: ignore[no-untyped-def]
    memory.learn("a stored memory about cups")
    before = table_counts(memory)
    with pytest.raises(ValidationError) as error:
        getattr(memory, method)(**arguments)
    assert named in str(error.value)
    assert table_counts(memory) == before


@pytest.mark.parametrize(
    ("method", "arguments"),
    [
        ("forget", {"memory_id": 999, "reason": "gone"}),
        ("update", {"memory_id": 999, "new_content": "new text"}),
        ("end_session", {"session_id": "no-such-session"}),
        ("learn", {"insight": "a new memory", "session_id": "no-such-session"}),
    ],
)
def test_unknown_ids_raise_not_found_and_change_nothing(memory: RobotMemory, method, arguments) -> None:  # type: ignore[no-untyped-def]
    before = table_counts(memory)
    with pytest.raises(NotFoundError, match="999|no-such-session"):
        getattr(memory, method)(**arguments)
    assert table_counts(memory) == before


def test_recall_records_access_in_the_background(locate, settings) -> None:  # type: ignore[no-untyped-def]
    path = locate("access.db")
    with RobotMemory(path, embed_backend="none", settings=settings) as mem:
        memory_id = mem.learn("count my accesses please")["memory_id"]
        mem.recall("accesses")
        mem.recall("accesses")
    with RobotMemory(path, embed_backend="none", settings=settings) as mem:
        assert mem.get_memory(memory_id)["access_count"] == 2


def test_doctor_reports_sync_and_mode(memory: RobotMemory, bm25_memory: RobotMemory) -> None:
    memory.learn("doctor sees this memory")
    report = memory.doctor()
    assert report["ok"] and report["fts"]["in_sync"] and report["search_mode"] == "hybrid"
    assert report["vectors"]["stored"] == 1
    plain = bm25_memory.doctor()
    assert plain["search_mode"] == "bm25_only" and "none" in plain["search_mode_reason"]


def test_texts_differing_in_outcome_or_direction_are_distinct(memory: RobotMemory) -> None:
    pairs = [
        (
            "Episode twelve pushed the block to the goal: success",
            "Episode twelve pushed the block to the goal: failed",
        ),
        ("always slow down before the doorway", "never slow down before the doorway"),
        ("the block drifts left when pushed at the edge", "the block drifts right when pushed at the edge"),
        ("抓取玻璃杯时成功了", "抓取玻璃杯时失败了"),
    ]
    for first, second in pairs:
        assert memory.learn(first)["status"] == "created"
        assert memory.learn(second)["status"] == "created", second


def test_spatial_sort_finds_the_nearest_beyond_the_text_pool_in_bm25_mode(bm25_memory: RobotMemory) -> None:
    for i in range(120):
        bm25_memory.learn(
            f"push episode {i} moved the block",
            context={"task": {"success": True}, "spatial": {"start": [float(i), 0.0, 0.0]}},
        )
    found = bm25_memory.recall(
        "push episode block",
        n=3,
        context_filter={"task.success": True},
        spatial_sort={"field": "spatial.start", "target": [117.2, 0.0, 0.0]},
    )
    assert [m["content"] for m in found["memories"]] == [
        "push episode 117 moved the block",
        "push episode 118 moved the block",
        "push episode 116 moved the block",
    ]
    assert found["mode"] == "bm25_only"


def test_end_session_with_related_top_k_zero_returns_no_related_memories(memory: RobotMemory) -> None:
    memory.learn("the gripper slipped on the wet mug handle")
    sessions = [memory.start_session()["session_id"] for _ in range(2)]
    for trial, session in enumerate(sessions, start=1):
        # Distinct numbers keep the two lessons apart (a random hex suffix was sometimes one dedup token).
        learned = memory.learn(f"gripper slipped on a wet mug during trial {trial}", session_id=session)
        assert learned["status"] == "created"
    assert memory.end_session(sessions[0])["related_memories"] != []
    memory.settings = memory.settings.replace(related_top_k=0)
    ended = memory.end_session(sessions[1])
    assert ended["related_memories"] == [] and ended["summary"]["memory_count"] == 1
