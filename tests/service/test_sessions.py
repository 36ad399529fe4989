"""end_session consolidation merges repeats of a lesson, never a lesson and its opposite."""

from __future__ import annotations

import pytest

from robotmem import RobotMemory
from robotmem.consolidation import PROTECTED_CATEGORIES

OPPOSITES = [
    (
        "It is safe to move the arm while the safety door is open",
        "It is unsafe to move the arm while the safety door is open",
    ),
    (
        "Hold the gripper open while the arm approaches the cup",
        "Hold the gripper closed while the arm approaches the cup",
    ),
    (
        "Keep the vacuum pump on while the suction cup holds the box",
        "Keep the vacuum pump off while the suction cup holds the box",
    ),
    (
        "Entering the cell is allowed while the conveyor runs",
        "Entering the cell is forbidden while the conveyor runs",
    ),
    ("吸盘吸住箱子时保持真空泵启动", "吸盘吸住箱子时保持真空泵停止"),
    ("抓取玻璃杯前先打开夹爪", "抓取玻璃杯前先关闭夹爪"),
]
# Under learn's Jaccard threshold (both are stored) and over consolidation's (end_session merges them).
REPEAT = (
    "The padded gripper held the wet glass bottle firmly",
    "Our padded gripper really held that wet glass bottle firmly today",
)


def status(memory: RobotMemory, memory_id: int) -> str:
    return str(memory.get_memory(memory_id)["status"])


@pytest.mark.parametrize(("lesson", "opposite"), OPPOSITES)
def test_end_session_never_supersedes_one_of_a_contradicting_pair(
    memory: RobotMemory, lesson: str, opposite: str
) -> None:
    session = memory.start_session()["session_id"]
    first = memory.learn(lesson, session_id=session)
    second = memory.learn(opposite, session_id=session)
    repeats = [memory.learn(text, session_id=session)["memory_id"] for text in REPEAT]
    assert first["status"] == second["status"] == "created"
    assert first["auto_inferred"]["category"] == second["auto_inferred"]["category"]
    assert first["auto_inferred"]["category"] not in PROTECTED_CATEGORIES

    ended = memory.end_session(session)

    assert ended["consolidated"]["superseded_count"] == 1  # the repeat, so consolidation did run
    assert sorted(status(memory, m) for m in repeats) == ["active", "superseded"]
    assert (status(memory, first["memory_id"]), status(memory, second["memory_id"])) == ("active", "active")


@pytest.mark.parametrize(("lesson", "opposite"), OPPOSITES)
def test_an_opposite_written_by_update_is_not_merged_either(
    memory: RobotMemory, lesson: str, opposite: str
) -> None:
    session = memory.start_session()["session_id"]
    learned = memory.learn(lesson, session_id=session)
    other = memory.learn("The battery of robot 3 lasts four hours on the warehouse floor", session_id=session)
    memory.learn("Lidar misses the glass wall of corridor B at night", session_id=session)
    updated = memory.update(
        other["memory_id"], opposite
    )  # update does not deduplicate: only consolidation decides
    assert updated["auto_inferred"]["category"] == learned["auto_inferred"]["category"]

    ended = memory.end_session(session)

    assert ended["consolidated"]["superseded_count"] == 0
    assert (status(memory, learned["memory_id"]), status(memory, other["memory_id"])) == ("active", "active")


def test_consolidation_keeps_the_repeat_recalled_most_even_right_after_the_recall(
    memory: RobotMemory,
) -> None:
    # Equal confidence, so access counts decide; they are queued by recall and written in the
    # background, and end_session must not depend on whether that write has run yet.
    session = memory.start_session()["session_id"]
    older, newer = (memory.learn(text, session_id=session)["memory_id"] for text in REPEAT)
    memory.learn("Lidar misses the glass wall of corridor B at night", session_id=session)  # 3 needed
    assert memory.get_memory(older)["confidence"] == memory.get_memory(newer)["confidence"]
    for _ in range(3):
        hits = memory.recall("padded gripper wet glass bottle", n=1, context_filter={"id": older})
        assert [hit["id"] for hit in hits["memories"]] == [older]

    ended = memory.end_session(session)

    assert ended["consolidated"]["superseded_count"] == 1
    assert (status(memory, older), status(memory, newer)) == ("active", "superseded")
