"""Task and place in one recall: a query and ``spatial_sort`` together, on every candidate source."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tests.conftest import location_of

from robotmem import RobotMemory
from robotmem.config import Settings

SORT = {"field": "spatial.start", "target": [0.0, 0.0]}


@pytest.fixture
def episodes(locate: Callable[[str], Any], settings: Settings, recall_mirror: bool) -> Iterator[RobotMemory]:
    """Push episodes near the origin, grasp episodes farther out; each source, with hashed vectors."""
    chosen = settings.replace(recall_mirror=recall_mirror)
    with RobotMemory(locate("memory.db"), embed_backend="hash", settings=chosen) as mem:
        for i in range(30):
            mem.learn(f"push episode {i} slid the block", context={"spatial": {"start": [0.1 * i, 0.0]}})
        for i in range(30):
            mem.learn(
                f"grasp episode {i} lifted the mug",
                context={"spatial": {"start": [5.0 + 0.1 * i, 0.0]}, "task": {"success": i % 2 == 0}},
            )
        mem.learn("grasp episode without a start position lifted the mug")
        yield mem


def test_a_nonsense_query_with_spatial_sort_returns_nothing(episodes: RobotMemory) -> None:
    found = episodes.recall("zebra quantum xylophone", n=5, spatial_sort=SORT)
    assert found["memories"] == []
    assert found["mode"] == "hybrid"


def test_query_and_spatial_sort_return_the_nearest_relevant_memories(episodes: RobotMemory) -> None:
    found = episodes.recall("grasp mug", n=5, spatial_sort=SORT)["memories"]
    # The push episodes are all nearer, but they are not about grasping.
    assert [m["content"] for m in found] == [f"grasp episode {i} lifted the mug" for i in range(5)]
    assert [m["spatial_distance"] for m in found] == pytest.approx([5.0 + 0.1 * i for i in range(5)])


def test_relevant_memories_beyond_the_candidate_depth_compete_on_distance(
    episodes: RobotMemory, settings: Settings
) -> None:
    shallow = settings.replace(candidate_depth=3, recall_mirror=episodes.engine.settings.recall_mirror)
    with RobotMemory(location_of(episodes), embed_backend="hash", settings=shallow) as mem:
        target = {"field": "spatial.start", "target": [7.9, 0.0]}
        found = mem.recall("grasp mug", n=2, spatial_sort=target)["memories"]
    assert [m["content"] for m in found] == [
        "grasp episode 29 lifted the mug",
        "grasp episode 28 lifted the mug",
    ]


def test_query_spatial_sort_and_filter_combine(episodes: RobotMemory) -> None:
    found = episodes.recall("grasp mug", n=3, context_filter={"task.success": True}, spatial_sort=SORT)[
        "memories"
    ]
    assert [m["content"] for m in found] == [f"grasp episode {i} lifted the mug" for i in (0, 2, 4)]


def test_an_empty_query_returns_the_nearest_of_all_filtered_memories(episodes: RobotMemory) -> None:
    found = episodes.recall("", n=5, spatial_sort=SORT)["memories"]
    assert [m["content"] for m in found] == [f"push episode {i} slid the block" for i in range(5)]
    successes = episodes.recall("", n=3, context_filter={"task.success": True}, spatial_sort=SORT)
    assert [m["content"] for m in successes["memories"]] == [
        f"grasp episode {i} lifted the mug" for i in (0, 2, 4)
    ]


def test_without_an_embedder_the_gate_is_the_same(episodes: RobotMemory, settings: Settings) -> None:
    plain = settings.replace(recall_mirror=episodes.engine.settings.recall_mirror)
    with RobotMemory(location_of(episodes), embed_backend="none", settings=plain) as mem:
        assert mem.recall("zebra quantum xylophone", spatial_sort=SORT)["memories"] == []
        found = mem.recall("grasp mug", n=3, spatial_sort=SORT)
    assert found["mode"] == "bm25_only"
    assert [m["spatial_distance"] for m in found["memories"]] == pytest.approx([5.0, 5.1, 5.2])
    assert all(math.isfinite(m["score"]) for m in found["memories"])


def test_with_the_default_model_a_paraphrase_passes_the_gate_by_cosine(
    recall_mirror: bool, locate: Callable[[str], Any], settings: Settings, bundled_embedder: Any
) -> None:
    chosen = settings.replace(recall_mirror=recall_mirror)
    with RobotMemory(locate("real.db"), settings=chosen, embedder=bundled_embedder) as mem:
        grip = mem.learn(
            "grip_force=12.5N yields highest grasp success rate",
            context={"spatial": {"start": [3.0, 0.0]}},
        )["memory_id"]
        for text, x in [
            ("lidar misses glass doors in the hallway", 0.1),
            ("the battery drains fast when the arm holds a load", 0.2),
        ]:
            mem.learn(text, context={"spatial": {"start": [x, 0.0]}})
        found = mem.recall("grip force parameters", spatial_sort=SORT)
        assert [m["id"] for m in found["memories"]] == [grip]  # no shared word: its cosine lets it in
        assert mem.recall("zebra quantum xylophone", spatial_sort=SORT)["memories"] == []
        assert len(mem.recall("", spatial_sort=SORT)["memories"]) == 3


def test_the_nearest_relevant_are_found_behind_many_nearer_irrelevant_ones(
    recall_mirror: bool, locate: Callable[[str], Any], settings: Settings
) -> None:
    with RobotMemory(
        locate("m.db"), embed_backend="none", settings=settings.replace(recall_mirror=recall_mirror)
    ) as mem:
        for i in range(300):
            mem.learn(f"push trial {i} moved the block", context={"spatial": {"start": [0.01 * i, 0.0]}})
        for x in (9.0, 7.0, 8.0):
            mem.learn(f"grasp trial at {x} lifted the mug", context={"spatial": {"start": [x, 0.0]}})
        found = mem.recall("grasp", n=2, spatial_sort=SORT)["memories"]
    assert [m["spatial_distance"] for m in found] == [7.0, 8.0]
