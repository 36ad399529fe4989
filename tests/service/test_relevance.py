"""Absolute relevance: the scale, the gate of every recall with a query, and the note of an empty answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from robotmem import RobotMemory, ValidationError
from robotmem.config import Settings
from robotmem.embedders import create_embedder
from robotmem.evaluation import load_eval_set
from robotmem.service.recall.relevance import (
    COSINE_SCALES,
    DEFAULT_MIN_RELEVANCE,
    Scale,
    cosine_scale,
)

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"

LOG = [
    ("grip_force=12 N held the ceramic mug without slipping", {"task": {"success": True}}),
    ("the paper cup crushed at grip_force=20 N", {"task": {"success": False}}),
    ("lidar missed the glass wall in corridor B", {"task": {"success": False}}),
    ("docking succeeded after slowing the final approach to 0.05 m/s", {"task": {"success": True}}),
    ("夹爪力度 8 N 抓取玻璃杯成功", {"task": {"success": True}}),
]


def test_a_scale_maps_zero_floor_and_full_to_0_half_and_1() -> None:
    scale = Scale(zero=0.78, floor=0.83, full=0.89)
    assert scale.relevance(0.5) == 0.0 and scale.relevance(0.78) == 0.0
    assert scale.relevance(0.83) == pytest.approx(0.5) and scale.relevance(0.95) == 1.0
    assert scale.relevance(0.805) == pytest.approx(0.25) and scale.relevance(0.86) == pytest.approx(0.75)
    for relevance in (0.1, 0.25, 0.5, 0.75, 0.9):
        assert scale.relevance(scale.value_at(relevance)) == pytest.approx(relevance)


def test_the_query_script_picks_the_cosine_scale() -> None:
    model = "multilingual-e5-small-q4"
    assert cosine_scale(model, "grip force for the mug") == COSINE_SCALES[model]["latin"]
    assert cosine_scale(model, "ur10-03处理杯子") == COSINE_SCALES[model]["cjk"]
    assert cosine_scale("some-unmeasured-model", "grip force") is None


def _stored(mem: RobotMemory) -> RobotMemory:
    for text, context in LOG:
        mem.learn(text, context=context)
    return mem


def test_a_query_nothing_is_relevant_to_returns_nothing_and_says_why(bm25_memory: RobotMemory) -> None:
    mem = _stored(bm25_memory)
    for query in ("quantum chromodynamics lattice", "zebra quantum xylophone", "量子色动力学格点计算"):
        result = mem.recall(query)
        assert result["memories"] == [] and result["total"] == 0
        assert "no memory in this scope is relevant" in str(result["note"])
        assert f"min_relevance {DEFAULT_MIN_RELEVANCE:g}" in str(result["note"])


def test_an_empty_scope_says_so_instead_of_blaming_relevance(memory: RobotMemory) -> None:
    """Nothing returned because nothing is in the scope (a collection, a filter, a region, a window that
    holds no memory) gets its own note, whatever ``min_relevance``; a scope that holds memories, none
    relevant, keeps the relevance note; across collections, the relevance note wins."""
    mem = _stored(memory)
    mem.learn("the shelf in the lab is 1.2 m high", collection="lab")
    empty_scopes: list[dict[str, object]] = [
        {"collection": "nowhere"},
        {"context_filter": {"task.success": "maybe"}},
        {"region": {"center": [0, 0, 0], "radius": 1}},
        {"since": "2001-01-01T00:00:00Z", "until": "2001-01-02T00:00:00Z"},
        {"min_relevance": 0},
    ]
    for options in empty_scopes[:4]:
        for query in ("grip force for the mug", ""):  # without a query too: "what did I see this morning?"
            result = mem.recall(query, **options)
            assert result["memories"] == [] and "no memory is in this scope" in str(result["note"]), options
        recent = mem.recall("", order="recent", **options)
        assert "no memory is in this scope" in str(recent["note"])
    assert mem.recall("grip force for the mug", **empty_scopes[4])["note"] is None  # the mug's memories
    assert mem.recall("", since="-1h", order="recent")["note"] is None  # something was returned
    nothing = mem.recall("quantum chromodynamics lattice", min_relevance=0.99)
    assert nothing["memories"] == [] and "no memory in this scope is relevant" in str(nothing["note"])
    across = mem.recall("quantum chromodynamics lattice", collection="*", min_relevance=0.99)
    assert "no memory in this scope is relevant" in str(across["note"])


def test_a_distance_cut_and_a_query_no_memory_holds_a_word_of_say_so(memory: RobotMemory) -> None:
    """A spatial sort's ``max_distance`` that leaves out every relevant memory says so (not relevance, even
    with ``min_relevance=0``); with a model without a relevance scale, a sort by distance keeps memories
    holding a query word, and a query none holds says that, not "min_relevance 0.001"."""
    memory.learn("the pallet stands at bay four", context={"spatial": {"position": [20.0, 5.0, 0.0]}})
    far = {"field": "spatial.position", "target": [200.0, 5.0, 0.0], "max_distance": 1}
    for options in ({}, {"min_relevance": 0}):
        cut = memory.recall("pallet", spatial_sort=far, **options)
        assert cut["memories"] == [], options
        assert str(cut["note"]).startswith(
            "no relevant memory lies within max_distance 1 of the target in frame 'map'"
        )
    without_query = memory.recall("", spatial_sort=far)
    assert without_query["memories"] == [] and "within max_distance 1" in str(without_query["note"])
    near = {"field": "spatial.position", "target": [20.0, 5.0, 0.0]}
    assert memory.recall("pallet", spatial_sort={**near, "max_distance": 1})["note"] is None
    wordless = memory.recall("zebra xylophone", spatial_sort=near)
    assert wordless["memories"] == [] and "no memory in this scope holds a word of the query" in str(
        wordless["note"]
    )
    assert "0.001" not in str(wordless["note"])


def test_every_hit_carries_a_relevance_and_the_gate_keeps_the_relevant(bm25_memory: RobotMemory) -> None:
    mem = _stored(bm25_memory)
    query = "lidar missed the glass wall in corridor B at night, mug"
    # By default the floor decides whether anything is relevant: one memory is, so the ranking stands,
    # the relevant memory first and each hit showing its own relevance.
    found = mem.recall(query)
    assert found["note"] is None
    assert found["memories"][0]["content"] == "lidar missed the glass wall in corridor B"
    assert found["memories"][0]["relevance"] >= 0.5 and found["memories"][0]["score"] == 1.0
    assert len(found["memories"]) > 1
    # A min_relevance the caller gives also leaves out every memory below it.
    strict = mem.recall(query, min_relevance=DEFAULT_MIN_RELEVANCE)
    assert [m["content"] for m in strict["memories"]] == ["lidar missed the glass wall in corridor B"]
    # Off, the weaker matches (on "mug") come back with their own low relevance; scores stay relative.
    everything = mem.recall("lidar missed the glass wall in corridor B at night, mug", min_relevance=0)[
        "memories"
    ]
    assert len(everything) > 1
    assert all(m["relevance"] < DEFAULT_MIN_RELEVANCE for m in everything[1:])
    # A filter-only recall has no query to be relevant to.
    assert all(m["relevance"] is None for m in mem.recall("", n=3)["memories"])


def test_relevance_is_comparable_across_queries(bm25_memory: RobotMemory) -> None:
    mem = _stored(bm25_memory)
    good = mem.recall("ceramic mug grip force", min_relevance=0)["memories"][0]
    weak = mem.recall("mug recipe for sourdough bread", min_relevance=0)["memories"][0]
    assert good["score"] == weak["score"] == 1.0  # normalised per answer: both look like the best match
    assert good["relevance"] > DEFAULT_MIN_RELEVANCE > weak["relevance"]  # relevance tells them apart


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
def test_min_relevance_outside_0_1_is_refused(bm25_memory: RobotMemory, bad: float) -> None:
    with pytest.raises(ValidationError, match="min_relevance"):
        bm25_memory.recall("mug", min_relevance=bad)


def test_a_filter_and_spatial_sort_apply_the_same_gate(bm25_memory: RobotMemory) -> None:
    mem = bm25_memory
    mem.learn("wet mug slipped out of the gripper", context={"spatial": {"position": [1.0, 0.0, 0.0]}})
    mem.learn("battery swap routine done", context={"spatial": {"position": [1.0, 0.0, 0.01]}})
    sort = {"field": "spatial.position", "target": [1.0, 0.0, 0.0]}
    near = mem.recall("mug slipped", spatial_sort=sort)["memories"]
    assert [m["content"] for m in near] == ["wet mug slipped out of the gripper"]
    assert mem.recall("violin bow rosin", spatial_sort=sort)["note"] is not None


@pytest.mark.slow
def test_unanswerable_queries_return_nothing_with_the_bundled_model(tmp_path: Path) -> None:
    """Every fourth query of benchmarks/data/unanswerable.jsonl against every third memory of the robot set
    (with the answers of the labelled queries asked below), through the bundled model: at the default floor
    most return nothing, and the labelled ones keep their answer. Measured when written: 22 of 29 empty
    (the target, 95 %, is not reached with this model: docs/benchmarks.md, "Relevance").
    """
    settings = Settings(home=tmp_path, embed_backend="auto")
    embedder = create_embedder(settings)
    if not embedder.available:
        pytest.skip(f"the bundled model is not available: {embedder.status}")
    robot = load_eval_set(DATA / "robot_eval.jsonl")
    asked = [q for q in robot.queries if q.context_filter is None and q.spatial_sort is None][::9]
    wanted = {g for q in asked for g in q.gold}
    documents = [d for i, d in enumerate(robot.documents) if i % 3 == 0 or d.id in wanted]
    lines = (DATA / "unanswerable.jsonl").read_text(encoding="utf-8").splitlines()
    unanswerable = [json.loads(line)["query"] for line in lines][::4]
    with RobotMemory(tmp_path / "r.db", settings=settings, embedder=embedder) as mem:
        ids = {}
        for document in documents:
            learned = mem.learn(document.text, context=dict(document.context))
            ids[document.id] = learned.get("memory_id", learned.get("existing_id"))
        empty = [q for q in unanswerable if not mem.recall(q)["memories"]]

        def answered(floor: float | None) -> set[str]:
            return {
                q.id
                for q in asked
                if {ids[g] for g in q.gold}
                & {m["id"] for m in mem.recall(q.query, min_relevance=floor)["memories"]}
            }

        gated, ungated = answered(None), answered(0.0)
    assert len(unanswerable) == 29
    assert len(empty) >= 0.7 * len(unanswerable), sorted(set(unanswerable) - set(empty))
    assert len(ungated - gated) <= 2, sorted(ungated - gated)
