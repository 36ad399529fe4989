"""ROS bags as episodes: rosbag2 (sqlite3 or MCAP storage), bare MCAP files and ROS 1 ``.bag`` files.

Needs the extra ``robotmem[ros]`` (the pure-Python ``rosbags`` reader; no ROS installation)::

    from robotmem import RobotMemory
    from robotmem.integrations.rosbag import BagMap, Boundaries, PoseTopic, import_bag

    bag_map = BagMap(poses=(PoseTopic("object", "/object_pose"),), outcome="/outcome",
                     task={"name": "pick"})
    with RobotMemory("memory.db") as mem:
        import_bag(mem, "run_0412", bag_map, Boundaries(marker="/episode"))

A bag is cut into episodes (``Boundaries``: marker messages, explicit windows, or silences on a topic).
Each episode becomes one session holding one memory: the insight text, ``spatial.<name>_initial`` /
``_final`` of every pose topic and ``spatial.layout_initial`` (all initial poses in one list),
``task.success`` from the outcome topic, the constant ``robot`` and ``task`` sections, and
``provenance`` — bag path, storage, topics, ``t_start_ns`` / ``t_end_ns`` and ``start_offset_s`` (for
``ros2 bag play --start-offset``). A JointState topic adds a sampled ``procedural`` perception. The
session ends with the outcome as its score. ``provenance.key`` is a digest of the bag's identity (its
time span, message count and topics, not its path) and the window, so importing a bag again adds
nothing.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from robotmem.errors import ValidationError
from robotmem.integrations.bag_map import (
    BagMap,
    Boundaries,
    PoseTopic,
    check_context_keys_of,
    load_map,
    map_from_dict,
)
from robotmem.integrations.episodes import context_json_value, outcome_word, sample_indices, to_json_value

try:
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("robotmem.integrations.rosbag needs the extra: pip install 'robotmem[ros]'") from exc

Progress = Callable[[str, int, int], None]

# Where a pose sits in common message types, tried in order when a pose topic names no field.
_POSE_PATHS = (
    ("pose", "pose", "position"),  # nav_msgs/Odometry, PoseWithCovarianceStamped
    ("pose", "position"),  # geometry_msgs/PoseStamped
    ("position",),  # geometry_msgs/Pose
    ("point",),  # geometry_msgs/PointStamped
    ("transform", "translation"),  # geometry_msgs/TransformStamped
    ("vector",),  # geometry_msgs/Vector3Stamped
    (),  # geometry_msgs/Point, Vector3
)
_TRUE_WORDS = frozenset({"true", "success", "succeeded", "successful", "ok", "1", "yes", "done"})
_FALSE_WORDS = frozenset({"false", "failure", "failed", "fail", "0", "no", "aborted", "timeout"})
_LOOKUP_CHUNK = 100


@dataclass(frozen=True)
class Window:
    """One episode's slice of a bag, in bag time (nanoseconds; ``end_ns`` included)."""

    index: int
    start_ns: int
    end_ns: int


@dataclass
class Slice:
    """What an episode's window holds, read from the bag."""

    window: Window
    first: dict[str, list[float]] = field(default_factory=dict)
    last: dict[str, list[float]] = field(default_factory=dict)
    joints: list[tuple[int, Any]] = field(default_factory=list)
    outcome: bool | None = None
    outcome_detail: dict[str, Any] = field(default_factory=dict)


def storage_of(path: Path) -> str:
    """Return ``ros1``, ``sqlite3`` or ``mcap`` for a bag path; raises ``ValidationError``."""
    if not path.exists():
        raise ValidationError(f"bag: {path} does not exist")
    if path.is_dir():
        meta = path / "metadata.yaml"
        if not meta.exists():
            raise ValidationError(
                f"bag: {path} is a directory without metadata.yaml; expected a rosbag2 directory"
            )
        text = meta.read_text(encoding="utf-8")
        return "mcap" if "storage_identifier: mcap" in text else "sqlite3"
    if path.suffix == ".bag":
        return "ros1"
    if path.suffix in (".mcap", ".db3"):
        return "mcap" if path.suffix == ".mcap" else "sqlite3"
    raise ValidationError(f"bag: {path} is not a rosbag2 directory, a .mcap/.db3 file or a ROS 1 .bag file")


def open_bag(path: str | Path) -> AnyReader:
    """Return an opened reader of the bag at ``path``; raises ``ValidationError`` when it cannot be read."""
    bag = Path(path)
    storage_of(bag)
    reader = AnyReader([bag], default_typestore=get_typestore(Stores.ROS2_HUMBLE))
    try:
        reader.open()
    except Exception as exc:  # the reader's own errors name the broken part
        raise ValidationError(f"bag: {bag} cannot be read: {exc}") from exc
    return reader


def check_topics(reader: AnyReader, wanted: Sequence[str], bag: Path) -> None:
    """Raise ``ValidationError`` naming the missing topics and listing what the bag has."""
    have = {c.topic: c.msgtype for c in reader.connections}
    missing = [t for t in wanted if t not in have]
    if missing:
        listing = ", ".join(f"{t} ({have[t]})" for t in sorted(have)) or "no topics"
        raise ValidationError(f"bag: {bag} has no topic {', '.join(missing)}; it has {listing}")


def field_at(message: Any, path: Sequence[str]) -> Any:
    """Return the attribute (or key) at ``path`` in a deserialised message; raises ``LookupError``."""
    value = message
    for part in path:
        if isinstance(value, Mapping):
            value = value[part]
        elif hasattr(value, part):
            value = getattr(value, part)
        else:
            raise LookupError(part)
    return value


def as_point(value: Any) -> list[float] | None:
    """Return a coordinate list from a Point/Vector3-like object, a sequence or a number, else None."""
    if hasattr(value, "x") and hasattr(value, "y"):
        return [float(value.x), float(value.y)] + ([float(value.z)] if hasattr(value, "z") else [])
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [float(value)]
    try:
        return [float(v) for v in value]
    except (TypeError, ValueError):
        return None


def read_pose(message: Any, pose: PoseTopic) -> list[float]:
    """Return the position of ``message`` for ``pose``; raises ``ValidationError`` naming the topic."""
    paths = [tuple(pose.field.split("."))] if pose.field else list(_POSE_PATHS)
    for path in paths:
        try:
            point = as_point(field_at(message, path))
        except LookupError:
            continue
        if point:
            return point
    where = (
        f"field {pose.field!r}"
        if pose.field
        else "a position (tried pose.pose.position, pose.position, position, point, transform.translation, vector, x/y/z)"
    )
    raise ValidationError(f"poses.{pose.name}: messages on {pose.topic} have no {where}")


def read_outcome(message: Any, field_path: str) -> tuple[bool | None, dict[str, Any]]:
    """Return ``(success, details)`` from an outcome message: a bool, a word, or JSON with ``success``."""
    try:
        value = field_at(message, field_path.split(".")) if field_path else message
    except LookupError:
        return None, {}
    if isinstance(value, bool):
        return value, {}
    if isinstance(value, (int, float)):
        return bool(value), {}
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError:
                return None, {}
            if isinstance(parsed, dict):
                success = parsed.get("success")
                return (success if isinstance(success, bool) else None), context_json_value(parsed)
        word = text.lower()
        return (True if word in _TRUE_WORDS else False if word in _FALSE_WORDS else None), {}
    return None, {}


def find_windows(reader: AnyReader, boundaries: Boundaries) -> list[Window]:
    """Return the episodes of the bag, in time order; raises ``ValidationError`` for a bad set-up."""
    chosen = sum(bool(x) for x in (boundaries.windows, boundaries.marker, boundaries.gap_topic))
    if chosen != 1:
        raise ValidationError(
            f"episodes: give exactly one of windows, marker (a topic) or gap_topic; {chosen} were given"
        )
    start = reader.start_time
    if boundaries.windows:
        spans = []
        for i, (a, b) in enumerate(boundaries.windows):
            if not 0 <= a < b:
                raise ValidationError(
                    f"episodes.windows[{i}]: expected 0 <= start < end seconds, got [{a}, {b}]"
                )
            spans.append((start + round(a * 1e9), start + round(b * 1e9)))
    elif boundaries.marker:
        spans = _marker_spans(reader, boundaries)
    else:
        spans = _gap_spans(reader, boundaries)
    return [Window(i, a, b) for i, (a, b) in enumerate(sorted(spans))]


def _values(reader: AnyReader, topic: str, field_path: str) -> Iterator[tuple[int, Any]]:
    connections = [c for c in reader.connections if c.topic == topic]
    for connection, stamp, raw in reader.messages(connections=connections):
        message = reader.deserialize(raw, connection.msgtype)
        try:
            yield stamp, field_at(message, field_path.split(".")) if field_path else message
        except LookupError:
            raise ValidationError(
                f"episodes.marker_field: messages on {topic} have no field {field_path!r}"
            ) from None


def _marker_spans(reader: AnyReader, b: Boundaries) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    opened: int | None = None
    assert b.marker is not None
    for stamp, value in _values(reader, b.marker, b.marker_field):
        text = str(value)
        if text == b.start_value:
            if opened is not None and b.end_value is None:
                spans.append((opened, stamp - 1))
            opened = stamp
        elif b.end_value is not None and text == b.end_value and opened is not None:
            spans.append((opened, stamp))
            opened = None
    if opened is not None and b.end_value is None:
        spans.append((opened, reader.end_time))
    return spans


def _gap_spans(reader: AnyReader, b: Boundaries) -> list[tuple[int, int]]:
    if not b.gap_s > 0:
        raise ValidationError(f"episodes.gap_s: expected a number of seconds > 0, got {b.gap_s}")
    assert b.gap_topic is not None
    connections = [c for c in reader.connections if c.topic == b.gap_topic]
    spans: list[tuple[int, int]] = []
    first = last = None
    limit = round(b.gap_s * 1e9)
    for _, stamp, _ in reader.messages(connections=connections):
        if last is not None and stamp - last > limit:
            spans.append((first, last))  # type: ignore[arg-type]
            first = None
        first = stamp if first is None else first
        last = stamp
    if first is not None and last is not None:
        spans.append((first, last))
    return spans


def read_slices(reader: AnyReader, bag_map: BagMap, windows: Sequence[Window]) -> list[Slice]:
    """Read every mapped topic once and return what falls into each window."""
    slices = [Slice(w) for w in windows]
    starts = [w.start_ns for w in windows]
    poses = {p.topic: [q for q in bag_map.poses if q.topic == p.topic] for p in bag_map.poses}
    wanted = set(bag_map.topics())
    connections = [c for c in reader.connections if c.topic in wanted]
    if not windows or not connections:
        return slices
    stop = max(w.end_ns for w in windows) + 1
    longest = max(w.end_ns - w.start_ns for w in windows)
    for connection, stamp, raw in reader.messages(connections=connections, start=min(starts), stop=stop):
        # Windows may overlap (explicit ones): a message belongs to every window containing it, and only
        # windows starting within the longest window's length before it can.
        first, last = bisect.bisect_left(starts, stamp - longest), bisect.bisect_right(starts, stamp)
        hits = [s for s in slices[first:last] if stamp <= s.window.end_ns]
        if not hits:
            continue
        message = reader.deserialize(raw, connection.msgtype)
        topic = connection.topic
        for pose in poses.get(topic, ()):
            point = read_pose(message, pose)
            for s in hits:
                s.first.setdefault(pose.name, point)
                s.last[pose.name] = point
        if topic == bag_map.joints:
            for s in hits:
                s.joints.append((stamp, message))
        if topic == bag_map.outcome:
            success, detail = read_outcome(message, bag_map.outcome_field)
            for s in hits:
                if success is not None:
                    s.outcome = success
                s.outcome_detail.update(detail)
    return slices


def bag_identity(reader: AnyReader) -> str:
    """Return a digest naming the bag's content (time span, message count, topics), not its path."""
    topics = sorted((c.topic, c.msgtype) for c in reader.connections)
    basis = json.dumps([reader.start_time, reader.end_time, reader.message_count, topics])
    return hashlib.sha256(basis.encode()).hexdigest()[:32]


def episode_key(bag_id: str, window: Window) -> str:
    """Return the stable key of one episode of one bag (its provenance lookup on re-import)."""
    return hashlib.sha256(f"{bag_id}:{window.start_ns}:{window.end_ns}".encode()).hexdigest()[:32]


def joint_payload(joints: Sequence[tuple[int, Any]], samples: int) -> dict[str, Any]:
    """Return the sampled joint trajectory stored as a ``procedural`` perception's data."""
    indices = sample_indices(len(joints), samples)
    first = joints[0][1]
    payload: dict[str, Any] = to_json_value(
        {
            "joint_names": list(getattr(first, "name", [])),
            "t_ns": [joints[i][0] for i in indices],
            "positions": [np.asarray(getattr(joints[i][1], "position", [])).tolist() for i in indices],
            "velocities": [np.asarray(getattr(joints[i][1], "velocity", [])).tolist() for i in indices],
            "sampled_from": len(joints),
        }
    )
    return payload


def episode_context(
    s: Slice, bag_map: BagMap, *, bag: Path, storage: str, bag_start_ns: int, key: str
) -> dict[str, Any]:
    """Return the four-section context of one episode, with its provenance."""
    w = s.window
    spatial = {f"{name}_initial": point for name, point in s.first.items()}
    spatial.update({f"{name}_final": point for name, point in s.last.items()})
    layout = bag_map.layout if bag_map.layout is not None else tuple(p.name for p in bag_map.poses)
    if layout and all(name in s.first for name in layout):
        spatial["layout_initial"] = [x for name in layout for x in s.first[name]]
    task: dict[str, Any] = {**s.outcome_detail, **dict(bag_map.task)}
    task.update(episode=w.index, duration_s=round((w.end_ns - w.start_ns) / 1e9, 6))
    if s.outcome is not None:
        task["success"] = s.outcome
    context: dict[str, Any] = to_json_value(
        {
            "spatial": spatial,
            "robot": dict(bag_map.robot),
            "task": task,
            "provenance": {
                "kind": "rosbag",
                "bag": str(bag),
                "storage": storage,
                "topics": bag_map.topics(),
                "t_start_ns": w.start_ns,
                "t_end_ns": w.end_ns,
                "start_offset_s": round((w.start_ns - bag_start_ns) / 1e9, 9),
                "key": key,
            },
        }
    )
    return context


def describe(context: Mapping[str, Any], bag: Path) -> str:
    """Return the insight text of an episode: task, outcome, duration, the bag and where in it."""
    task, where = context["task"], context["provenance"]
    name = task.get("name", "bag")
    text = (
        f"{name} episode {task['episode']}: {outcome_word(task.get('success'))} after "
        f"{task['duration_s']:.2f} s, bag {bag.name} at {where['t_start_ns'] / 1e9:.3f} s"
    )
    return text[:300]


def existing_keys(memory: Any, keys: Sequence[str], collection: str | None) -> set[str]:
    """Return the keys among ``keys`` that already name a memory (``provenance.key``)."""
    found: set[str] = set()
    for i in range(0, len(keys), _LOOKUP_CHUNK):
        chunk = list(keys[i : i + _LOOKUP_CHUNK])
        hits = memory.recall(
            "",
            n=len(chunk),
            min_confidence=0.0,
            collection=collection,
            context_filter={"provenance.key": {"$in": chunk}},
        )["memories"]
        found.update(m["context"]["provenance"]["key"] for m in hits)
    return found


def import_bag(
    memory: Any,
    path: str | Path,
    bag_map: BagMap,
    boundaries: Boundaries,
    *,
    collection: str | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Import the episodes of one bag; return ``{"bag", "storage", "episodes", "imported", "skipped", ...}``.

    Each new episode is one session with one memory (and a perception when ``bag_map.joints`` is set),
    ended with ``outcome_score`` 1.0 / 0.0 when the outcome is known. Episodes already imported
    (same ``provenance.key``) are skipped. Raises ``ValidationError`` for a bag that cannot be read,
    a topic the bag lacks (listing what it has), or messages without the mapped fields — before
    anything is written.
    """
    bag = Path(path).resolve()
    storage = storage_of(bag)
    if not 1 <= bag_map.joint_samples <= 1000:
        raise ValidationError(f"joints.samples: expected 1..1000, got {bag_map.joint_samples}")
    check_context_keys_of(bag_map)
    reader = open_bag(bag)
    try:
        check_topics(reader, [*bag_map.topics(), *boundaries.topics()], bag)
        windows = find_windows(reader, boundaries)
        slices = read_slices(reader, bag_map, windows)
        bag_id, bag_start = bag_identity(reader), reader.start_time
    finally:
        reader.close()
    keys = [episode_key(bag_id, s.window) for s in slices]
    done = existing_keys(memory, keys, collection)
    result: dict[str, Any] = {
        "bag": str(bag),
        "storage": storage,
        "episodes": len(slices),
        "imported": 0,
        "skipped": 0,
        "memory_ids": [],
        "session_ids": [],
    }
    # end_session's related memories are not read here: with related_top_k 0 it runs no recall.
    settings = memory.settings
    memory.settings = settings.replace(related_top_k=0)
    try:
        for s, key in zip(slices, keys, strict=True):
            if key in done:
                result["skipped"] += 1
            else:
                memory_id, session_id = _store_episode(
                    memory, s, bag_map, bag, storage, bag_start, key, collection
                )
                result["imported"] += 1
                result["memory_ids"].append(memory_id)
                result["session_ids"].append(session_id)
            if progress is not None:
                progress("episodes", 1, len(slices))
    finally:
        memory.settings = settings
    return result


def _store_episode(
    memory: Any,
    s: Slice,
    bag_map: BagMap,
    bag: Path,
    storage: str,
    bag_start: int,
    key: str,
    collection: str | None,
) -> tuple[int, str]:
    context = episode_context(s, bag_map, bag=bag, storage=storage, bag_start_ns=bag_start, key=key)
    session = memory.start_session(
        context={"robot": context["robot"], "task": context["task"], "provenance": context["provenance"]},
        collection=collection,
    )["session_id"]
    learned = memory.learn(describe(context, bag), context=context, collection=collection, session_id=session)
    memory_id = learned["memory_id"] if learned["status"] == "created" else learned["existing_id"]
    if bag_map.joints and s.joints:
        memory.save_perceptions(
            [
                {
                    "description": f"Joint trajectory of episode {s.window.index}: {len(s.joints)} states sampled",
                    "perception_type": "procedural",
                    "data": joint_payload(s.joints, bag_map.joint_samples),
                    "metadata": {"provenance": context["provenance"]},
                    "collection": collection,
                    "session_id": session,
                }
            ]
        )
    score = None if s.outcome is None else (1.0 if s.outcome else 0.0)
    memory.end_session(session, outcome_score=score)
    return int(memory_id), str(session)


__all__ = [
    "BagMap",
    "Boundaries",
    "PoseTopic",
    "Window",
    "import_bag",
    "load_map",
    "map_from_dict",
    "open_bag",
]
