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
  the message's, else the time the bag recorded it.

An item with neither id nor label names no object and is skipped (the import counts them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from robotmem.errors import ValidationError
from robotmem.integrations.bag_map import ObjectTopic
from robotmem.integrations.bag_messages import as_point, field_at, read_frame, read_stamp

# Where a detection's position sits, tried in order when the map names no path (after the 3-D box).
_POSITION_PATHS = (("pose", "pose", "position"), ("pose", "position"), ("position",), ("point",))
_ID_FIELDS = ("id", "tracking_id")
_LABEL_FIELDS = ("label", "class_id", "class_name")
_THINNING_RADIUS = 1.0  # label-only sightings farther apart than this are thinned as two objects


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
    """An episode's sightings, at most one per object every ``every_ns`` and always each object's last."""

    every_ns: int
    kept: list[Seen] = field(default_factory=list)
    skipped: int = 0  # items that named neither an id nor a label
    _last_kept: dict[tuple[Any, ...], int] = field(default_factory=dict)
    _held: dict[tuple[Any, ...], Seen] = field(default_factory=dict)
    _places: dict[tuple[str | None, str | None], list[list[float]]] = field(default_factory=dict)

    def add(self, seen: Seen) -> None:
        key = self._key(seen)
        last = self._last_kept.get(key)
        if last is None or seen.t_ns - last >= self.every_ns:
            self.kept.append(seen)
            self._last_kept[key] = seen.t_ns
            self._held.pop(key, None)
        else:
            self._held[key] = seen

    def _key(self, seen: Seen) -> tuple[Any, ...]:
        """The object an id names; without one, the label's place in the frame within ``_THINNING_RADIUS``
        of where it was last seen (a label seen in two places is two objects, as ``last_seen`` groups)."""
        if seen.object_id is not None:
            return ("id", seen.object_id)
        places = self._places.setdefault((seen.label, seen.frame), [])
        for i, place in enumerate(places):
            if len(place) == len(seen.position) and math.dist(place, seen.position) <= _THINNING_RADIUS:
                places[i] = seen.position
                return ("label", seen.label, seen.frame, i)
        places.append(seen.position)
        return ("label", seen.label, seen.frame, len(places) - 1)

    def done(self) -> list[Seen]:
        """Return the sightings kept and each object's last one, in time order."""
        return sorted([*self.kept, *self._held.values()], key=lambda seen: seen.t_ns)


def read_sightings(message: Any, spec: ObjectTopic, bag_ns: int) -> tuple[list[Seen], int]:
    """Return the sightings of one message and how many of its items named no object; raises
    ``ValidationError`` naming the topic for an item without a position or a path that is not there."""
    found: list[Seen] = []
    unnamed = 0
    for item in _items(message, spec):
        hypothesis = _best_hypothesis(item)
        object_id = _text_at(item, spec, "id") if spec.id else _first_text(item, _ID_FIELDS)
        label = _label(item, spec, hypothesis)
        if object_id is None and label is None:
            unnamed += 1
            continue
        found.append(
            Seen(
                t_ns=read_stamp(item) or read_stamp(message) or bag_ns,
                object_id=object_id,
                label=label,
                position=_position(item, spec, hypothesis),
                frame=read_frame(item) or read_frame(message),
                score=_score(hypothesis),
            )
        )
    return found, unnamed


def _items(message: Any, spec: ObjectTopic) -> list[Any]:
    if spec.items:
        value = _at(message, spec, spec.items, "items")
        if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
            raise ValidationError(f"objects.items: {spec.items!r} on {spec.topic} is not a list")
        return list(value)
    detections = getattr(message, "detections", None)
    return list(detections) if detections is not None else [message]


def _at(value: Any, spec: ObjectTopic, path: str, key: str) -> Any:
    try:
        return field_at(value, path.split("."))
    except LookupError:
        raise ValidationError(f"objects.{key}: messages on {spec.topic} have no field {path!r}") from None


def _text_at(item: Any, spec: ObjectTopic, key: str) -> str | None:
    return _as_name(_at(item, spec, getattr(spec, key), key))


def _as_name(value: Any) -> str | None:
    """Return an id or class as text: a non-empty string, or an integer written out; else None."""
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
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
        name = _text_at(item, spec, "label")
    elif hypothesis is not None:
        name = _as_name(getattr(getattr(hypothesis, "hypothesis", hypothesis), "class_id", None))
        name = name if name is not None else _as_name(getattr(hypothesis, "id", None))
    else:
        name = _first_text(item, _LABEL_FIELDS)
    return None if name is None else spec.labels.get(name, name)


def _position(item: Any, spec: ObjectTopic, hypothesis: Any) -> list[float]:
    if spec.position:
        point = as_point(_at(item, spec, spec.position, "position"))
        if point is None or len(point) not in (2, 3):
            raise ValidationError(
                f"objects.position: {spec.position!r} on {spec.topic} is not a position of 2 or 3 numbers"
            )
        return point
    center = getattr(getattr(item, "bbox", None), "center", None)
    if center is not None and hasattr(center, "theta"):
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
    candidates = [getattr(getattr(getattr(item, "bbox", None), "center", None), "position", None)]
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
