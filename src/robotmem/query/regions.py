"""Regions and coordinate frames: which positions a recall may compare, and which lie in a sphere or box.

A position is the list of 2 or 3 numbers at a context path (``spatial.position``); its frame is the text at
the sibling key ``frame`` (``spatial.frame``, a bag's ``header.frame_id``), and ``DEFAULT_FRAME`` when the
context names none. Positions of different frames never compare: a region or a spatial sort names one frame.

A region is a sphere (a circle with two coordinates) ``{"field", "center", "radius", "frame"}`` or a box
``{"field", "min", "max", "frame"}``. A region of d coordinates tests the first d coordinates of a position
(a circle over 3-D positions is a vertical cylinder); a position with fewer coordinates is outside. The test
is exact in float64: a point at exactly ``radius`` (or on a box face) is inside.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from robotmem.errors import ValidationError
from robotmem.query.filters import Any_, Condition, Node

DEFAULT_FRAME = "map"
# Context paths with a spatial index (a schema migration adds one): regions are asked only of these.
INDEXED_PATHS: tuple[tuple[str, ...], ...] = (("spatial", "position"),)
MAX_FRAME_CHARS = 200
# The largest magnitude of a region's coordinates and radius (a trillion metres, past any map frame). Within
# it the squared radius is finite, so a position whose squared distance overflows to infinity is outside,
# as it is; and every bound is a float32 the R*Tree holds without loss of order.
MAX_COORDINATE = 1e12


@dataclass(frozen=True, slots=True)
class Region:
    """A sphere (``radius`` set) or a box (``low``/``high`` set) of positions at ``path`` in ``frame``."""

    path: tuple[str, ...]
    frame: str
    center: tuple[float, ...] = ()
    radius: float | None = None
    low: tuple[float, ...] = ()
    high: tuple[float, ...] = ()

    @property
    def dims(self) -> int:
        """How many coordinates of a position the region tests (2 or 3)."""
        return len(self.center) if self.radius is not None else len(self.low)

    @property
    def bounds(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The region's bounding box (the index is asked for it, then the exact test runs)."""
        if self.radius is not None:
            r = self.radius
            return tuple(c - r for c in self.center), tuple(c + r for c in self.center)
        return self.low, self.high

    def contains(self, points: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
        """For each row of ``points`` (k × ≥ dims, NaN = no coordinate), whether it lies in the region."""
        part = points[:, : self.dims]
        with np.errstate(invalid="ignore", over="ignore"):
            if self.radius is not None:
                offsets = part - np.asarray(self.center, dtype=np.float64)
                inside = np.einsum("ij,ij->i", offsets, offsets) <= self.radius * self.radius
            else:
                low = np.asarray(self.low, dtype=np.float64)
                high = np.asarray(self.high, dtype=np.float64)
                inside = np.all((part >= low) & (part <= high), axis=1)
        return np.asarray(inside & ~np.isnan(part).any(axis=1), dtype=np.bool_)


def frame_path(path: tuple[str, ...]) -> tuple[str, ...]:
    """The context path of the frame of the position at ``path``: the sibling key ``frame``."""
    return (*path[:-1], "frame")


def in_frame(path: tuple[str, ...], frame: str) -> Node:
    """The filter condition "the position at ``path`` is in ``frame``" (no frame named = the default)."""
    at = ("context", *frame_path(path))
    named = Condition(at, "$eq", frame)
    if frame != DEFAULT_FRAME:
        return named
    return Any_((named, Condition(at, "$exists", False)))


def _fail(problem: str, name: str = "region") -> ValidationError:
    return ValidationError(f"{name}: {problem}")


def parse_frame(raw: Any, name: str = "frame") -> str:
    """Return a frame name (None = ``DEFAULT_FRAME``); raise ``ValidationError`` naming ``name``."""
    if raw is None:
        return DEFAULT_FRAME
    if not isinstance(raw, str) or not raw.strip() or len(raw) > MAX_FRAME_CHARS:
        raise ValidationError(
            f"{name}: must be a frame name of 1..{MAX_FRAME_CHARS} characters, got {json.dumps(raw)}"
        )
    return raw


def _numbers(raw: Any, key: str, name: str = "region") -> tuple[float, ...]:
    if not isinstance(raw, list) or len(raw) not in (2, 3) or not all(_is_number(v) for v in raw):
        raise _fail(
            f"{key}must be a list of 2 or 3 finite numbers ([x, y] or [x, y, z]), got {json.dumps(raw)}",
            name,
        )
    if any(abs(v) > MAX_COORDINATE for v in raw):
        raise _fail(f"{key}must be at most {MAX_COORDINATE:g} in magnitude, got {json.dumps(raw)}", name)
    return tuple(float(v) for v in raw)


def parse_radius(raw: Any, name: str, key: str = "") -> float:
    """Return a region's radius: a finite number from 0 to ``MAX_COORDINATE``; raise ``ValidationError``
    naming ``name`` (and ``key`` within it) otherwise."""
    if not _is_number(raw) or not 0 <= raw <= MAX_COORDINATE:
        raise _fail(
            f"{key}must be a number from 0 to {MAX_COORDINATE:g}, got {json.dumps(raw, default=repr)}", name
        )
    return float(raw)


def parse_centre(raw: Any, name: str) -> tuple[float, ...]:
    """Return a region's centre: 2 or 3 finite numbers of magnitude at most ``MAX_COORDINATE``; raise
    ``ValidationError`` naming ``name`` otherwise."""
    return _numbers(raw, "", name)


def parse_region(raw: Any, *, max_bytes: int = 16384) -> Region | None:
    """Return the parsed region for a dict or JSON string (None/empty for none); raise ``ValidationError``
    naming the key: ``field`` an indexed path, ``center`` + ``radius`` ≥ 0 or ``min`` ≤ ``max`` of 2 or 3
    coordinates, ``frame`` a name."""
    if raw is None or raw == "" or raw == {}:
        return None
    if isinstance(raw, str):
        if len(raw) > max_bytes:
            raise _fail(f"is {len(raw)} characters; the limit is {max_bytes}")
        try:
            raw = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            raise _fail("is not valid JSON") from None
    if not isinstance(raw, dict):
        raise _fail(
            'must be an object like {"field": "spatial.position", "center": [x, y, z], "radius": r, "frame": "map"}'
            f" or with min/max, got {type(raw).__name__}"
        )
    unknown = set(raw) - {"field", "center", "radius", "min", "max", "frame"}
    if unknown:
        raise _fail(f"unknown key(s) {sorted(unknown)}; expected field, center, radius, min, max, frame")
    field = raw.get("field", "spatial.position")
    path = tuple(field.split(".")) if isinstance(field, str) else ()
    if path[:1] == ("context",):
        path = path[1:]
    if path not in INDEXED_PATHS:
        indexed = ", ".join(".".join(p) for p in INDEXED_PATHS)
        raise _fail(f"field must be an indexed position path ({indexed}), got {json.dumps(field)}")
    frame = parse_frame(raw.get("frame"), "region.frame")
    sphere = "center" in raw or "radius" in raw
    box = "min" in raw or "max" in raw
    if sphere == box:
        raise _fail("give either center and radius (a sphere or circle) or min and max (a box)")
    if sphere:
        center = _numbers(raw.get("center"), "center ")
        return Region(path, frame, center=center, radius=parse_radius(raw.get("radius"), "region", "radius "))
    low, high = _numbers(raw.get("min"), "min "), _numbers(raw.get("max"), "max ")
    if len(low) != len(high):
        raise _fail(f"min and max must have the same number of coordinates, got {len(low)} and {len(high)}")
    if any(a > b for a, b in zip(low, high, strict=True)):
        raise _fail(f"min must not exceed max on any axis, got min {list(low)} and max {list(high)}")
    return Region(path, frame, low=low, high=high)


def _is_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False
