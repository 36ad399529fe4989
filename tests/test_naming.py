"""Which context values a query names."""

from __future__ import annotations

from robotmem.naming import context_values, named_in


def test_context_values_are_the_short_strings_outside_params_and_spatial() -> None:
    context = {
        "robot": {"id": "go1-01", "type": "Unitree Go1", "dof": 12},
        "task": {"name": "terrain_walk", "success": True},
        "object": "Gravel Slope",
        "date": "2026-03-14",
        "params": {"step_height": {"value": 8, "unit": "cm"}},
        "spatial": {"frame": "map"},
        "note": "x" * 80,
        "deep": {"a": {"b": {"c": "too deep"}}},
        "tags": ["list", "values"],
    }
    assert context_values(context) == {"go1-01", "unitree go1", "terrain_walk", "gravel slope", "2026-03-14"}


def test_a_latin_value_is_named_only_as_whole_words() -> None:
    values = frozenset({"go1-01", "gravel slope", "2026-03-14", "mug"})
    assert named_in("How did GO1-01 do on the gravel slope on 2026-03-14?", values) == {
        "go1-01",
        "gravel slope",
        "2026-03-14",
    }
    assert named_in("go1-010 on gravel slopes 2026-03-145, mugs", values) == frozenset()
    assert named_in("the mug.", values) == {"mug"}


def test_a_chinese_value_is_named_as_a_substring() -> None:
    assert named_in("现在铝销钉应该用多大的插入力？", frozenset({"铝销钉", "轴承座"})) == {"铝销钉"}
