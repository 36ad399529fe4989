"""Strict JSON: whatever was stored or computed, no output holds NaN or Infinity."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.formats import strict_json
from robotmem.query.spatial import distance

any_floats = st.floats(allow_nan=True, allow_infinity=True)
values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), any_floats, st.text(max_size=5)),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=20,
)


def _reject(name: str) -> Any:
    raise ValueError(name)


@given(values)
def test_dumps_always_writes_strict_json(value: Any) -> None:
    text = strict_json.dumps(value)
    parsed = json.loads(text, parse_constant=_reject)  # NaN / Infinity would raise here
    assert parsed == json.loads(json.dumps(strict_json.finite(value)))


def test_non_finite_numbers_become_null() -> None:
    assert strict_json.dumps({"a": [1.5, math.inf, -math.inf, math.nan]}) == '{"a": [1.5, null, null, null]}'
    assert strict_json.loads('{"x": NaN, "y": 1e999, "z": [Infinity, 2.5]}') == {
        "x": None,
        "y": None,
        "z": [None, 2.5],
    }
    assert strict_json.loads(b"[-Infinity, 1e-999, 3]") == [None, 0.0, 3]  # bytes too
    same = {"a": [1, 2.0]}
    assert strict_json.finite(same) is same


def test_distance_from_a_huge_coordinate_is_finite_or_none() -> None:
    assert distance((1e200, 0.0), (0.0, 0.0)) == 1e200
    assert distance((1e308, 0.0), (-1e308, 0.0)) is None
    assert distance((3.0, 4.0), (0.0, 0.0)) == 5.0


def test_recall_distance_is_the_same_with_and_without_the_mirror(tmp_path: Path) -> None:
    found = []
    for mirror in (True, False):
        settings = Settings(home=tmp_path, recall_mirror=mirror)
        with RobotMemory(tmp_path / f"m{mirror}.db", embed_backend="none", settings=settings) as memory:
            memory.learn("the far beacon blinks", context={"spatial": {"p": [1e200, 0.0]}})
            memory.learn("the overflowing beacon blinks", context={"spatial": {"p": [1.7e308, 0.0]}})
            result = memory.recall("beacon", spatial_sort={"field": "spatial.p", "target": [-1e200, 0.0]})
            found.append({hit["content"]: hit.get("spatial_distance") for hit in result["memories"]})
            assert "Infinity" not in strict_json.dumps(result) and "NaN" not in strict_json.dumps(result)
    assert found[0] == found[1]
    assert found[0]["the far beacon blinks"] == 2e200
