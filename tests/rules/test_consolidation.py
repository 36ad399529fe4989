"""Consolidation planning and decay maths."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from robotmem.formats.serialize import consolidation_report
from robotmem.rules.consolidation import Candidate, decayed_confidence, plan_consolidation


def candidate(
    memory_id: int,
    text: str,
    category: str = "observation",
    confidence: float = 0.8,
    access: int = 0,
    created: str = "2026-01-01",
) -> Candidate:
    return Candidate(memory_id, category, confidence, access, created, text)


def test_fewer_than_three_candidates_plan_nothing() -> None:
    plan = plan_consolidation([candidate(1, "a b c d"), candidate(2, "a b c d")])
    assert plan.merges == ()


def test_complete_link_clusters_and_representative_choice() -> None:
    texts = [
        "the cup slipped when the gripper closed too fast on the wet handle",
        "Basically, the cup really slipped when the gripper closed too fast on the wet handle, as expected, of course",
        "Note: the cup actually just slipped when the gripper closed too fast on the wet handle, as usual, honestly",
    ]
    plan = plan_consolidation(
        [
            candidate(1, texts[0]),
            candidate(2, texts[1], confidence=0.85),
            candidate(3, texts[2]),
            candidate(4, "lidar misses glass doors"),
        ]
    )
    assert len(plan.merges) == 1
    assert plan.merges[0].representative == 2
    assert sorted(plan.merges[0].merged) == [1, 3]
    report = consolidation_report(plan)
    assert report["superseded_count"] == 2 and report["compression_ratio"] == 0.5
    assert 0.5 < report["avg_similarity"] < 1.0


def test_protected_and_confident_memories_are_kept() -> None:
    same = "the block drifts left when pushed from the right side"
    plan = plan_consolidation(
        [
            candidate(1, same, "constraint"),
            candidate(2, same, "gotcha"),
            candidate(3, same, confidence=0.95),
            candidate(4, same),
        ]
    )
    assert plan.merges == ()


def test_memories_that_differ_in_a_number_are_never_merged() -> None:
    plan = plan_consolidation(
        [candidate(i, f"episode {i} failed after the block slid off") for i in range(1, 6)]
    )
    assert plan.merges == ()


def test_categories_are_clustered_separately() -> None:
    same = "the block drifts left when pushed from the right side"
    plan = plan_consolidation(
        [candidate(1, same, "pattern"), candidate(2, same, "observation"), candidate(3, same, "tradeoff")]
    )
    assert plan.merges == ()


@given(st.floats(0.01, 0.95), st.floats(0, 3650), st.floats(0, 0.5))
def test_decay_depends_only_on_elapsed_time(base: float, days: float, rate: float) -> None:
    value = decayed_confidence(base, days, rate)
    assert value == decayed_confidence(base, days, rate)
    assert min(base, 0.01) <= value <= base


def test_decay_counts_whole_days() -> None:
    assert decayed_confidence(0.9, 0.5, 0.1) == 0.9
    assert decayed_confidence(0.9, 2.2, 0.1) == round(0.9 * 0.81, 6)
