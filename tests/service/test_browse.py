"""The read-only views (``service/browse.py``): totals, listings and their pages, sessions, failures, positions."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from tests.conftest import FakeClock

from robotmem import NotFoundError, RobotMemory, ValidationError


def seed(memory: RobotMemory, clock: FakeClock) -> dict[str, Any]:
    """A small robot history: two sessions (one failed), facts with positions, a perception."""
    good = memory.start_session(context={"robot": {"id": "arm-01"}})["session_id"]
    first = memory.learn(
        "grip_force=12.5N yields highest grasp success rate",
        context={
            "params": {"grip_force": {"value": 12.5, "unit": "N"}},
            "spatial": {"object_position": [1.3, 0.7, 0.42]},
            "robot": {"id": "arm-01", "type": "UR5"},
            "task": {"name": "grasp", "success": True},
        },
    )["memory_id"]
    perception = memory.save_perception(
        "Grasp trajectory: 30 steps, success",
        perception_type="procedural",
        data={"sampled_actions": [[0.1, -0.3, 0.05, 0.8]]},
        metadata={"hz": 10},
    )["memory_id"]
    memory.end_session(good, outcome_score=0.9)
    clock.advance(hours=1)
    bad = memory.start_session(context={"robot": {"id": "arm-01"}})["session_id"]
    failed = memory.learn(
        "Episode 3: failed, reward=-50, 50 steps",
        context={"spatial": {"object_position": [0.2, 0.1, 0.42]}, "task": {"success": False}},
    )["memory_id"]
    lesson = memory.learn("the block slid because the table was waxed")["memory_id"]
    memory.end_session(bad, outcome_score=0.1)
    return {
        "good": good,
        "bad": bad,
        "first": first,
        "perception": perception,
        "failed": failed,
        "lesson": lesson,
    }


def test_every_view_reports_the_history(memory: RobotMemory, clock: FakeClock) -> None:
    ids = seed(memory, clock)
    stats = memory.stats()
    assert stats["memories"] == {
        "total": 4,
        "active": 4,
        "by_status": {"active": 4},
        "facts": 3,
        "perceptions": 1,
    }
    assert stats["sessions"] == {"total": 2, "active": 0, "ended": 2}
    assert [o["outcome_score"] for o in stats["session_outcomes"]] == [0.9, 0.1]  # oldest first
    assert [o["success_rate"] for o in stats["session_outcomes"]] == [1.0, 0.0]
    assert stats["spatial_fields"] == ["spatial.object_position"]
    assert {c["category"] for c in stats["categories"]} >= {"perception"}
    assert stats["last_24h"] == 4 and stats["collection"] is None

    listing = memory.list_memories()
    assert set(listing) == {"memories", "total", "limit", "offset"} and listing["total"] == 4
    assert {"id", "content", "context", "params", "spatial", "robot", "task", "status"} <= set(
        listing["memories"][0]
    )

    sessions = memory.list_sessions()["sessions"]
    assert [s["session_id"] for s in sessions] == [ids["bad"], ids["good"]]
    assert sessions[0]["outcome_score"] == 0.1 and sessions[1]["success_rate"] == 1.0
    timeline = memory.session_memories(ids["good"])
    assert timeline["session"]["session_id"] == ids["good"]
    assert [m["id"] for m in timeline["memories"]] == [ids["first"], ids["perception"]] and timeline[
        "total"
    ] == 2
    with pytest.raises(NotFoundError, match="session_id"):
        memory.session_memories("no-such-session")

    (row,) = memory.collections()["collections"]
    assert (row["collection"], row["memories"], row["active"], row["sessions"]) == ("default", 4, 4, 2)
    assert sum(c["count"] for c in memory.categories()["categories"]) == 4

    failures = memory.recent_failures()
    assert [s["session_id"] for s in failures["sessions"]] == [ids["bad"]]
    assert {m["id"] for m in failures["memories"]} >= {ids["failed"], ids["lesson"]}
    assert ids["first"] not in {m["id"] for m in failures["memories"]}

    spatial = memory.spatial_points("spatial.object_position")
    assert spatial["field"] == "spatial.object_position"
    assert {(p["memory_id"], p["success"]) for p in spatial["points"]} == {
        (ids["first"], True),
        (ids["failed"], False),
    }


def test_pagination_edges(memory: RobotMemory, clock: FakeClock) -> None:
    created = []
    for i in range(7):
        created.append(memory.learn(f"waypoint {i} reached at pose {i * 10} cm")["memory_id"])
        clock.advance(minutes=1)
    pages = [memory.list_memories(limit=3, offset=o) for o in (0, 3, 6, 7, 100)]
    assert [len(p["memories"]) for p in pages] == [3, 3, 1, 0, 0]
    assert all(p["total"] == 7 for p in pages)
    seen = [m["id"] for p in pages for m in p["memories"]]
    assert seen == list(reversed(created))  # newest first, no overlap, nothing lost
    assert [m["id"] for m in memory.list_memories(limit=500, order="oldest")["memories"]] == created
    assert memory.list_memories(limit=1)["memories"][0]["id"] == created[-1]
    for arguments, field in (({"limit": 0}, "limit"), ({"limit": 501}, "limit"), ({"offset": -1}, "offset")):
        with pytest.raises(ValidationError, match=field):
            memory.list_memories(**arguments)
    assert memory.list_sessions(limit=1, offset=5) == {"sessions": [], "total": 0, "limit": 1, "offset": 5}


def test_memory_filters(memory: RobotMemory, clock: FakeClock) -> None:
    fact = memory.learn("never exceed 20 N on glass")["memory_id"]
    clock.advance(days=2)
    tactile = memory.save_perception("fingertip pressure spike", perception_type="tactile")["memory_id"]
    visual = memory.save_perception("camera sees the red block", perception_type="visual")["memory_id"]
    other = memory.learn("charging dock moved to bay 2", collection="lab")["memory_id"]
    gone = memory.learn("the arm reaches 2 m")["memory_id"]
    memory.forget(gone, "the reach is 0.85 m")

    def ids(**arguments: Any) -> set[int]:
        return {m["id"] for m in memory.list_memories(**arguments)["memories"]}

    assert ids(type="perception") == {tactile, visual}
    assert ids(perception_type="tactile") == {tactile}
    assert ids(collection="lab") == {other}
    assert ids(status="invalidated") == {gone}
    assert gone in ids(status="any") and gone not in ids()
    assert ids(category="constraint") == {fact}
    cutoff = (clock.now - timedelta(days=1)).isoformat()
    assert fact not in ids(since=cutoff) and tactile in ids(since=cutoff)
    assert ids(until=cutoff) == {fact}
    confidences = {m["id"]: m["confidence"] for m in memory.list_memories()["memories"]}
    low = min(confidences.values())
    assert ids(max_confidence=low) == {i for i, c in confidences.items() if c <= low}
    assert ids(min_confidence=1.0) == set()
    with pytest.raises(ValidationError, match="min_confidence"):
        memory.list_memories(min_confidence=0.9, max_confidence=0.1)
    with pytest.raises(ValidationError, match="perception_type"):
        memory.list_memories(perception_type="smell")
