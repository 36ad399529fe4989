"""A query's key word outranks a placeholder noun: "why did the object slip" under a failure filter."""

from __future__ import annotations

import random

from robotmem import RobotMemory
from robotmem.service.recall.scoring import bm25_words


def _arm_log(mem: RobotMemory) -> int:
    """Seventy pick episodes like the demo's, each in a session: a summary, a trajectory perception and, on a
    failure, the reason: "the cup slipped" below 12.5 N (never naming "object"), "crushed the object" above.
    Returns how many memories say the cup slipped."""
    rng = random.Random(7)
    slips = 0
    for episode in range(1, 71):
        force = round(rng.uniform(4.0, 20.0), 1)
        success = abs(force - 12.5) < 2.5
        session = mem.start_session(context={"robot": {"id": "arm-01"}, "task": {"name": "pick"}})[
            "session_id"
        ]
        mem.learn(
            f"Episode {episode}: grip_force={force}N, {'success' if success else 'failed'}, {20 + episode % 40} steps",
            context={"task": {"name": "pick", "success": success}},
            session_id=session,
        )
        outcome = "success" if success else ("slip" if force < 12.5 else "crush")
        mem.save_perception(
            f"Grasp trajectory of episode {episode}: {outcome}",
            perception_type="procedural",
            session_id=session,
        )
        if not success:
            slips += force < 12.5
            reason = (
                f"the cup slipped from the gripper at grip_force={force}N"
                if force < 12.5
                else f"grip_force={force}N crushed the object"
            )
            mem.learn(
                f"Episode {episode} failed: {reason}",
                context={"task": {"success": False}},
                session_id=session,
            )
        mem.end_session(session, outcome_score=0.9 if success else 0.2)
    return slips


def test_placeholder_nouns_leave_the_bm25_query_unless_alone() -> None:
    assert bm25_words("why did the object slip", "basic") == [
        w for w in bm25_words("why did it slip", "basic")
    ]
    assert "slip" in bm25_words("why did the object slip", "basic")
    assert bm25_words("object", "basic") == ["object"]
    assert "东西" not in bm25_words("那个东西为什么掉了", "basic")


def test_why_did_the_object_slip_finds_the_slips(bm25_memory: RobotMemory, memory: RobotMemory) -> None:
    for mem in (bm25_memory, memory):  # BM25 alone, and hybrid with the hashing embedder
        slips = _arm_log(mem)
        assert slips >= 20
        for query in ("why did the object slip", "slip", "object slip"):
            found = mem.recall(query, n=5, context_filter={"task.success": False}, min_relevance=0)
            assert [("slipped" in m["content"]) for m in found["memories"]] == [True] * 5, query
