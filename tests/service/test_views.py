"""The web UI's map, parameters against outcome and episode list (``service/charts.py``, the episode
queries of ``service/browse.py``), on every engine, and the pure binning and interval rules."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from tests.conftest import FakeClock

from robotmem import RobotMemory, ValidationError
from robotmem.service.bins import bin_edges, bin_index, wilson_interval

GRIP = [8.0, 9.5, 10.0, 11.2, 12.4, 12.6, 13.0, 14.9, 15.5, 16.0]


def judged(memory: RobotMemory, clock: FakeClock) -> list[int]:
    """Ten memories with a grip force in newtons and a success flag, one minute apart."""
    ids = []
    for i, force in enumerate(GRIP):
        ids.append(
            memory.learn(
                f"trial {i}: grip_force={force}N",
                context={
                    "params": {"grip_force": {"value": force, "unit": "N"}, "speed": 0.1 * (i + 1)},
                    "spatial": {"object_position": [i * 0.1, 0.5, 0.42]},
                    "task": {"success": abs(force - 12.5) < 2},
                },
            )["memory_id"]
        )
        clock.advance(minutes=1)
    return ids


def test_map_defaults_to_the_field_most_memories_carry(memory: RobotMemory, clock: FakeClock) -> None:
    ids = judged(memory, clock)
    memory.learn("a cup left on the shelf", context={"spatial": {"a_first": [1.0, 2.0]}})
    result = memory.map_view()
    assert result["field"] == "spatial.object_position"
    assert result["fields"] == [
        {"field": "spatial.object_position", "memories": 10},
        {"field": "spatial.a_first", "memories": 1},
    ]
    assert result["total"] == 10 and len(result["points"]) == 10
    assert result["time_field"] == "observed_at" and result["layers"] == ["memories", "objects"]
    assert result["frame"] == "map" and result["frames"] == [{"frame": "map", "memories": 10}]
    assert result["objects"] == [] and result["sightings"] == 0
    newest = result["points"][0]
    assert newest["memory_id"] == ids[-1] and newest["coordinates"] == [0.9, 0.5, 0.42]
    assert newest["success"] is False and newest["type"] == "fact"
    assert {p["memory_id"]: p["success"] for p in result["points"]}[ids[4]] is True

    window = memory.map_view(since=clock.now.replace(minute=3), until=clock.now.replace(minute=6))
    assert sorted(p["memory_id"] for p in window["points"]) == ids[3:7] and window["total"] == 4
    assert [f["memories"] for f in window["fields"]] == [4]
    limited = memory.map_view("spatial.object_position", limit=4)
    assert limited["total"] == 10 and [p["memory_id"] for p in limited["points"]] == ids[:-5:-1]
    assert memory.map_view("spatial.a_first")["points"][0]["coordinates"] == [1.0, 2.0]
    assert memory.map_view(collection="elsewhere") == {
        **memory.map_view(collection="elsewhere"),
        "field": None,
        "points": [],
        "total": 0,
    }


def test_map_refuses_bad_fields_and_windows(memory: RobotMemory) -> None:
    for arguments, field in (
        ({"field": "params.grip_force"}, "field"),
        ({"field": "spatial.a.b"}, "field"),
        ({"limit": 0}, "limit"),
        ({"since": "2026-01-02", "until": "2026-01-01"}, "since"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-01-01T12:00:00"}, "since: .* has no zone"),
        ({"until": float("nan")}, "until"),
        ({"since": "-1h", "until": "-2h"}, "since: .* is after until"),
    ):
        with pytest.raises(ValidationError, match=field):
            memory.map_view(**arguments)
        window = {k: v for k, v in arguments.items() if k in ("since", "until")}
        if window:  # the other views read their window the same way
            with pytest.raises(ValidationError, match=field):
                memory.param_fields(**window)


def test_views_read_their_window_as_recall_does(memory: RobotMemory, clock: FakeClock) -> None:
    """The map's and the parameters' window take recall's forms (ISO with a zone, epoch seconds, offsets
    before now) and include both ends: a memory observed at ``until`` is in the map as in recall."""
    ids = judged(memory, clock)  # observed one minute apart, the last 1 minute before now
    last = memory.get_memory(ids[-1])["observed_at"]

    def mapped(**window: Any) -> list[int]:
        return sorted(p["memory_id"] for p in memory.map_view(**window)["points"])

    def recalled(**window: Any) -> list[int]:
        found = memory.recall("", n=50, min_confidence=0.0, **window)["memories"]
        return sorted(int(m["id"]) for m in found)

    for window in (
        {"until": last},
        {"since": last, "until": last},
        {"since": "-150s"},
        {"since": "-3m", "until": "now"},
        {"since": clock.now.timestamp() - 90},
    ):
        assert mapped(**window) == recalled(**window), window
    assert mapped(until=last) == ids and mapped(since=last, until=last) == [ids[-1]]
    assert mapped(since="-150s") == ids[-2:]
    fields = memory.param_fields(since=last, until=last)["fields"]
    assert [(f["field"], f["memories"]) for f in fields] == [("params.grip_force", 1), ("params.speed", 1)]


def test_param_fields_list_units_and_counts(memory: RobotMemory, clock: FakeClock) -> None:
    judged(memory, clock)
    memory.learn("held at 2 kN in the press", context={"params": {"grip_force": {"value": 2, "unit": "kN"}}})
    memory.learn("gripper named", context={"params": {"gripper": "robotiq", "closed": True}})
    fields = memory.param_fields()["fields"]
    assert fields == [
        {"field": "params.grip_force", "unit": "N", "memories": 11, "units": {"N": 10, "kN": 1}},
        {"field": "params.speed", "unit": None, "memories": 10, "units": {}},
    ]


def test_param_bins_count_every_judged_value_once(memory: RobotMemory, clock: FakeClock) -> None:
    ids = judged(memory, clock)
    memory.learn("press at 2 kN", context={"params": {"grip_force": {"value": 2, "unit": "kN"}}})
    memory.learn("grip_force=12N on an unjudged try", context={"params": {"grip_force": 12}})
    memory.learn(
        "grip_force=12.1N, judged, no unit",
        context={"params": {"grip_force": 12.1}, "task": {"success": True}},
    )
    memory.forget(ids[0], "the gauge was not zeroed")
    result = memory.param_outcome("params.grip_force")
    values = GRIP[1:]
    assert result["x"]["unit"] == "N" and result["x"]["min"] == 9.5 and result["x"]["max"] == 16.0
    # The kN value and the two unitless ones are in another unit; the forgotten one is not active.
    assert result["left_out"] == {"no_outcome": 0, "other_unit": 3, "no_y": 0}
    assert result["judged"] == 9 and result["points_total"] == 9
    edges = result["x"]["edges"]
    assert edges == sorted(edges) and edges[0] <= 9.5 and edges[-1] > 16.0
    for bin_ in result["bins"]:
        inside = [v for v in values if bin_["lo"] <= v < bin_["hi"]]
        assert bin_["count"] == len(inside)
        assert bin_["successes"] == sum(abs(v - 12.5) < 2 for v in inside)
        if bin_["count"]:
            low, high = wilson_interval(bin_["successes"], bin_["count"])
            assert (bin_["low"], bin_["high"]) == (round(low, 6), round(high, 6))
            assert bin_["low"] <= bin_["rate"] <= bin_["high"]
        else:
            assert bin_["rate"] is None and bin_["low"] is None
    assert sum(b["count"] for b in result["bins"]) == 9
    assert {p["memory_id"] for p in result["points"]} == set(ids[1:])

    unitless = memory.param_outcome("params.grip_force", x_unit="")
    assert unitless["judged"] == 1 and unitless["left_out"]["no_outcome"] == 1
    asked = memory.param_outcome("params.grip_force", bins=3, points=2)
    assert len(asked["bins"]) <= 3 and len(asked["points"]) == 2 and asked["points_total"] == 9


def test_two_parameters_make_a_grid(memory: RobotMemory, clock: FakeClock) -> None:
    judged(memory, clock)
    memory.learn(
        "grip_force=11N without speed", context={"params": {"grip_force": 11.0}, "task": {"success": True}}
    )
    result = memory.param_outcome("params.grip_force", y="params.speed", x_unit="N", bins=4, y_bins=2)
    assert result["y"] is not None and result["y"]["field"] == "params.speed"
    assert result["judged"] == 10 and result["left_out"]["other_unit"] == 1
    cells = result["cells"]
    assert sum(c["count"] for c in cells) == 10
    x_edges, y_edges = result["x"]["edges"], result["y"]["edges"]
    for cell in cells:
        inside = [
            i
            for i, force in enumerate(GRIP)
            if bin_index(x_edges, force) == cell["x_bin"]
            and bin_index(y_edges, 0.1 * (i + 1)) == cell["y_bin"]
        ]
        assert cell["count"] == len(inside)
        assert cell["successes"] == sum(abs(GRIP[i] - 12.5) < 2 for i in inside)
    with pytest.raises(ValidationError, match="x"):
        memory.param_outcome("spatial.object_position")
    with pytest.raises(ValidationError, match="bins"):
        memory.param_outcome("params.grip_force", bins=0)
    empty = memory.param_outcome("params.nothing_here")
    assert empty["bins"] == [] and empty["judged"] == 0 and empty["x"]["edges"] == []


def episode(
    memory: RobotMemory, context: dict[str, Any], flags: list[bool], score: float | None, clock: FakeClock
) -> str:
    session = memory.start_session(context=context)["session_id"]
    for number, flag in enumerate(flags):
        memory.learn(
            f"step {number} of {session[:6]}", context={"task": {"success": flag}}, session_id=session
        )
    clock.advance(minutes=5)
    memory.end_session(session, outcome_score=score)
    clock.advance(minutes=1)
    return session


def test_episodes_carry_robot_task_outcome_and_duration(memory: RobotMemory, clock: FakeClock) -> None:
    scored_high = episode(
        memory, {"robot": {"id": "arm-01"}, "task": {"name": "push"}}, [True] * 4 + [False], 0.97, clock
    )
    scored_low = episode(memory, {"robot": "arm-02", "task": "grasp"}, [True], 0.2, clock)
    unscored_bad = episode(
        memory, {"robot_id": "arm-02", "task": {"name": "grasp"}}, [False, False, True], None, clock
    )
    unscored_good = episode(memory, {"task": {"name": "push"}}, [True, False], None, clock)
    unknown = episode(memory, {"robot": {"id": "7"}}, [], None, clock)
    rows = {s["session_id"]: s for s in memory.list_sessions()["sessions"]}
    assert rows[scored_high]["robot"] == "arm-01" and rows[scored_high]["task"] == "push"
    assert rows[scored_high]["outcome"] == "success" and rows[scored_high]["success_rate"] == 0.8
    assert rows[scored_high]["duration_s"] == 300.0
    assert (rows[scored_low]["robot"], rows[scored_low]["task"], rows[scored_low]["outcome"]) == (
        "arm-02",
        "grasp",
        "failure",
    )
    assert rows[unscored_bad]["outcome"] == "failure" and rows[unscored_bad]["robot"] == "arm-02"
    assert rows[unscored_good]["outcome"] == "success"  # a rate of exactly 0.5 is not below it
    assert rows[unscored_good]["robot"] == memory.engine.robot_id  # the robot its memories name
    assert rows[unknown]["outcome"] == "unknown" and rows[unknown]["robot"] == "7"

    def listed(**filters: Any) -> set[str]:
        return {s["session_id"] for s in memory.list_sessions(**filters)["sessions"]}

    assert listed(outcome="failure") == {scored_low, unscored_bad}
    assert listed(robot="arm-02") == {scored_low, unscored_bad}
    assert listed(task="push", outcome="success") == {scored_high, unscored_good}
    assert listed(outcome="failure", threshold=0.98) == {scored_high, scored_low, unscored_bad, unscored_good}
    page = memory.list_sessions(outcome="failure", limit=1)
    assert page["total"] == 2 and len(page["sessions"]) == 1
    failed = {s["session_id"] for s in memory.recent_failures()["sessions"]}
    assert failed == {scored_low, unscored_bad}  # 0.97 with one failed step is no failed episode
    facets = memory.episode_facets()
    assert facets["robots"][0] == {"robot": "arm-02", "sessions": 2}
    assert {t["task"]: t["sessions"] for t in facets["tasks"]} == {"push": 2, "grasp": 2}
    assert memory.session_memories(unscored_bad)["session"]["outcome"] == "failure"
    with pytest.raises(ValidationError, match="outcome"):
        memory.list_sessions(outcome="partial")


@given(
    st.lists(
        st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
        min_size=1,
        max_size=60,
    ),
    st.one_of(st.none(), st.integers(min_value=1, max_value=30)),
)
# Ranges floats cannot hold round widths in: a subnormal value, a span below one unit in the last place.
@example([5e-324], None)
@example([0.0, 5e-324], 3)
@example([1e6, 1e6 + 1e-10], None)
def test_every_value_lands_in_the_bin_whose_edges_hold_it(values: list[float], bins: int | None) -> None:
    edges = bin_edges(min(values), max(values), bins, len(values))
    assert len(edges) >= 2 and all(a < b for a, b in zip(edges, edges[1:], strict=False))
    if bins is not None:
        assert len(edges) - 1 <= bins
    for value in values:
        index = bin_index(edges, value)
        last = index == len(edges) - 2
        assert edges[index] <= value or index == 0
        assert value < edges[index + 1] or (last and value <= max(values))


@given(st.integers(min_value=1, max_value=10_000), st.data())
def test_wilson_interval_holds_the_rate(count: int, data: st.DataObject) -> None:
    successes = data.draw(st.integers(min_value=0, max_value=count))
    low, high = wilson_interval(successes, count)
    assert 0.0 <= low <= successes / count <= high <= 1.0
    assert math.isclose(low, 0.0, abs_tol=1e-12) if successes == 0 else low > 0
