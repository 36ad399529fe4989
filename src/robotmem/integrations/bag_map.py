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
    [robot]
    id = "arm-01"
    [task]
    name = "pick"

Nothing here reads a bag, so the map is checked before the bag is opened.
"""

from __future__ import annotations

import json
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


@dataclass(frozen=True)
class PoseTopic:
    """A topic whose messages give a position: ``field`` is a dot path into the message (auto when None)."""

    name: str
    topic: str
    field: str | None = None


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

    def topics(self) -> list[str]:
        """Return every topic the map reads."""
        named = [p.topic for p in self.poses] + [t for t in (self.joints, self.outcome) if t]
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
    (a topic, or ``{topic, samples}``), ``outcome`` (a topic, or ``{topic, field}``), ``robot``,
    ``task`` and ``episodes`` (``windows``, or ``marker`` with ``field`` / ``start`` / ``end``, or
    ``gap_topic`` with ``gap_s``).
    """
    known = {"poses", "layout", "joints", "outcome", "robot", "task", "episodes"}
    if unknown := sorted(set(raw) - known):
        raise ValidationError(f"map: unknown key {unknown[0]!r}; expected {', '.join(sorted(known))}")
    poses = []
    for name, spec in dict(raw.get("poses", {})).items():
        if isinstance(spec, str):
            poses.append(PoseTopic(str(name), spec))
        elif isinstance(spec, Mapping) and isinstance(spec.get("topic"), str):
            poses.append(PoseTopic(str(name), spec["topic"], spec.get("field")))
        else:
            raise ValidationError(f"map.poses.{name}: expected a topic or {{topic, field}}, got {spec!r}")
    joints, samples = _topic_and(raw.get("joints"), "samples", 10, "joints")
    outcome, outcome_field = _topic_and(raw.get("outcome"), "field", "data", "outcome")
    for section in ("robot", "task"):
        if not isinstance(raw.get(section, {}), Mapping):
            raise ValidationError(f"map.{section}: expected a table of constant values")
    layout = raw.get("layout")
    bag_map = BagMap(
        poses=tuple(poses),
        layout=None if layout is None else tuple(str(x) for x in layout),
        joints=joints,
        joint_samples=int(samples),
        outcome=outcome,
        outcome_field=str(outcome_field),
        robot=dict(raw.get("robot", {})),
        task=dict(raw.get("task", {})),
    )
    if bag_map.layout and (missing := [n for n in bag_map.layout if n not in {p.name for p in poses}]):
        raise ValidationError(f"map.layout: {missing[0]!r} is not a pose name")
    check_context_keys_of(bag_map)
    return bag_map, boundaries_from_dict(dict(raw.get("episodes", {})))


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
    try:
        windows = tuple((float(a), float(b)) for a, b in raw.get("windows", ()))
    except (TypeError, ValueError):
        raise ValidationError("map.episodes.windows: expected a list of [start, end] seconds") from None
    end = raw.get("end", "end")
    return Boundaries(
        windows=windows,
        marker=raw.get("marker"),
        marker_field=str(raw.get("field", "data")),
        start_value=str(raw.get("start", "start")),
        end_value=None if end is None or end is False else str(end),
        gap_topic=raw.get("gap_topic"),
        gap_s=float(raw.get("gap_s", 1.0)),
    )


def _topic_and(spec: Any, key: str, default: Any, where: str) -> tuple[str | None, Any]:
    if spec is None or isinstance(spec, str):
        return spec, default
    if isinstance(spec, Mapping) and isinstance(spec.get("topic"), str):
        return spec["topic"], spec.get(key, default)
    raise ValidationError(f"map.{where}: expected a topic or {{topic, {key}}}, got {spec!r}")


def load_map(path: str | Path) -> tuple[BagMap, Boundaries]:
    """Read a TOML (``.toml``) or JSON map file; raises ``ValidationError`` naming the file."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValidationError(f"map: cannot read {file}: {exc.strerror}") from exc
    try:
        raw = tomllib.loads(text) if file.suffix == ".toml" else json.loads(text)
    except ValueError as exc:
        raise ValidationError(
            f"map: {file} is not valid {'TOML' if file.suffix == '.toml' else 'JSON'}: {exc}"
        ) from exc
    if not isinstance(raw, Mapping):
        raise ValidationError(f"map: {file} must hold a table (object) at the top")
    return map_from_dict(raw)
