"""Nearest-first ordering of memories by a coordinate stored in their context."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from robotmem.errors import ValidationError
from robotmem.query.regions import DEFAULT_FRAME, parse_frame

MAX_DIMENSIONS = 16


@dataclass(frozen=True, slots=True)
class SpatialSort:
    """Sort by Euclidean distance from ``target`` to the list at ``path`` in the context, among the
    positions in ``frame`` (``query.regions``: other frames' positions count as absent)."""

    path: tuple[str, ...]
    target: tuple[float, ...]
    max_distance: float | None = None
    frame: str = DEFAULT_FRAME


def _fail(problem: str) -> ValidationError:
    return ValidationError(f"spatial_sort: {problem}")


def parse_spatial_sort(raw: Any, *, max_bytes: int = 16384) -> SpatialSort | None:
    """Return the parsed spatial sort for a dict or JSON string (None/empty for none).

    Raises ``ValidationError`` naming the key: ``field`` must be a dot path, ``target`` a list of
    1..16 finite numbers, ``max_distance`` a non-negative number.
    """
    if raw is None or raw == "" or raw == {}:
        return None
    if isinstance(raw, str):
        if len(raw) > max_bytes:
            raise _fail(f"is {len(raw)} characters; the limit is {max_bytes}")
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise _fail(f"is not valid JSON ({exc.msg} at position {exc.pos})") from None
        except RecursionError:
            raise _fail("nests too deeply to be a spatial sort") from None
    if not isinstance(raw, dict):
        raise _fail(
            f'must be an object like {{"field": "spatial.position", "target": [x, y, z]}}, '
            f"got {type(raw).__name__}"
        )
    unknown = set(raw) - {"field", "target", "max_distance", "frame"}
    if unknown:
        raise _fail(f"unknown key(s) {sorted(unknown)}; expected field, target, max_distance, frame")
    field = raw.get("field")
    if not isinstance(field, str) or not field or '"' in field or any(not part for part in field.split(".")):
        raise _fail("field must be a dot path to a coordinate list, e.g. 'spatial.object_position'")
    target = raw.get("target")
    if not isinstance(target, list) or not 1 <= len(target) <= MAX_DIMENSIONS:
        raise _fail(f"target must be a list of 1..{MAX_DIMENSIONS} numbers, got {json.dumps(target)}")
    if not all(_is_number(v) for v in target):
        raise _fail(f"target must contain only finite numbers, got {json.dumps(target)}")
    max_distance = raw.get("max_distance")
    if max_distance is not None and (not _is_number(max_distance) or max_distance < 0):
        raise _fail(f"max_distance must be a non-negative number, got {json.dumps(max_distance)}")
    path = tuple(field.split("."))
    if path[0] == "context":
        path = path[1:]
    return SpatialSort(
        path,
        tuple(float(v) for v in target),
        None if max_distance is None else float(max_distance),
        parse_frame(raw.get("frame"), "spatial_sort.frame"),
    )


def _is_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an int beyond the float range
        return False


def coordinates_at(context: Any, path: tuple[str, ...]) -> tuple[float, ...] | None:
    """Return the numeric list found at ``path`` in ``context``, or None if absent or not numeric."""
    node = context
    for key in path:
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    if isinstance(node, dict) and "value" in node:
        node = node["value"]
    if isinstance(node, list) and node and all(_is_number(v) for v in node):
        return tuple(float(v) for v in node)
    return None


def distances(points: npt.NDArray[np.float64], target: Sequence[float]) -> npt.NDArray[np.float64]:
    """``distance`` of each row of ``points`` (k × len(target)) from ``target``, vectorised: the same
    operations in the same order (squares summed left to right), so the same floats. A distance that
    is not finite comes back as NaN (``distance`` gives None)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        offsets = points - np.asarray(target, dtype=np.float64)
        scale = np.max(np.abs(offsets), axis=1, initial=0.0)
        unit = np.divide(offsets, scale[:, None], out=np.zeros_like(offsets), where=scale[:, None] > 0)
        total = np.zeros(len(points), dtype=np.float64)
        for column in range(unit.shape[1]):
            total = total + unit[:, column] * unit[:, column]
        far = scale * np.sqrt(total)
    return np.where(np.isfinite(far), far, np.nan)


def distance(point: tuple[float, ...] | None, target: tuple[float, ...]) -> float | None:
    """Return the Euclidean distance, or None when the point is missing, of another dimension, or so
    far away that the distance is not a finite float.

    The offsets are divided by the largest before squaring, so a stored coordinate of 1e200 gives
    1e200, not infinity; the recall mirror computes the same expression in the same order.
    """
    if point is None or len(point) != len(target):
        return None
    offsets = [a - b for a, b in zip(point, target, strict=True)]
    scale = max(abs(offset) for offset in offsets)
    if not math.isfinite(scale):
        return None
    if scale == 0:
        return 0.0
    far = scale * math.sqrt(sum((offset / scale) ** 2 for offset in offsets))
    return far if math.isfinite(far) else None
