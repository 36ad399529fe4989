"""Which context values a memory carries and which strings of a query may name one."""

from __future__ import annotations

from robotmem.text.naming import (
    MAX_CJK_CHARS,
    SCAN_CHARS,
    context_values,
    fold_value,
    value_candidates,
)


def test_context_values_are_the_short_strings_outside_params_spatial_and_kind_fields() -> None:
    context = {
        "robot": {"id": "go1-01", "type": "Unitree Go1", "dof": 12},
        "task": {"name": "terrain_walk", "success": True},
        "object": " Gravel Slope ",
        "date": "2026-03-14",
        "env": {"sim_or_real": "real", "site": "Yard B"},
        "source": "learn",
        "params": {"step_height": {"value": 8, "unit": "cm"}},
        "spatial": {"frame": "map"},
        "note": "x" * 80,
        "deep": {"a": {"b": "third level", "c": {"d": "too deep"}}},
        "tags": ["list", "values"],
        "x": "y",
    }
    assert context_values(context) == {
        "go1-01",
        "unitree go1",
        "terrain_walk",
        "gravel slope",
        "2026-03-14",
        "yard b",
        "third level",
    }


def test_values_fold_like_sqlite_lower_and_trim() -> None:
    assert fold_value("  UR5e-01 ") == "ur5e-01"
    assert fold_value("Ärm ÖL") == "Ärm Öl"  # letters outside ASCII keep their case, as lower() does
    assert fold_value("\tTab") == "\ttab"  # only spaces are trimmed


def test_a_latin_value_is_named_only_as_whole_words() -> None:
    named = value_candidates("How did GO1-01 do on the gravel slope on 2026-03-14?")
    assert {"go1-01", "gravel slope", "2026-03-14", "the gravel slope on 2026-03-14"} <= named
    for partial in ("go1-0", "o1-01", "gravel slop", "ravel slope", "2026-03-1"):
        assert partial not in named, partial
    longer = value_candidates("go1-010 on gravel slopes 2026-03-145, mugs")
    assert not {"go1-01", "gravel slope", "2026-03-14", "mug"} & longer
    assert "mug" in value_candidates("the mug.")
    assert "lab bay 2" in value_candidates("Outcomes at the lab  bay 2")  # runs of spaces count as one


def test_a_chinese_value_is_named_anywhere_and_a_latin_one_may_touch_chinese() -> None:
    named = value_candidates("ur10-03处理铝销钉的结果怎么样？")
    assert {"ur10-03", "铝销钉", "销钉", "ur10-03处理"} <= named
    assert "2026-01-27" in value_candidates("2026-01-27那次运行的结果如何？")
    assert "ur10-0" not in named


def test_only_the_start_of_a_long_query_is_scanned() -> None:
    long = "x " * SCAN_CHARS + "go1-01"
    assert "go1-01" not in value_candidates(long)
    chinese = "碎" * (MAX_CJK_CHARS + 1)
    assert "碎" * MAX_CJK_CHARS in value_candidates(chinese)
    assert chinese not in value_candidates(chinese)
