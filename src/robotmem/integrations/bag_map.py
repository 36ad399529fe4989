"""The topic map of a bag import: which topics fill an episode's memory, and where episodes begin and end.

Built in Python (``BagMap``, ``Boundaries``) or read from a TOML or JSON map file (``load_map``)::

    [episodes]
    marker = "/episode"            # or windows = [[0.0, 12.5], ...], or gap_topic = "/joint_states"
    [poses]
    object = "/object_pose"        # or {topic = "/object_pose", field = "pose.position"}
    [joints]
    topic = "/joint_states"
    [outcome]
    topic = "/outcome"
    [objects]
    topic = "/detections"          # or {topic, every_s, items, id, label, position, labels}
    [robot]
    id = "arm-01"
    [task]
    name = "pick"

Nothing here reads a bag, so the map is checked before the bag is opened.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robotmem.errors import ValidationError
from robotmem.formats.validation import check_context_keys, context_key_problem

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib


MAX_SECONDS = 9.2e9  # a bag's clock counts nanoseconds in 64 bits: about 292 years
MAX_MAP_BYTES = 1024 * 1024


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


@dataclass(frozen=True)
class PoseTopic:
    """A topic whose messages give a position: ``field`` is a dot path into the message (auto when None)."""

    name: str
    topic: str
    field: str | None = None


@dataclass(frozen=True)
class ObjectTopic:
    """A topic whose messages report objects seen (``vision_msgs`` detection arrays, or any message): each
    detection becomes a sighting, a perception with ``context.object`` and ``spatial.position``.

    ``items``, ``id``, ``label`` and ``position`` are dot paths (a list index as a number:
    ``results.0.hypothesis.class_id``) into a message and into each item; None reads ``vision_msgs``
    (``integrations/bag_objects.py``). ``labels`` names classes (``{"47": "cup"}``); ``every_s`` keeps at
    most one sighting of an object per that many seconds (0: every one), and always its last in an episode.
    """

    topic: str
    every_s: float = 1.0
    items: str | None = None
    id: str | None = None
    label: str | None = None
    position: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class BagMap:
    """Which topics fill which parts of an episode's memory."""

    poses: tuple[PoseTopic, ...] = ()
    layout: tuple[str, ...] | None = None  # poses joined into spatial.layout_initial; None: all, in order
    joints: str | None = None  # sensor_msgs/JointState topic, sampled into a procedural perception
    joint_samples: int = 10
    outcome: str | None = None  # std_msgs/Bool, std_msgs/String (a word or JSON), or any message
    outcome_field: str = "data"
    robot: Mapping[str, Any] = field(default_factory=dict)
    task: Mapping[str, Any] = field(default_factory=dict)
    objects: ObjectTopic | None = None  # a detection topic, read into sightings of objects

    def topics(self) -> list[str]:
        """Return every topic the map reads."""
        named = [p.topic for p in self.poses] + [t for t in (self.joints, self.outcome) if t]
        named += [self.objects.topic] if self.objects else []
        return list(dict.fromkeys(named))


@dataclass(frozen=True)
class Boundaries:
    """How a bag is cut into episodes; exactly one of ``windows``, ``marker`` or ``gap_topic``.

    ``windows`` are ``(start, end)`` seconds from the bag's start; each must hold a message of a read
    topic. A ``marker`` message whose ``marker_field`` equals ``start_value`` opens an episode and one
    equal to ``end_value`` closes it; an episode without its end ends at the next start or with the bag
    (with ``end_value`` None that is the rule, else a mistake the import reports). On ``gap_topic``, a
    silence longer than ``gap_s`` ends one episode's activity and the next message starts another's;
    each silence is split in its middle, so an episode's window also holds what is published just
    before its activity (initial poses) and just after it (the outcome).
    """

    windows: tuple[tuple[float, float], ...] = ()
    marker: str | None = None
    marker_field: str = "data"
    start_value: str = "start"
    end_value: str | None = "end"
    gap_topic: str | None = None
    gap_s: float = 1.0

    def topics(self) -> list[str]:
        """Return the topic the boundaries read, if any."""
        return [t for t in (self.marker, self.gap_topic) if t]


def map_from_dict(raw: Mapping[str, Any]) -> tuple[BagMap, Boundaries]:
    """Return the topic map and boundaries of a map file's content; raises ``ValidationError``.

    Keys: ``poses`` (name → topic, or ``{topic, field}``), ``layout`` (pose names), ``joints``
    (a topic, or ``{topic, samples}``), ``outcome`` (a topic, or ``{topic, field}``), ``objects`` (a
    topic, or ``{topic, every_s, items, id, label, position, labels}``), ``robot``,
    ``task`` and ``episodes`` (``windows``, or ``marker`` with ``field`` / ``start`` / ``end``, or
    ``gap_topic`` with ``gap_s``). Every value is checked for its kind and range, naming its key.
    """
    known = {"poses", "layout", "joints", "outcome", "objects", "robot", "task", "episodes"}
    if unknown := sorted(set(raw) - known):
        raise ValidationError(f"map: unknown key {unknown[0]!r}; expected {', '.join(sorted(known))}")
    poses = []
    for name, spec in _table(raw.get("poses", {}), "map.poses").items():
        if isinstance(spec, str):
            poses.append(PoseTopic(str(name), spec))
        elif isinstance(spec, Mapping) and isinstance(spec.get("topic"), str):
            where = _optional_text(spec.get("field"), f"map.poses.{name}.field")
            poses.append(PoseTopic(str(name), spec["topic"], where))
        else:
            raise ValidationError(
                f"map.poses.{name}: expected a topic or {{topic, field}}, got {_shown(spec)}"
            )
    joints, samples = _topic_and(raw.get("joints"), "samples", 10, "joints")
    outcome, outcome_field = _topic_and(raw.get("outcome"), "field", "data", "outcome")
    layout = raw.get("layout")
    if layout is not None and not (isinstance(layout, list) and all(isinstance(x, str) for x in layout)):
        raise ValidationError(f"map.layout: expected a list of pose names, got {_shown(layout)}")
    bag_map = BagMap(
        poses=tuple(poses),
        layout=None if layout is None else tuple(layout),
        joints=joints,
        joint_samples=samples,
        outcome=outcome,
        outcome_field=_text(outcome_field, "map.outcome.field"),
        robot=_table(raw.get("robot", {}), "map.robot"),
        task=_table(raw.get("task", {}), "map.task"),
        objects=_objects(raw.get("objects")),
    )
    if bag_map.layout and (missing := [n for n in bag_map.layout if n not in {p.name for p in poses}]):
        raise ValidationError(f"map.layout: {missing[0]!r} is not a pose name")
    boundaries = boundaries_from_dict(_table(raw.get("episodes", {}), "map.episodes"))
    check_plan(bag_map, boundaries)
    return bag_map, boundaries


def _objects(spec: Any) -> ObjectTopic | None:
    """Return the ``ObjectTopic`` of a map file's ``objects`` (a topic, or a table); None when absent."""
    if spec is None or isinstance(spec, str):
        return None if spec is None else ObjectTopic(_text(spec, "map.objects"))
    raw = _table(spec, "map.objects")
    known = {"topic", "every_s", "items", "id", "label", "position", "labels"}
    if unknown := sorted(set(raw) - known):
        raise ValidationError(f"map.objects: unknown key {unknown[0]!r}; expected {', '.join(sorted(known))}")
    every = raw.get("every_s", 1.0)
    if not _is_number(every):
        raise ValidationError(f"map.objects.every_s: expected a number of seconds, got {_shown(every)}")
    paths = {
        key: _optional_text(raw.get(key), f"map.objects.{key}")
        for key in ("items", "id", "label", "position")
    }
    return ObjectTopic(
        _text(raw.get("topic"), "map.objects.topic"),
        float(every),
        labels=_table(raw.get("labels", {}), "map.objects.labels"),
        **paths,
    )


def check_context_keys_of(bag_map: BagMap) -> None:
    """Raise ``ValidationError`` for a pose name or a ``robot``/``task`` key that no filter could reach.

    Pose names become ``spatial.<name>_initial`` / ``_final`` keys and the tables are stored as given,
    so they follow the context key rule (``validation.context_key_problem``).
    """
    for pose in bag_map.poses:
        problem = context_key_problem(f"{pose.name}_initial")
        if problem is not None:
            raise ValidationError(
                f"map.poses: the pose name {pose.name!r} becomes the context key "
                f"'spatial.{pose.name}_initial', which {problem}; rename the pose"
            )
    check_context_keys("map.robot", dict(bag_map.robot))
    check_context_keys("map.task", dict(bag_map.task))


def boundaries_from_dict(raw: Mapping[str, Any]) -> Boundaries:
    """Return the ``Boundaries`` of a map file's ``episodes`` table; raises ``ValidationError``."""
    known = {"windows", "marker", "field", "start", "end", "gap_topic", "gap_s"}
    if unknown := sorted(set(raw) - known):
        raise ValidationError(
            f"map.episodes: unknown key {unknown[0]!r}; expected {', '.join(sorted(known))}"
        )
    windows = raw.get("windows", [])
    if not isinstance(windows, list) or not all(
        isinstance(w, list) and len(w) == 2 and all(_is_number(x) for x in w) for w in windows
    ):
        raise ValidationError(
            f"map.episodes.windows: expected a list of [start, end] seconds, got {_shown(windows)}"
        )
    end = raw.get("end", "end")
    gap_s = raw.get("gap_s", 1.0)
    if not _is_number(gap_s):
        raise ValidationError(f"map.episodes.gap_s: expected a number of seconds, got {_shown(gap_s)}")
    return Boundaries(
        windows=tuple((float(a), float(b)) for a, b in windows),
        marker=_optional_text(raw.get("marker"), "map.episodes.marker"),
        marker_field=_text(raw.get("field", "data"), "map.episodes.field"),
        start_value=_text(raw.get("start", "start"), "map.episodes.start"),
        end_value=None if end is None or end is False else _text(end, "map.episodes.end"),
        gap_topic=_optional_text(raw.get("gap_topic"), "map.episodes.gap_topic"),
        gap_s=float(gap_s),
    )


def check_plan(bag_map: BagMap, boundaries: Boundaries) -> None:
    """Raise ``ValidationError`` for a value of the map or the boundaries no bag can satisfy.

    Topics, fields and marker values are non-empty text, ``joint_samples`` is 1..1000, windows are
    finite ``0 <= start < end`` seconds and ``gap_s`` a finite number of seconds above 0, each at most
    ``MAX_SECONDS`` (the span of a bag's nanosecond clock); context keys follow the filter rule.
    """
    for pose in bag_map.poses:
        _text(pose.topic, f"poses.{pose.name}.topic")
        _optional_text(pose.field, f"poses.{pose.name}.field")
    _optional_text(bag_map.joints, "joints.topic")
    if bag_map.objects is not None:
        _check_objects(bag_map.objects)
    _optional_text(bag_map.outcome, "outcome.topic")
    _text(bag_map.outcome_field, "outcome.field")
    samples = bag_map.joint_samples
    if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= 1000:
        raise ValidationError(f"joints.samples: expected 1..1000, got {_shown(samples)}")
    for i, window in enumerate(boundaries.windows):
        a, b = window
        if not (_is_number(a) and _is_number(b) and 0 <= a < b <= MAX_SECONDS):
            raise ValidationError(
                f"episodes.windows[{i}]: expected 0 <= start < end <= {MAX_SECONDS:g} seconds, got [{a}, {b}]"
            )
    gap = boundaries.gap_s
    if not (_is_number(gap) and 0 < gap <= MAX_SECONDS):
        raise ValidationError(
            f"episodes.gap_s: expected a number of seconds in (0, {MAX_SECONDS:g}], got {gap}"
        )
    _optional_text(boundaries.marker, "episodes.marker")
    _optional_text(boundaries.gap_topic, "episodes.gap_topic")
    _text(boundaries.marker_field, "episodes.field")
    _text(boundaries.start_value, "episodes.start")
    _optional_text(boundaries.end_value, "episodes.end")
    check_context_keys_of(bag_map)


def _check_objects(objects: ObjectTopic) -> None:
    _text(objects.topic, "objects.topic")
    for key in ("items", "id", "label", "position"):
        _optional_text(getattr(objects, key), f"objects.{key}")
    if not (_is_number(objects.every_s) and 0 <= objects.every_s <= MAX_SECONDS):
        raise ValidationError(
            f"objects.every_s: expected 0..{MAX_SECONDS:g} seconds, got {_shown(objects.every_s)}"
        )
    if not isinstance(objects.labels, Mapping):
        raise ValidationError(
            f"objects.labels: expected a table of class → label, got {_shown(objects.labels)}"
        )
    for name, label in objects.labels.items():
        if not isinstance(name, str) or not name:
            raise ValidationError(f"objects.labels: a class must be non-empty text, got {_shown(name)}")
        _text(label, f"objects.labels.{name}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValidationError(f"{where}: expected non-empty text, got {_shown(value)}")
    return value


def _optional_text(value: Any, where: str) -> str | None:
    return None if value is None else _text(value, where)


def _table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ValidationError(f"{where}: expected a table, got {_shown(value)}")
    return dict(value)


def _topic_and(spec: Any, key: str, default: Any, where: str) -> tuple[str | None, Any]:
    if spec is None or isinstance(spec, str):
        return _optional_text(spec, f"map.{where}"), default
    if isinstance(spec, Mapping) and isinstance(spec.get("topic"), str):
        return _text(spec["topic"], f"map.{where}.topic"), spec.get(key, default)
    raise ValidationError(f"map.{where}: expected a topic or {{topic, {key}}}, got {_shown(spec)}")


def load_map(path: str | Path) -> tuple[BagMap, Boundaries]:
    """Read a TOML (``.toml``) or JSON map file; raises ``ValidationError`` naming the file."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ValidationError(f"map: cannot read {file}: {exc.strerror}") from exc
    if len(data) > MAX_MAP_BYTES:
        raise ValidationError(f"map: {file} holds {len(data)} bytes; a map file is at most {MAX_MAP_BYTES}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"map: {file} is not UTF-8 text (byte {exc.start})") from None
    try:
        raw = tomllib.loads(text) if file.suffix == ".toml" else json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise ValidationError(
            f"map: {file} is not valid {'TOML' if file.suffix == '.toml' else 'JSON'}: {exc}"
        ) from exc
    if not isinstance(raw, Mapping):
        raise ValidationError(f"map: {file} must hold a table (object) at the top")
    return map_from_dict(raw)
