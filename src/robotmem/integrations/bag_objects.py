"""Objects a bag's detection topic reports, read as sightings: an object id or label, a position, its frame
and the time it was seen, for ``context.object`` (docs/where-and-when.md, "Objects that persist").

Without paths in the map (``ObjectTopic``), messages are read as ``vision_msgs`` detections, any version:

- the items: the message's ``detections`` (``Detection3DArray``), else the message itself (``Detection3D``);
- the object id: the item's tracking id, ``id`` (Humble and later) or ``tracking_id`` (Foxy), when not empty;
- the label: the class of the best-scored hypothesis in ``results`` (``hypothesis.class_id``, or ``id`` in
  Foxy and ROS 1), named through the map's ``labels`` when it lists the class, else the item's ``label``,
  ``class_id`` or ``class_name``;
- the position: the 3-D box centre ``bbox.center.position``, else the best hypothesis' pose
  (``pose.pose.position``), else the item's ``pose.pose.position``, ``pose.position``, ``position``,
  ``point``. A 2-D box (``Detection2D``: its centre has a ``theta``) is in pixels: such detections need
  ``position`` named in the map;
- the frame: the item's ``header.frame_id``, else the message's; the time: the item's header stamp, else
  the message's, else the time the bag recorded it. A stamp more than ``STAMP_DRIFT_NS`` (an hour) from the
  time the bag recorded the message is another clock (simulation time counts from zero): the bag's time
  is taken, and the import warns.

A box without size (``bbox.size`` all zero: a detector that fills only ``results``) gives no position. An
item with neither id nor label names no object and is skipped (the import counts them). A path the map
names must reach a value of its kind: text or an integer for ``id`` and ``label``, 2 or 3 numbers for
``position`` (3 for a 2-D box's detection), a list of messages for ``items``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from robotmem.errors import ValidationError
from robotmem.integrations.bag_map import ObjectTopic
from robotmem.integrations.bag_messages import as_point, field_at, read_frame, read_stamp

# Where a detection's position sits, tried in order when the map names no path (after the 3-D box).
_POSITION_PATHS = (("pose", "pose", "position"), ("pose", "position"), ("position",), ("point",))
_ID_FIELDS = ("id", "tracking_id")
_LABEL_FIELDS = ("label", "class_id", "class_name")
STAMP_DRIFT_NS = 3_600 * 10**9  # a header stamp farther than this from the bag's time is another clock


@dataclass(frozen=True)
class Seen:
    """One sighting read from a detection."""

    t_ns: int
    object_id: str | None
    label: str | None
    position: list[float]
    frame: str | None
    score: float | None


@dataclass
class Sightings:
    """An episode's sightings, at most one per object and frame every ``every_ns`` (0: all) and always the
    latest of each; label-only sightings are one object within ``radius`` of where the label was last seen
    in its frame (``last_seen``'s grouping, the ``object_group_radius`` setting)."""

    every_ns: int
    radius: float = 1.0
    kept: list[Seen] = field(default_factory=list)
    skipped: int = 0  # items that named neither an id nor a label
    drifted: int = 0  # stamps of another clock, replaced by the bag's time
    _last_kept: dict[tuple[Any, ...], int] = field(default_factory=dict)
    _held: dict[tuple[Any, ...], Seen] = field(default_factory=dict)
    _places: dict[tuple[str | None, str | None], list[list[float]]] = field(default_factory=dict)

    def add(self, seen: Seen) -> None:
        key = self._key(seen)
        last = self._last_kept.get(key)
        # Stamps may arrive out of order (a detector's latency): the gap to the last kept is either way.
        if last is None or abs(seen.t_ns - last) >= self.every_ns:
            self.kept.append(seen)
            self._last_kept[key] = seen.t_ns
        held = self._held.get(key)
        if held is None or seen.t_ns >= held.t_ns:
            self._held[key] = seen  # the latest of the object, kept at the end if thinning passed it

    def _key(self, seen: Seen) -> tuple[Any, ...]:
        """The object an id names in a frame; without one, the label's place in the frame within
        ``radius`` of where it was last seen (a label seen in two places is two objects)."""
        if seen.object_id is not None:
            return ("id", seen.object_id, seen.frame)
        places = self._places.setdefault((seen.label, seen.frame), [])
        for i, place in enumerate(places):
            if len(place) == len(seen.position) and math.dist(place, seen.position) <= self.radius:
                places[i] = seen.position
                return ("label", seen.label, seen.frame, i)
        places.append(seen.position)
        return ("label", seen.label, seen.frame, len(places) - 1)

    def done(self) -> list[Seen]:
        """Return the sightings kept and each object's latest, once each, in time order."""
        chosen = {id(seen): seen for seen in [*self.kept, *self._held.values()]}
        return sorted(chosen.values(), key=lambda seen: seen.t_ns)


def read_sightings(message: Any, spec: ObjectTopic, bag_ns: int, into: Sightings) -> list[Seen]:
    """Return the sightings of one message (``into`` counts its unnamed items and drifted stamps); raises
    ``ValidationError`` naming the key and the topic for a path that is not there or not of its kind, and
    for a detection without a position."""
    found: list[Seen] = []
    for item in _items(message, spec):
        hypothesis = _best_hypothesis(item)
        position = _position(item, spec, hypothesis)
        object_id = _name_at(item, spec, "id") if spec.id else _first_text(item, _ID_FIELDS)
        label = _label(item, spec, hypothesis)
        if object_id is None and label is None:
            into.skipped += 1
            continue
        stamp = read_stamp(item) or read_stamp(message) or bag_ns
        if abs(stamp - bag_ns) > STAMP_DRIFT_NS:
            into.drifted += 1
            stamp = bag_ns
        frame = read_frame(item) or read_frame(message)
        found.append(Seen(stamp, object_id, label, position, frame, _score(hypothesis)))
    return found


def _items(message: Any, spec: ObjectTopic) -> list[Any]:
    if not spec.items:
        detections = getattr(message, "detections", None)
        return list(detections) if detections is not None else [message]
    value = _at(message, spec, spec.items, "items", "messages")
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__len__"):
        raise ValidationError(f"objects.items: {spec.items!r} on {spec.topic} is not a list")
    items = list(value)
    if any(isinstance(item, (int, float, str, bytes, np.generic)) for item in items):
        raise ValidationError(
            f"objects.items: {spec.items!r} on {spec.topic} is a list of {type(items[0]).__name__}, not of "
            "detections (messages)"
        )
    return items


def _at(value: Any, spec: ObjectTopic, path: str, key: str, where: str = "detections") -> Any:
    try:
        return field_at(value, path.split("."))
    except LookupError:
        raise ValidationError(f"objects.{key}: {where} on {spec.topic} have no field {path!r}") from None


def _name_at(item: Any, spec: ObjectTopic, key: str) -> str | None:
    """The id or label at the map's path: text (empty: none) or an integer; another kind is an error."""
    path = getattr(spec, key)
    value = _at(item, spec, path, key)
    name = _as_name(value)
    if name is None and not (isinstance(value, str) and not value.strip()):
        raise ValidationError(
            f"objects.{key}: {path!r} on {spec.topic} holds {type(value).__name__}, not text or an integer"
        )
    return name


def _as_name(value: Any) -> str | None:
    """Return an id or class as text: a non-empty string, or an integer written out; else None."""
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return str(int(value))
    return None


def _first_text(item: Any, names: tuple[str, ...]) -> str | None:
    for name in names:
        value = _as_name(getattr(item, name, None))
        if value is not None:
            return value
    return None


def _best_hypothesis(item: Any) -> Any:
    """Return the best-scored entry of ``results`` (``ObjectHypothesisWithPose``), or None."""
    results = getattr(item, "results", None)
    if results is None or len(results) == 0:
        return None
    return max(results, key=lambda result: _score(result) or 0.0)


def _score(result: Any) -> float | None:
    if result is None:
        return None
    score = getattr(getattr(result, "hypothesis", result), "score", None)
    return float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None


def _label(item: Any, spec: ObjectTopic, hypothesis: Any) -> str | None:
    if spec.label:
        name = _name_at(item, spec, "label")
    elif hypothesis is not None:
        name = _as_name(getattr(getattr(hypothesis, "hypothesis", hypothesis), "class_id", None))
        name = name if name is not None else _as_name(getattr(hypothesis, "id", None))
    else:
        name = _first_text(item, _LABEL_FIELDS)
    return None if name is None else spec.labels.get(name, name)


def _position(item: Any, spec: ObjectTopic, hypothesis: Any) -> list[float]:
    flat = hasattr(getattr(getattr(item, "bbox", None), "center", None), "theta")  # a 2-D box: pixels
    if spec.position:
        point = as_point(_at(item, spec, spec.position, "position"))
        if point is None or len(point) not in ((3,) if flat else (2, 3)):
            raise ValidationError(
                f"objects.position: {spec.position!r} on {spec.topic} is not a position of "
                + ("3 numbers (these detections are 2-D boxes, in pixels)" if flat else "2 or 3 numbers")
            )
        return point
    if flat:
        raise ValidationError(
            f"objects.position: detections on {spec.topic} are 2-D boxes, in pixels; name a 3-D position "
            "with objects.position (e.g. results.0.pose.pose.position, when the detector fills it)"
        )
    for candidate in _position_candidates(item, hypothesis):
        point = as_point(candidate)
        if point is not None and len(point) in (2, 3):
            return point
    raise ValidationError(
        f"objects.position: a detection on {spec.topic} has no position (tried bbox.center.position, "
        "results[best].pose.pose.position, pose.pose.position, pose.position, position, point); name it "
        "with objects.position"
    )


def _position_candidates(item: Any, hypothesis: Any) -> list[Any]:
    bbox = getattr(item, "bbox", None)
    size = as_point(getattr(bbox, "size", None))
    # A box without size was not filled: the detector's position, if any, is the hypothesis' pose.
    candidates = [] if size is not None and not any(size) else [_maybe(item, ("bbox", "center", "position"))]
    if hypothesis is not None:
        candidates.append(_maybe(hypothesis, ("pose", "pose", "position")))
    candidates += [_maybe(item, path) for path in _POSITION_PATHS]
    return [c for c in candidates if c is not None]


def _maybe(value: Any, path: tuple[str, ...]) -> Any:
    try:
        return field_at(value, path)
    except LookupError:
        return None


def sighting_item(seen: Seen, topic: str) -> dict[str, Any]:
    """Return the ``save_perceptions`` item of one sighting: a visual perception whose context names the
    object, its position and frame, the detection and its time in the bag (the episode's session adds the
    rest of ``provenance``)."""
    name = seen.label or seen.object_id
    also = f" ({seen.object_id})" if seen.label and seen.object_id else ""
    place = ", ".join(f"{x:.2f}" for x in seen.position)
    spatial: dict[str, Any] = {"position": seen.position} | ({"frame": seen.frame} if seen.frame else {})
    detected = {"topic": topic} | ({"score": seen.score} if seen.score is not None else {})
    return {
        "description": f"Saw {name}{also} at ({place}) in {seen.frame or 'map'}",
        "perception_type": "visual",
        "context": {
            "spatial": spatial,
            "object": {key: value for key, value in (("id", seen.object_id), ("label", seen.label)) if value},
            "detection": detected,
            "provenance": {"t_ns": seen.t_ns},  # beside the episode's, which its session gives
        },
        "observed_at": seen.t_ns / 1e9,
    }
