"""end_session consolidation merges wordings of one lesson, never a lesson and its opposite."""

from __future__ import annotations

import pytest
from tests.lessons import OPPOSITES

from robotmem import RobotMemory
from robotmem.rules.consolidation import PROTECTED_CATEGORIES
from robotmem.text.classify import classify_category

# Pairs consolidation could merge at all: one category, not a protected one.
MERGEABLE = [
    (lesson, opposite)
    for lesson, opposite in OPPOSITES
    if classify_category(lesson) == classify_category(opposite) not in PROTECTED_CATEGORIES
]
# One lesson with filler words: under learn's Jaccard threshold (both are stored) and over consolidation's
# (end_session merges them).
REPEAT = (
    "The padded gripper held the wet glass bottle firmly",
    "Basically, the padded gripper really held the wet glass bottle firmly, as expected",
)
# learn calls the second a duplicate of the first; with its Jaccard check off (above 1) both are stored,
# so end_session has a repeat to merge.
LEARN_KEEPS_REPEATS = {"dedup_jaccard": 1.5}


def status(memory: RobotMemory, memory_id: int) -> str:
    return str(memory.get_memory(memory_id)["status"])


def test_most_opposites_can_be_merged_at_all() -> None:
    assert len(MERGEABLE) >= len(OPPOSITES) - 1


@pytest.mark.parametrize(("lesson", "opposite"), MERGEABLE)
def test_end_session_never_supersedes_one_of_a_contradicting_pair(
    memory: RobotMemory, lesson: str, opposite: str
) -> None:
    memory.settings = memory.settings.replace(**LEARN_KEEPS_REPEATS)
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


@pytest.mark.parametrize(("lesson", "opposite"), MERGEABLE)
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
    memory.settings = memory.settings.replace(**LEARN_KEEPS_REPEATS)
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


@pytest.mark.slow
def test_with_the_bundled_model_no_opposite_is_merged_and_the_repeat_is(real_memory: RobotMemory) -> None:
    real_memory.settings = real_memory.settings.replace(**LEARN_KEEPS_REPEATS)
    for number, (lesson, opposite) in enumerate(MERGEABLE):
        collection = f"pair-{number}"
        session = real_memory.start_session(collection=collection)["session_id"]
        learned = [
            real_memory.learn(text, collection=collection, session_id=session)
            for text in (lesson, opposite, *REPEAT)
        ]
        assert [r["status"] for r in learned] == ["created"] * 4, (lesson, opposite)

        ended = real_memory.end_session(session)

        assert ended["consolidated"]["superseded_count"] == 1, (lesson, opposite)
        statuses = [status(real_memory, r["memory_id"]) for r in learned]
        assert statuses[:2] == ["active", "active"] and sorted(statuses[2:]) == ["active", "superseded"]
