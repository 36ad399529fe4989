"""The patrol generator and its reference: same seed same log, and the truth the benchmark scores by holds."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the benchmarks live beside src/, not in the package
    sys.path.insert(0, str(ROOT))

from benchmarks.patrol_data import (  # noqa: E402
    FRAMES,
    NOISE_SIGMA,
    POSITION_TOLERANCE,
    ROOM_INDEX,
    ROOMS,
    PatrolLog,
    generate,
    load_log,
    save_log,
)
from benchmarks.patrol_queries import (  # noqa: E402
    KINDS,
    Reference,
    in_region,
    make_queries,
    matches_term,
    room_region,
    score,
)

N = 3000


@pytest.fixture(scope="module")
def log() -> PatrolLog:
    return generate(N, seed=5)


def test_the_same_seed_gives_the_same_log_and_queries(log: PatrolLog) -> None:
    again = generate(N, seed=5)
    assert again.texts == log.texts
    for column in ("times", "positions", "frames", "kinds", "objects", "rooms", "text_ids"):
        assert np.array_equal(getattr(again, column), getattr(log, column)), column
    assert [(m.key, m.at) for m in again.moves] == [(m.key, m.at) for m in log.moves]
    assert make_queries(again) == make_queries(log)
    other = generate(N, seed=6)
    assert not np.array_equal(other.times[:100], log.times[:100])


def test_sizes_times_and_lessons(log: PatrolLog) -> None:
    sightings = int((log.kinds == 0).sum())
    assert 0.98 * N <= sightings <= N
    assert int((log.kinds == 1).sum()) == round(N * 0.04)
    assert np.all(np.diff(log.times) > 0), "every record has its own time"
    assert np.all(log.objects[log.kinds == 1] == -1) and np.all(log.objects[log.kinds == 0] >= 0)


def test_every_sighting_is_its_object_where_it_truly_was_plus_noise(log: PatrolLog) -> None:
    errors = []
    for row in np.flatnonzero(log.kinds == 0):
        obj = log.tracked[int(log.objects[row])]
        segment = obj.segment_at(float(log.times[row]))
        assert segment.room == ROOMS[int(log.rooms[row])].name
        assert FRAMES[int(log.frames[row])] == ROOMS[ROOM_INDEX[segment.room]].frame
        errors.append(np.asarray(log.positions[row]) - np.asarray(segment.position))
    spread = np.std(np.asarray(errors), axis=0)
    assert np.all(np.abs(spread - NOISE_SIGMA) < 0.005), spread
    assert float(np.max(np.linalg.norm(errors, axis=1))) < POSITION_TOLERANCE


def test_every_moved_objects_latest_sighting_after_the_move_is_at_its_new_place(log: PatrolLog) -> None:
    reference = Reference(log)
    checked = 0
    for move in log.moves:
        k = reference.by_key[move.key]
        later_moves = [m.at for m in log.moves if m.key == move.key and m.at > move.at]
        row = reference.latest_row(k, min(later_moves) if later_moves else None)
        assert row is not None
        if log.times[row] < move.at:
            continue  # not sighted between this move and the next
        new_place = log.tracked[k].segment_at(move.at)
        assert new_place.room == move.to_room != move.from_room
        assert ROOMS[int(log.rooms[row])].name == move.to_room
        assert np.linalg.norm(log.positions[row] - np.asarray(new_place.position)) < POSITION_TOLERANCE
        before = reference.latest_row(k, move.at - 0.001)
        earlier_moves = [m.at for m in log.moves if m.key == move.key and m.at < move.at]
        assert before is not None
        if not earlier_moves or log.times[before] >= max(earlier_moves):
            assert ROOMS[int(log.rooms[before])].name == move.from_room
        checked += 1
    assert checked >= len(log.moves) // 2 > 0


def test_anonymous_objects_have_no_id_never_move_and_stand_apart(log: PatrolLog) -> None:
    anonymous = [o for o in log.tracked if o.object_id is None]
    assert sorted(o.label for o in anonymous) == ["potted plant"] * 2 + ["traffic cone"] * 2
    assert all(len(o.segments) == 1 for o in anonymous)
    for label in ("potted plant", "traffic cone"):
        first, second = (np.asarray(o.segments[0].position) for o in anonymous if o.label == label)
        assert np.linalg.norm(first - second) > 10.0
    assert not {m.key for m in log.moves} & {o.key for o in anonymous}


def test_odom_yard_positions_fall_inside_map_rooms(log: PatrolLog) -> None:
    yard = log.rooms == ROOM_INDEX["yard"]
    assert np.all(log.frames[yard] == FRAMES.index("odom"))
    assert np.all(log.frames[~yard] == FRAMES.index("map"))
    kitchen_box = room_region(ROOMS[ROOM_INDEX["kitchen"]], "box")
    assert in_region(log.positions[yard], kitchen_box).any(), "a frame-blind region query would be caught"


def test_a_log_survives_saving_and_loading(log: PatrolLog, tmp_path: Path) -> None:
    save_log(log, tmp_path / "log.json.gz")
    loaded = load_log(tmp_path / "log.json.gz")
    assert loaded.texts == log.texts and np.array_equal(loaded.times, log.times)
    assert np.allclose(loaded.positions, log.positions) and np.array_equal(loaded.objects, log.objects)
    assert [vars(s) for s in loaded.tracked[0].segments] == [vars(s) for s in log.tracked[0].segments]


def test_the_term_rule() -> None:
    assert matches_term("the red mug is on the table", "mug")
    assert matches_term("grip_force=12.0N slipped on the wet mug", "grip_force")
    assert not matches_term("two mugs on the shelf", "mug")
    assert matches_term("红色杯子在厨房的台面上", "杯子")
    assert not matches_term("茶壶在厨房的台面上", "杯子")


def test_memory_answers_equal_a_plain_loop(log: PatrolLog) -> None:
    reference = Reference(log)
    queries = [q for q in make_queries(log) if q["kind"] in ("region_window", "region_query")]
    assert queries
    for query in queries:
        args = query["args"]
        region, term = args["region"], args.get("text")
        loop = [
            row
            for row in range(len(log))
            if FRAMES[int(log.frames[row])] == region["frame"]
            and in_region(log.positions[row : row + 1], region)[0]
            and args["since"] <= log.times[row] <= args["until"]
            and (not term or matches_term(log.text(row), term))
        ]
        assert reference.answer(query) == loop[::-1][: args["n"]]


def test_scoring_accepts_the_truth_and_rejects_near_misses(log: PatrolLog) -> None:
    reference = Reference(log)
    queries = make_queries(log)
    assert {q["kind"] for q in queries} == set(KINDS)
    query = next(q for q in queries if q["kind"] == "last_seen_id")
    expected = reference.answer(query)
    assert score(query, expected, expected, log)["correct"]
    right = expected[0]
    assert not score(query, expected, [{**right, "observed_at": right["observed_at"] - 60}], log)["correct"]
    far = [v + 1.0 for v in right["position"]]
    assert not score(query, expected, [{**right, "position": far}], log)["correct"]
    assert not score(query, expected, [{**right, "object": "mug-99"}], log)["correct"]
    assert not score(query, expected, [], log)["correct"]
    label_only = {k: v for k, v in right.items() if k != "object"}
    assert score(query, expected, [{**label_only, "observed_at": "2026-01-01T00:00:00+00:00"}], log) == {
        "correct": False
    }
    unknown = next(q for q in queries if q["kind"] == "unknown")
    assert score(unknown, [], [], log)["correct"] and not score(unknown, [], expected, log)["correct"]
