"""Recall's filter warnings on both engines (and SQLite's two recall sources): a path no memory in scope
carries, with the nearest path; an operand of another kind than the stored values; a text compared by
order with stored numbers. A filter that finds what it asks for gets no warning."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from robotmem import RobotMemory
from robotmem.config import Settings


@pytest.fixture
def stocked(locate: Callable[[str], Any], settings: Settings, recall_mirror: bool) -> Iterator[RobotMemory]:
    chosen = settings.replace(recall_mirror=recall_mirror)
    with RobotMemory(locate("warnings.db"), embed_backend="hash", settings=chosen) as mem:
        for force, success in ((8, False), (12.5, True), (15, True)):
            mem.learn(
                f"grip at {force} N on the mug",
                context={
                    "params": {"grip_force": {"value": force, "unit": "N"}},
                    "task": {"success": success},
                },
            )
        mem.learn("the shelf is 1.2 m high", collection="lab", context={"place": {"shelf": "left"}})
        yield mem


def test_a_missing_path_names_the_nearest_one(stocked: RobotMemory) -> None:
    found = stocked.recall("grip", context_filter={"task.sucess": True})
    assert found["total"] == 0
    assert found["warnings"] == [
        "context_filter: no memory in collection 'default' carries `task.sucess`; did you mean `task.success`?"
    ]
    every = stocked.recall("grip", context_filter={"place.shelfs": "left"}, collection="*")
    assert every["warnings"] == [
        "context_filter: no memory in collections 'default', 'lab' carries `place.shelfs`; "
        "did you mean `place.shelf`?"
    ]
    assert stocked.recall("grip", context_filter={"place.shelf": "left"}, collection="*")["warnings"] == []


def test_an_operand_of_another_kind_is_named(stocked: RobotMemory) -> None:
    found = stocked.recall("grip", context_filter={"task.success": "true"})
    assert found["total"] == 0
    [warning] = found["warnings"]
    assert "`task.success` holds bool values" in warning and '"true"' in warning


def test_a_text_compared_by_order_with_numbers_is_warned(stocked: RobotMemory) -> None:
    found = stocked.recall("grip", context_filter={"params.grip_force": {"$lt": "abc"}}, n=3)
    assert found["total"] == 3  # SQLite's order: every number before any text (the warning says why)
    [warning] = found["warnings"]
    assert "`params.grip_force` holds number values" in warning and "give a number" in warning


def test_a_filter_that_matches_gets_no_warning(stocked: RobotMemory) -> None:
    for flt in (
        {"task.success": True},
        {"params.grip_force": {"$lt": 13}},
        {"task.success": True, "category": "observation"},
        {"missing.path": {"$exists": False}},
    ):
        assert stocked.recall("grip", context_filter=flt)["warnings"] == [], flt
    assert stocked.recall("grip")["warnings"] == []
