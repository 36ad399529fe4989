"""Small pure pieces: RRF, vectors, spatial sort, settings, and the public API list."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import robotmem
from robotmem import ValidationError
from robotmem.config import Settings, load_settings
from robotmem.query.ranking import (
    add_episode_scores,
    add_share_of_best,
    fuse_rrf,
    fuse_scores,
    group_in_order,
    normalize_scores,
    shift_along_episodes,
    spread_to_neighbours,
)
from robotmem.query.spatial import coordinates_at, distance, parse_spatial_sort
from robotmem.query.vectors import VectorIndex, decode_vector, encode_vector


def test_rrf_follows_the_formula_with_zero_based_ranks() -> None:
    scores = fuse_rrf([[1, 2], [2, 3]], k=60)
    assert scores[2] == pytest.approx(1 / 62 + 1 / 61)
    assert scores[1] == pytest.approx(1 / 61)
    assert list(scores) == [1, 2, 3]


@given(
    st.lists(st.lists(st.integers(0, 50), unique=True, max_size=20), min_size=1, max_size=3),
    st.integers(0, 100),
)
def test_rrf_rewards_agreement(rankings: list[list[int]], k: int) -> None:
    scores = fuse_rrf(rankings, k=k)
    assert set(scores) == {i for ranking in rankings for i in ranking}
    normalized = normalize_scores(scores)
    if normalized:
        assert max(normalized.values()) == pytest.approx(1.0)


def test_vector_index_ranks_by_cosine_and_forgets() -> None:
    index = VectorIndex(3, capacity=2)
    for memory_id, vector in {1: [1, 0, 0], 2: [0.8, 0.6, 0], 3: [0, 1, 0]}.items():
        index.upsert(memory_id, np.asarray(vector, dtype=np.float32))
    query = np.asarray([1, 0, 0], dtype=np.float32)
    assert [m for m, _ in index.ranked(query, first=1)] == [1, 2, 3]
    index.remove(1)
    assert [m for m, _ in index.ranked(query)] == [2, 3]
    assert len(index) == 2 and 1 not in index


def test_a_bulk_loaded_vector_index_searches_and_changes_like_an_upserted_one() -> None:
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(1500, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = np.arange(10, 1510, dtype=np.int64)
    upserted, loaded = VectorIndex(8), VectorIndex(8)
    for memory_id, vector in zip(ids, vectors, strict=True):
        upserted.upsert(int(memory_id), vector)
    loaded.load(((int(m), v.astype("<f4").tobytes()) for m, v in zip(ids, vectors, strict=True)), len(ids))
    for index in (upserted, loaded):
        index.remove(11)
        index.upsert(5000, vectors[0])
    query = vectors[3]
    assert list(loaded.ranked(query, first=20))[:20] == list(upserted.ranked(query, first=20))[:20]
    assert len(loaded) == len(upserted) == 1500 and 11 not in loaded and 5000 in loaded
    with pytest.raises(ValidationError, match="more than the 1 vectors"):
        loaded.load([(1, vectors[0].tobytes()), (2, vectors[1].tobytes())], 1)
    with pytest.raises(ValidationError, match="dimensions"):
        loaded.load([(1, b"\0" * 12)], 1)


@given(st.lists(st.floats(-1e6, 1e6, width=32), min_size=1, max_size=16))
def test_vector_encoding_round_trips(values: list[float]) -> None:
    vector = np.asarray(values, dtype=np.float32)
    assert np.array_equal(decode_vector(encode_vector(vector), len(values)), vector)


def test_spatial_sort_parsing_and_distance() -> None:
    sort = parse_spatial_sort('{"field": "spatial.object_position", "target": [0, 0, 0], "max_distance": 2}')
    assert sort is not None and sort.path == ("spatial", "object_position") and sort.max_distance == 2
    point = coordinates_at({"spatial": {"object_position": [3, 4, 0]}}, sort.path)
    assert distance(point, sort.target) == 5.0
    assert distance((1.0, 2.0), sort.target) is None
    for bad in (
        {"field": "x"},
        {"field": "x", "target": []},
        {"field": "x", "target": [1, "a"]},
        {"field": "x", "target": [1], "max_distance": -1},
        {"field": "", "target": [1]},
        "[1]",
        {"field": "x", "target": [1], "extra": 1},
    ):
        with pytest.raises(ValidationError, match="spatial_sort"):
            parse_spatial_sort(bad)


def test_settings_come_from_file_then_environment(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "config.toml").write_text('rrf_k = 30\ntop_k = 7\nembed_backend = "none"\n')
    settings = load_settings(
        {"ROBOTMEM_HOME": str(tmp_path), "ROBOTMEM_TOP_K": "9", "ROBOTMEM_WEB_TOKEN": "x"}
    )
    assert (settings.recall.rrf_k, settings.top_k, settings.embed_backend) == (30, 9, "none")
    assert settings.database == tmp_path / "memory.db"
    with pytest.raises(ValidationError, match="ROBOTMEM_RRF_K"):
        load_settings({"ROBOTMEM_HOME": str(tmp_path), "ROBOTMEM_RRF_K": "many"})
    (tmp_path / "config.toml").write_text("colour = 1\n")
    with pytest.raises(ValidationError, match="unknown setting 'colour'"):
        load_settings({"ROBOTMEM_HOME": str(tmp_path)})


def test_configured_top_k_and_min_confidence_are_used(tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = Settings(home=tmp_path, top_k=2, min_confidence=0.85, embed_backend="none")
    with robotmem.RobotMemory(settings=settings) as mem:
        for i in range(4):
            mem.learn(f"gripper note number {i} about cups")
        mem.learn("grip_force=12.5N works on cups because the pads are soft")  # confidence 0.9
        found = mem.recall("gripper cups")
        assert [m["confidence"] for m in found["memories"]] == [0.9]
        assert len(mem.recall("gripper cups", min_confidence=0.0)["memories"]) == 2


def test_public_api_is_sorted_and_complete() -> None:
    assert robotmem.__all__ == sorted(robotmem.__all__)
    public = {
        name
        for name in vars(robotmem)
        if not name.startswith("_") and name not in {"annotations", "threading", "Any"}
    }
    modules = {name for name in public if type(getattr(robotmem, name)).__name__ == "module"}
    assert public - modules == set(robotmem.__all__) - {"__version__"}


def test_score_fusion_normalises_each_channel_and_weights_them() -> None:
    text = [(1, 12.0), (2, 6.0), (3, 0.0)]
    vector = [(3, 0.9), (4, 0.5)]
    minmax = fuse_scores([text, vector], method="minmax", weights=[1.0, 2.0])
    # min-max: text 1 → 1, 2 → 0.5, 3 → 0; vector 3 → 1, 4 → 0; missing → 0; then lifted by 1 % of the range.
    raw = {1: 1.0, 2: 0.5, 3: 2.0, 4: 0.0}
    assert list(minmax) == [1, 2, 3, 4]
    assert minmax == pytest.approx({m: v + 0.02 for m, v in raw.items()})
    z = fuse_scores([text, vector], method="zscore")
    # z-scores: text (12, 6, 0) → (1.2247, 0, -1.2247); vector (0.9, 0.5) → (1, -1); a missing id gets the floor.
    raw_z = {1: 1.2247 - 1, 2: 0 - 1, 3: -1.2247 + 1, 4: -1.2247 - 1}
    low = min(raw_z.values())
    spread = max(raw_z.values()) - low
    assert z == pytest.approx({m: v - low + 0.01 * spread for m, v in raw_z.items()}, abs=1e-3)
    assert min(z.values()) > 0
    assert fuse_scores([[(5, 3.0)]], method="zscore") == {5: 1.0}
    with pytest.raises(ValueError, match="method"):
        fuse_scores([text], method="rank")


def test_episode_structure_spreads_to_neighbours_and_adds_the_episode_best() -> None:
    episodes = [[1, 2, 3, 4], [7, 8]]
    spread = spread_to_neighbours({2: 1.0, 8: 0.4}, episodes, share=0.5)
    assert spread == pytest.approx({2: 1.0, 1: 0.5, 3: 0.5, 8: 0.4, 7: 0.2})
    assert spread_to_neighbours({2: 1.0}, episodes, share=0.0) == {2: 1.0}
    assert spread_to_neighbours({2: 1.0}, episodes, share=1.0, span=2) == pytest.approx(
        {2: 1.0, 1: 1.0, 3: 1.0, 4: 1.0}
    )
    shifted = shift_along_episodes({2: 1.0, 3: 0.5, 8: 0.4}, episodes, share=0.8, direction=1, sources={2, 8})
    assert shifted == pytest.approx({2: 0.2, 3: 0.1 + 0.8, 8: 0.08})  # 8 is last: nothing follows
    back = shift_along_episodes({2: 1.0}, episodes, share=0.5, direction=-1)
    assert back == pytest.approx({2: 0.5, 1: 0.5})
    assert shift_along_episodes({2: 1.0}, episodes, share=0.5, direction=0) == {2: 1.0}
    raised = add_episode_scores({1: 0.2, 2: 1.0, 8: 0.4, 9: 0.3}, episodes, share=0.1)
    assert raised == pytest.approx({1: 0.3, 2: 1.1, 8: 0.44, 9: 0.3})


@given(st.lists(st.tuples(st.integers(0, 60), st.sampled_from(["a", "b", 3, 4.5])), max_size=40))
def test_grouping_by_value_keeps_the_order_within_each_group(members: list[tuple[int, object]]) -> None:
    groups = group_in_order(members)
    first_key: dict[int, object] = {}
    for memory_id, key in members:
        first_key.setdefault(memory_id, key)
    assert sorted(m for group in groups for m in group) == sorted(first_key)  # each id once
    for group in groups:
        assert len({first_key[m] for m in group}) == 1  # one key per group
        order = [m for m, key in members if m in group and first_key[m] == key]
        assert group == list(dict.fromkeys(order))  # in the order given
    assert [min(g) for g in groups] == sorted(min(g) for g in groups)  # groups by smallest id


def test_grouping_makes_the_episodes_of_a_log_stored_without_sessions() -> None:
    log = [(10, 1), (11, 1), (12, 2), (13, 1), (14, 2)]
    assert group_in_order(log) == [[10, 11, 13], [12, 14]]
    assert group_in_order([]) == []


@given(
    st.dictionaries(st.integers(0, 30), st.floats(0.001, 100), max_size=20),
    st.sets(st.integers(0, 40), max_size=10),
    st.floats(0, 2),
)
def test_a_share_of_the_best_score_goes_to_the_chosen_scored_memories_only(
    scores: dict[int, float], chosen: set[int], share: float
) -> None:
    raised = add_share_of_best(scores, chosen, share)
    assert set(raised) == set(scores)  # nobody joins
    best = max(scores.values(), default=0.0)
    for memory_id, score in scores.items():
        gain = share * best if memory_id in chosen else 0.0
        assert raised[memory_id] == pytest.approx(score + gain)
