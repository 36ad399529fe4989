"""Reading deserialised ROS messages, whatever their type: a field by its path, a point, a frame, a stamp."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from robotmem.query.regions import MAX_FRAME_CHARS


def field_at(message: Any, path: Sequence[str]) -> Any:
    """Return the attribute (or key, or list index) at ``path`` in a deserialised message; raises
    ``LookupError``."""
    value = message
    for part in path:
        if isinstance(value, Mapping):
            value = value[part]
        elif hasattr(value, part):
            value = getattr(value, part)
        elif part.isdigit() and isinstance(value, (list, tuple, np.ndarray)) and int(part) < len(value):
            value = value[int(part)]  # a list index: results.0.hypothesis
        else:
            raise LookupError(part)
    return value


def is_quaternion(value: Any) -> bool:
    """Return True for a Quaternion-like object (``x``, ``y``, ``z`` and ``w``): an orientation."""
    return all(hasattr(value, axis) for axis in ("x", "y", "z", "w"))


def as_point(value: Any) -> list[float] | None:
    """Return a coordinate list from a Point/Vector3-like object, a sequence or a number, else None.

    A quaternion is an orientation, not a point: it gives None (``read_pose`` says so).
    """
    if is_quaternion(value):
        return None
    if hasattr(value, "x") and hasattr(value, "y"):
        return [float(value.x), float(value.y)] + ([float(value.z)] if hasattr(value, "z") else [])
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [float(value)]
    if isinstance(value, (str, bytes)):
        return None
    try:
        return [float(v) for v in value]
    except (TypeError, ValueError):
        return None


def read_frame(message: Any) -> str | None:
    """Return the coordinate frame of a stamped message (``header.frame_id``), else None.

    A leading ``/`` (ROS 1's ``/map``) is dropped, as tf2 does; an empty or over-long name is no frame.
    """
    try:
        frame_id = field_at(message, ("header", "frame_id"))
    except LookupError:
        return None
    if not isinstance(frame_id, str):
        return None
    name = frame_id.strip().lstrip("/")
    return name if name and len(name) <= MAX_FRAME_CHARS else None


def read_stamp(message: Any) -> int | None:
    """Return ``header.stamp`` in nanoseconds since the epoch, or None when the message has no stamp or a
    zero one (a publisher that left it unset)."""
    try:
        stamp = field_at(message, ("header", "stamp"))
        seconds = int(getattr(stamp, "sec", getattr(stamp, "secs", 0)))
        nanoseconds = int(getattr(stamp, "nanosec", getattr(stamp, "nsecs", 0)))
    except (LookupError, TypeError, ValueError):
        return None
    total = seconds * 1_000_000_000 + nanoseconds
    return total if total > 0 else None
