"""The vector rule (``robotmem.query.vectors``): finite, the model's dimension, not all zero, unit length."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from robotmem.errors import ValidationError
from robotmem.query.vectors import (
    UNIT_TOLERANCE,
    stored_vector_problem,
    unit_rows,
    unit_vector,
    vector_problem,
)

finite32 = st.floats(allow_nan=False, allow_infinity=False, width=32)


@given(arrays(np.float32, st.integers(1, 16), elements=finite32))
def test_a_finite_vector_with_a_direction_becomes_unit_length_and_keeps_it(vector: np.ndarray) -> None:
    length = float(np.linalg.norm(vector.astype(np.float64)))
    if length < 1e-12:
        with pytest.raises(ValidationError, match="all zeros"):
            unit_vector(vector, len(vector))
        return
    unit = unit_vector(vector, len(vector))
    assert unit.dtype == np.float32 and unit.shape == vector.shape
    assert abs(float(np.linalg.norm(unit.astype(np.float64))) - 1.0) < 1e-5
    cosine = float(np.dot(unit.astype(np.float64), vector.astype(np.float64))) / length
    assert cosine == pytest.approx(1.0, abs=1e-5)
    assert stored_vector_problem(unit.astype("<f4").tobytes(), len(vector)) is None


@pytest.mark.parametrize(
    ("vector", "dim", "problem"),
    [
        ([0.0, 0.0, 0.0], 3, "all zeros"),
        ([1e-30, 0.0, 0.0], 3, "all zeros"),
        ([1.0, math.nan, 0.0], 3, "NaN or infinite"),
        ([1.0, math.inf, 0.0], 3, "NaN or infinite"),
        ([1.0, 0.0], 3, "has 2 dimensions; the model has 3"),
        ([[1.0, 0.0, 0.0]], 3, "has 1x3 dimensions"),
        (["a", "b", "c"], 3, "not a vector of real numbers"),
    ],
)
def test_a_vector_that_cannot_be_scaled_is_refused_naming_the_field(
    vector: list[object], dim: int, problem: str
) -> None:
    assert problem in (vector_problem(vector, dim) or "")
    with pytest.raises(ValidationError, match=rf"^embedding: .*{problem}"):
        unit_vector(vector, dim, "embedding")


def test_rows_are_checked_one_by_one_and_named() -> None:
    assert unit_rows([[3.0, 4.0], [0.0, 2.0]], 2).tolist() == [
        [0.6000000238418579, 0.800000011920929],
        [0.0, 1.0],
    ]
    with pytest.raises(ValidationError, match=r"vector\[1\]: is all zeros"):
        unit_rows([[3.0, 4.0], [0.0, 0.0]], 2)


def test_a_stored_vector_must_be_unit_length_within_the_tolerance() -> None:
    def blob(values: list[float]) -> bytes:
        return np.asarray(values, dtype="<f4").tobytes()

    assert stored_vector_problem(blob([0.6, 0.8]), 2) is None
    assert stored_vector_problem(blob([0.6, 0.8 + UNIT_TOLERANCE * 2]), 2) == "has length 1.0016, not 1"
    assert stored_vector_problem(blob([3e6, 4e6]), 2) == "has length 5e+06, not 1"
    assert stored_vector_problem(blob([0.0, 0.0]), 2) == "is all zeros (no direction to compare)"
    assert stored_vector_problem(blob([0.6, 0.8, 0.0]), 2) == "has 3 dimensions; the model has 2"
    assert stored_vector_problem(b"\x00\x01\x02", 2) == "is not a list of float32 values"
    assert stored_vector_problem("text", 2) == "is not a list of float32 values"
