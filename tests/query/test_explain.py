"""The wording and rules of recall's filter warnings (pure)."""

from __future__ import annotations

from robotmem.query.explain import (
    context_conditions,
    context_paths,
    kind_mismatch,
    kinds_at,
    missing_path,
    nearest_path,
    needs_values,
)
from robotmem.query.filters import parse_filter

CONTEXTS = [
    {"task": {"success": True, "name": "pick"}, "params": {"grip_force": {"value": 12.5, "unit": "N"}}},
    {"task": {"success": False}, "spatial": {"position": [1, 2, 3]}},
]


def test_context_conditions_skip_record_fields_and_reach_every_branch() -> None:
    node = parse_filter(
        {"robot_id": "a", "$or": [{"task.success": True}, {"$not": {"params.grip_force": {"$lt": 3}}}]}
    )
    found = [(c.path, c.operator) for c in context_conditions(node)]
    assert found == [("task.success", "$eq"), ("params.grip_force", "$lt")]
    assert context_conditions(parse_filter({"category": "failure"})) == []


def test_paths_kinds_and_the_nearest_path() -> None:
    paths = context_paths(CONTEXTS)
    assert {"task", "task.success", "params.grip_force.value", "spatial.position"} <= paths
    assert nearest_path("task.sucess", paths) == "task.success"
    assert nearest_path("zzz.qqq", paths) is None
    assert kinds_at(CONTEXTS, "task.success") == {"bool"}
    assert kinds_at(CONTEXTS, "params.grip_force") == {"number"}  # compared by its value
    assert kinds_at(CONTEXTS, "spatial.position") == {"list"}


def test_the_warnings_say_what_to_do() -> None:
    [typo] = context_conditions(parse_filter({"task.sucess": True}))
    assert (
        missing_path(typo, "collection 'default'", context_paths(CONTEXTS))
        == "context_filter: no memory in collection 'default' carries `task.sucess`; did you mean `task.success`?"
    )
    [text_range] = context_conditions(parse_filter({"params.grip_force": {"$lt": "abc"}}))
    assert needs_values([text_range])
    warning = kind_mismatch(text_range, {"number"}, 1)
    assert warning is not None and "every number sorts before any text" in warning and "1 memory" in warning
    [quoted] = context_conditions(parse_filter({"task.success": "true"}))
    assert not needs_values([quoted])
    said = kind_mismatch(quoted, {"bool"}, 200)
    assert said == (
        "context_filter: `task.success` holds bool values (in the latest 200 memories carrying it), "
        'but $eq compares it with "true", which none of them is'
    )


def test_kinds_that_can_meet_give_no_warning() -> None:
    def mismatch(filter_: dict[str, object], stored: set[str]) -> str | None:
        [condition] = context_conditions(parse_filter(filter_))
        return kind_mismatch(condition, stored, 10)

    assert mismatch({"task.success": True}, {"bool"}) is None
    assert mismatch({"task.success": 1}, {"bool"}) is None  # SQLite stores true as 1
    assert mismatch({"x": {"$in": ["a", 1]}}, {"number"}) is None
    assert mismatch({"x": None}, {"text"}) is None
    assert mismatch({"x": "a"}, {"text", "null"}) is None
    assert mismatch({"x": {"$exists": True}}, {"text"}) is None
    assert mismatch({"x": {"$between": [1, 5]}}, {"text"}) is not None
    assert mismatch({"x": {"$gt": "b"}}, {"text"}) is None
