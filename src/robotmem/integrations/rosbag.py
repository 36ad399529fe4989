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
``spatial.position`` (the first pose's initial position, the indexed path regions ask) with
``spatial.frame`` (that message's ``header.frame_id``; none = the default frame),
``task.success`` from the outcome topic, the constant ``robot`` and ``task`` sections, and
``provenance`` — bag path, storage, the topics read (the boundary topic too), ``t_start_ns`` /
``t_end_ns`` and ``start_offset_s`` (for ``ros2 bag play --start-offset``). A JointState topic adds a
sampled ``procedural`` perception, a detection topic a ``visual`` perception per sighting of an object
(``integrations/bag_objects.py``). The session ends with the outcome as its score.

``provenance.key`` names an episode by its content: a SHA-256 over the window and every message read
inside it (topic, time stamp and the raw bytes as stored), so importing a bag again — from any path —
adds nothing, while a different recording with the same timing is a different episode.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from robotmem.errors import RobotMemError, ValidationError
from robotmem.formats.validation import parse_json_object
from robotmem.integrations.bag_map import (
    BagMap,
    Boundaries,
    PoseTopic,
    check_plan,
    load_map,
    map_from_dict,
)
from robotmem.integrations.bag_messages import as_point, field_at, is_quaternion, read_frame
from robotmem.integrations.bag_objects import Sightings, read_sightings, sighting_item
from robotmem.integrations.episodes import context_json_value, outcome_word, sample_indices, to_json_value
from robotmem.service.recall import context_values

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
_PROGRESS_EVERY = 1000  # messages between two reports of the reading stage
_VALUES_SHOWN = 10  # distinct marker values an error lists
_SIGHTINGS_PER_BATCH = 500  # sightings stored by one save_perceptions


@dataclass(frozen=True)
class Window:
    """One episode's slice of a bag, in bag time (nanoseconds; ``end_ns`` included).

    ``active_start_ns`` / ``active_end_ns`` bound the activity inside the window (in gap mode, the gap
    topic's first and last message; else the window itself): an initial pose is the last one at or
    before the activity starts (else the first after), a final pose the first at or after it ends
    (else the last before).
    """

    index: int
    start_ns: int
    end_ns: int
    active_start_ns: int | None = None
    active_end_ns: int | None = None

    @property
    def active(self) -> tuple[int, int]:
        """The activity's first and last nanosecond."""
        start = self.start_ns if self.active_start_ns is None else self.active_start_ns
        return start, self.end_ns if self.active_end_ns is None else self.active_end_ns


@dataclass
class Cut:
    """The episodes found in a bag, and what was wrong with its boundaries."""

    windows: list[Window]
    unclosed: int = 0  # marker episodes without their end marker, ended at the next start or the bag's end
    warnings: list[str] = field(default_factory=list)


@dataclass
class Slice:
    """What an episode's window holds, read from the bag."""

    window: Window
    first: dict[str, list[float]] = field(default_factory=dict)
    first_frames: dict[str, str | None] = field(default_factory=dict)  # header.frame_id of each first pose
    last: dict[str, list[float]] = field(default_factory=dict)
    joints: list[tuple[int, Any]] = field(default_factory=list)
    outcome: bool | None = None
    outcome_detail: dict[str, Any] = field(default_factory=dict)
    messages: int = 0  # messages of the read topics inside the window
    content: Any = field(default_factory=hashlib.sha256)  # over those messages' topic, stamp and bytes
    after_end: dict[str, list[float]] = field(default_factory=dict)  # first poses at/after the activity
    sightings: Sightings = field(default_factory=lambda: Sightings(0))  # of the map's detection topic


class Reading:
    """Counts the messages read and reports them as the ``reading`` stage, every 1000 messages."""

    def __init__(self, progress: Progress | None, total: int) -> None:
        self.progress, self.total, self.pending, self.reported = progress, max(total, 1), 0, 0

    def tick(self) -> None:
        """Count one message."""
        self.pending += 1
        if self.pending >= _PROGRESS_EVERY:
            self._report(self.pending)

    def done(self) -> None:
        """Report the rest (messages outside every window were not read but are done)."""
        self._report(max(self.total - self.reported, 0))

    def _report(self, count: int) -> None:
        count = min(count, self.total - self.reported)
        self.pending = 0
        if self.progress is not None and count > 0:
            self.reported += count
            self.progress("reading", count, self.total)


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
        try:
            text = meta.read_bytes()
        except OSError as exc:
            raise ValidationError(f"bag: cannot read {meta}: {exc.strerror}") from None
        return "mcap" if b"storage_identifier: mcap" in text else "sqlite3"
    if path.suffix == ".bag":
        return "ros1"
    if path.suffix in (".mcap", ".db3"):
        return "mcap" if path.suffix == ".mcap" else "sqlite3"
    raise ValidationError(f"bag: {path} is not a rosbag2 directory, a .mcap/.db3 file or a ROS 1 .bag file")


def open_bag(path: str | Path) -> AnyReader:
    """Return an opened reader of the bag at ``path``; raises ``ValidationError`` when it cannot be read."""
    bag = Path(path)
    storage_of(bag)
    try:
        reader = AnyReader([bag], default_typestore=get_typestore(Stores.ROS2_HUMBLE))
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


def read_pose(message: Any, pose: PoseTopic) -> list[float]:
    """Return the position of ``message`` for ``pose``; raises ``ValidationError`` naming the topic."""
    paths = [tuple(pose.field.split("."))] if pose.field else list(_POSE_PATHS)
    for path in paths:
        try:
            value = field_at(message, path)
        except LookupError:
            continue
        point = as_point(value)
        if point:
            return point
        if pose.field and is_quaternion(value):
            raise ValidationError(
                f"poses.{pose.name}: field {pose.field!r} on {pose.topic} is a quaternion, an orientation "
                "and not a position; name the position field (e.g. pose.position)"
            )
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


def _seconds(reader: AnyReader, stamp: int) -> str:
    return f"{(stamp - reader.start_time) / 1e9:.3f} s"


def find_windows(reader: AnyReader, boundaries: Boundaries, reading: Reading | None = None) -> Cut:
    """Return the episodes of the bag, in time order; raises ``ValidationError`` for a bad set-up.

    Raises too when the boundaries find no episode (naming the topic and the values it holds).
    """
    chosen = sum(bool(x) for x in (boundaries.windows, boundaries.marker, boundaries.gap_topic))
    if chosen != 1:
        raise ValidationError(
            f"episodes: give exactly one of windows, marker (a topic) or gap_topic; {chosen} were given"
        )
    reading = reading or Reading(None, 0)
    start = reader.start_time
    if boundaries.windows:
        spans = []
        for i, (a, b) in enumerate(boundaries.windows):
            if not 0 <= a < b:
                raise ValidationError(
                    f"episodes.windows[{i}]: expected 0 <= start < end seconds, got [{a}, {b}]"
                )
            spans.append((start + round(a * 1e9), start + round(b * 1e9)))
        return Cut([Window(i, a, b) for i, (a, b) in enumerate(sorted(spans))])
    if boundaries.marker:
        return _marker_cut(reader, boundaries, reading)
    return _gap_cut(reader, boundaries, reading)


def _values(reader: AnyReader, topic: str, field_path: str, reading: Reading) -> Iterator[tuple[int, Any]]:
    connections = [c for c in reader.connections if c.topic == topic]
    for connection, stamp, raw in reader.messages(connections=connections):
        reading.tick()
        message = reader.deserialize(raw, connection.msgtype)
        try:
            yield stamp, field_at(message, field_path.split(".")) if field_path else message
        except LookupError:
            raise ValidationError(
                f"episodes.marker_field: messages on {topic} have no field {field_path!r}"
            ) from None


def _marker_cut(reader: AnyReader, b: Boundaries, reading: Reading) -> Cut:
    """Episodes between start and end markers. An episode without its end marker ends at the next start
    (or at the bag's end); with ``end_value`` set that is a mistake the result counts and warns about."""
    assert b.marker is not None
    spans: list[tuple[int, int]] = []
    seen: Counter[str] = Counter()
    unclosed: list[int] = []
    stray: list[int] = []
    opened: int | None = None
    for stamp, value in _values(reader, b.marker, b.marker_field, reading):
        text = str(value)
        seen[text] += 1
        if text == b.start_value:
            if opened is not None:
                spans.append((opened, max(opened, stamp - 1)))
                if b.end_value is not None:
                    unclosed.append(opened)
            opened = stamp
        elif b.end_value is not None and text == b.end_value:
            if opened is None:
                stray.append(stamp)
            else:
                spans.append((opened, stamp))
                opened = None
    if opened is not None:
        spans.append((opened, reader.end_time - 1))
        if b.end_value is not None:
            unclosed.append(opened)
    if not spans:
        shown = ", ".join(f"{v[:40]!r} ({n}×)" for v, n in seen.most_common(_VALUES_SHOWN))
        more = f" and {len(seen) - _VALUES_SHOWN} more" if len(seen) > _VALUES_SHOWN else ""
        held = f"its values are {shown}{more}" if seen else "it holds no message"
        expected = f"start value {b.start_value!r}" + (
            f" and end value {b.end_value!r}" if b.end_value is not None else ""
        )
        raise ValidationError(
            f"episodes.marker: no episode on {b.marker} (field {b.marker_field!r}): expected the "
            f"{expected}; {held}"
        )
    warnings = []
    if unclosed:
        at = ", ".join(_seconds(reader, t) for t in unclosed[:_VALUES_SHOWN])
        warnings.append(
            f"{len(unclosed)} episode(s) on {b.marker} had no end marker {b.end_value!r} (opened at {at}); "
            "each ends at the next start or at the bag's end"
        )
    if stray:
        at = ", ".join(_seconds(reader, t) for t in stray[:_VALUES_SHOWN])
        warnings.append(
            f"{len(stray)} end marker(s) on {b.marker} without an open episode, ignored (at {at})"
        )
    windows = [Window(i, a, e) for i, (a, e) in enumerate(sorted(spans))]
    return Cut(windows, unclosed=len(unclosed), warnings=warnings)


def _gap_cut(reader: AnyReader, b: Boundaries, reading: Reading) -> Cut:
    """Episodes of activity on the gap topic; each silence is split in its middle, so the windows cover
    the bag (the first from its start, the last to its end) and outcomes published after the activity
    stops, or poses before it starts, belong to their episode."""
    if not b.gap_s > 0:
        raise ValidationError(f"episodes.gap_s: expected a number of seconds > 0, got {b.gap_s}")
    assert b.gap_topic is not None
    connections = [c for c in reader.connections if c.topic == b.gap_topic]
    runs: list[tuple[int, int]] = []
    first = last = None
    limit = round(b.gap_s * 1e9)
    for _, stamp, _ in reader.messages(connections=connections):
        reading.tick()
        if last is not None and stamp - last > limit:
            runs.append((first, last))  # type: ignore[arg-type]
            first = None
        first = stamp if first is None else first
        last = stamp
    if first is None or last is None:
        raise ValidationError(f"episodes.gap_topic: {b.gap_topic} holds no message; no episode to cut")
    runs.append((first, last))
    starts = [reader.start_time] + [(a[1] + z[0]) // 2 + 1 for a, z in zip(runs, runs[1:], strict=False)]
    ends = [s - 1 for s in starts[1:]] + [reader.end_time - 1]
    windows = [
        Window(i, s, e, active_start_ns=run[0], active_end_ns=run[1])
        for i, (s, e, run) in enumerate(zip(starts, ends, runs, strict=True))
    ]
    return Cut(windows)


def read_slices(
    reader: AnyReader,
    bag_map: BagMap,
    windows: Sequence[Window],
    boundary_topics: Sequence[str] = (),
    reading: Reading | None = None,
    group_radius: float = 1.0,
) -> list[Slice]:
    """Read every mapped topic (and the boundary topics, for the content digest) once; return what
    falls into each window (label-only sightings thinned as objects within ``group_radius``)."""
    reading = reading or Reading(None, 0)
    every_ns = round(bag_map.objects.every_s * 1e9) if bag_map.objects else 0
    slices = [Slice(w, sightings=Sightings(every_ns, group_radius)) for w in windows]
    starts = [w.start_ns for w in windows]
    poses = {p.topic: [q for q in bag_map.poses if q.topic == p.topic] for p in bag_map.poses}
    mapped = set(bag_map.topics())
    wanted = mapped | set(boundary_topics)
    connections = [c for c in reader.connections if c.topic in wanted]
    if not windows or not connections:
        return slices
    stop = max(w.end_ns for w in windows) + 1
    longest = max(w.end_ns - w.start_ns for w in windows)
    for connection, stamp, raw in reader.messages(connections=connections, start=min(starts), stop=stop):
        reading.tick()
        # Windows may overlap (explicit ones): a message belongs to every window containing it, and only
        # windows starting within the longest window's length before it can.
        first, last = bisect.bisect_left(starts, stamp - longest), bisect.bisect_right(starts, stamp)
        hits = [s for s in slices[first:last] if stamp <= s.window.end_ns]
        if not hits:
            continue
        topic = connection.topic
        header = b"%s\0%d\0%d\0" % (topic.encode(), stamp, len(raw))
        for s in hits:
            s.messages += 1
            s.content.update(header)
            s.content.update(raw)
        if topic not in mapped:
            continue
        message = reader.deserialize(raw, connection.msgtype)
        for pose in poses.get(topic, ()):
            point = read_pose(message, pose)
            frame = read_frame(message)
            for s in hits:
                begins, ends = s.window.active
                if stamp <= begins or pose.name not in s.first:
                    # the last at or before the activity starts, else the first after
                    s.first[pose.name], s.first_frames[pose.name] = point, frame
                if stamp >= ends:
                    s.after_end.setdefault(pose.name, point)  # the first at or after it ends ...
                else:
                    s.last[pose.name] = point  # ... else the last before
        if bag_map.objects is not None and topic == bag_map.objects.topic:
            counted = hits[0].sightings  # a message in several windows is counted once
            for one in read_sightings(message, bag_map.objects, stamp, counted):
                for s in hits:
                    s.sightings.add(one)
        if topic == bag_map.joints:
            for s in hits:
                s.joints.append((stamp, message))
        if topic == bag_map.outcome:
            success, detail = read_outcome(message, bag_map.outcome_field)
            for s in hits:
                if success is not None:
                    s.outcome = success
                s.outcome_detail.update(detail)
    for s in slices:
        s.last.update(s.after_end)
    return slices


def check_windows_hold_messages(reader: AnyReader, slices: Sequence[Slice], topics: Sequence[str]) -> None:
    """Raise ``ValidationError`` naming every explicit window without a message of ``topics``."""
    empty = [s.window for s in slices if s.messages == 0]
    if not empty:
        return
    start = reader.start_time
    named = ", ".join(
        f"[{(w.start_ns - start) / 1e9:g}, {(w.end_ns - start) / 1e9:g}] s" for w in empty[:_VALUES_SHOWN]
    )
    span = (reader.end_time - 1 - start) / 1e9
    raise ValidationError(
        f"episodes.windows: {named} {'holds' if len(empty) == 1 else 'hold'} no message of "
        f"{', '.join(topics)}; the bag spans [0, {span:.3f}] s from its start"
    )


def episode_key(window: Window, content: str) -> str:
    """Return the stable key of one episode: its window and the digest of the messages read in it."""
    return hashlib.sha256(f"{window.start_ns}:{window.end_ns}:{content}".encode()).hexdigest()[:32]


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
    s: Slice,
    bag_map: BagMap,
    *,
    bag: Path,
    storage: str,
    bag_start_ns: int,
    key: str,
    topics: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Return the four-section context of one episode, with its provenance (``topics``: every topic read,
    the boundary topic included; the map's topics when None)."""
    w = s.window
    spatial = {f"{name}_initial": point for name, point in s.first.items()}
    spatial.update({f"{name}_final": point for name, point in s.last.items()})
    layout = bag_map.layout if bag_map.layout is not None else tuple(p.name for p in bag_map.poses)
    if layout and all(name in s.first for name in layout):
        spatial["layout_initial"] = [x for name in layout for x in s.first[name]]
    spatial.update(episode_place(s, bag_map))
    task: dict[str, Any] = {**s.outcome_detail, **dict(bag_map.task)}
    begins, ends = w.active
    task.update(episode=w.index, duration_s=round((ends - begins) / 1e9, 6))
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
                "topics": list(bag_map.topics() if topics is None else topics),
                "t_start_ns": w.start_ns,
                "t_end_ns": w.end_ns,
                "start_offset_s": round((w.start_ns - bag_start_ns) / 1e9, 9),
                "key": key,
            },
        }
    )
    return context


def episode_place(s: Slice, bag_map: BagMap) -> dict[str, Any]:
    """Return ``position`` and ``frame``: where the episode happened, for regions, ``last_seen`` and ``around``.

    The position is the map's first pose at the start (when it has 2 or 3 coordinates), its frame the
    ``header.frame_id`` of the message that gave it (left out when the message names none: the default).
    """
    anchor = bag_map.poses[0].name if bag_map.poses else None
    point = s.first.get(anchor) if anchor else None
    if point is None or len(point) not in (2, 3):
        return {}
    frame = s.first_frames.get(anchor) if anchor else None
    return {"position": list(point)} | ({"frame": frame} if frame else {})


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
    """Return the keys among ``keys`` that already name an active memory (``provenance.key``).

    Looked up directly, in pages: the recall limit (``max_n``) does not bound an import.
    """
    found = context_values(memory.engine, "provenance.key", keys, collection)
    return {str(k) for k in found}


def import_bag(
    memory: Any,
    path: str | Path,
    bag_map: BagMap,
    boundaries: Boundaries,
    *,
    collection: str | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Import the episodes of one bag; return ``{"bag", "storage", "episodes", "imported", "skipped",
    "unclosed", "warnings", "sightings", "memory_ids", "session_ids"}``.

    Each new episode is one session with one memory (and a perception when ``bag_map.joints`` is set, and
    one per sighting of an object when ``bag_map.objects`` is: ``sightings`` counts them),
    ended with ``outcome_score`` 1.0 / 0.0 when the outcome is known. Episodes already imported
    (same ``provenance.key``: same window, same messages) are skipped. ``progress`` hears the
    ``reading`` stage (messages) and the ``episodes`` stage. Raises ``ValidationError`` — before anything
    is written — for a bag that cannot be read, a topic the bag lacks (listing what it has), messages
    without the mapped fields, boundaries that find no episode (naming the marker values seen), or an
    explicit window holding no message (naming the bag's time range). ``warnings`` lists marker
    mistakes that were mended: an episode without its end marker ends at the next start or the bag's
    end (``unclosed`` counts them), an end marker without a start is ignored.
    """
    bag = Path(path).resolve()
    storage = storage_of(bag)
    check_plan(bag_map, boundaries)
    if not bag_map.topics() and boundaries.windows:
        raise ValidationError(
            "map: names no topic (poses, joints, outcome or objects); an episode of a window would hold nothing"
        )
    topics = list(dict.fromkeys([*bag_map.topics(), *boundaries.topics()]))
    reader = open_bag(bag)
    try:
        check_topics(reader, topics, bag)
        counts = Counter({c.topic: c.msgcount for c in reader.connections if c.topic in topics})
        reading = Reading(progress, sum(counts.values()) + sum(counts[t] for t in boundaries.topics()))
        cut = find_windows(reader, boundaries, reading)
        slices = read_slices(
            reader, bag_map, cut.windows, boundaries.topics(), reading, memory.settings.object_group_radius
        )
        if boundaries.windows:
            check_windows_hold_messages(reader, slices, topics)
        reading.done()
        bag_start = reader.start_time
    except RobotMemError:
        raise
    except Exception as exc:  # a damaged message or index: the reader's and deserialiser's own errors
        raise ValidationError(f"bag: {bag} cannot be read: {type(exc).__name__}: {exc}") from exc
    finally:
        reader.close()
    keys = [episode_key(s.window, s.content.hexdigest()) for s in slices]
    done = existing_keys(memory, keys, collection)
    result: dict[str, Any] = {
        "bag": str(bag),
        "storage": storage,
        "episodes": len(slices),
        "imported": 0,
        "skipped": 0,
        "unclosed": cut.unclosed,
        "warnings": cut.warnings,
        "sightings": 0,
        "memory_ids": [],
        "session_ids": [],
    }
    settings = memory.settings
    # Every episode's context is built and checked before the first is written.
    contexts: dict[str, dict[str, Any]] = {}
    for s, key in zip(slices, keys, strict=True):
        if key not in done and key not in contexts:
            context = episode_context(
                s, bag_map, bag=bag, storage=storage, bag_start_ns=bag_start, key=key, topics=topics
            )
            contexts[key] = parse_json_object("context", context, settings.max_context_bytes)
    # end_session's related memories are not read here: with related_top_k 0 it runs no recall.
    memory.settings = settings.replace(related_top_k=0)
    try:
        for s, key in zip(slices, keys, strict=True):
            if key in done:
                result["skipped"] += 1
            else:
                context = contexts[key]
                memory_id, session_id, sighted = _store_episode(memory, s, bag_map, bag, context, collection)
                done.add(key)  # a bag whose windows repeat one another stores the episode once
                result["imported"] += 1
                result["sightings"] += sighted
                result["memory_ids"].append(memory_id)
                result["session_ids"].append(session_id)
            if progress is not None:
                progress("episodes", 1, len(slices))
    finally:
        memory.settings = settings
    if bag_map.objects is not None:
        result["warnings"] += _sighting_warnings(slices, bag_map.objects.topic)
    return result


def _sighting_warnings(slices: Sequence[Slice], topic: str) -> list[str]:
    warnings = []
    if unnamed := sum(s.sightings.skipped for s in slices):
        warnings.append(f"objects: {unnamed} detections on {topic} named neither an id nor a label; skipped")
    if drifted := sum(s.sightings.drifted for s in slices):
        warnings.append(
            f"objects: {drifted} detections on {topic} are stamped more than an hour from the time the bag "
            "recorded them (another clock: simulation time?); the bag's time was taken"
        )
    return warnings


def _store_episode(
    memory: Any, s: Slice, bag_map: BagMap, bag: Path, context: dict[str, Any], collection: str | None
) -> tuple[int, str, int]:
    """Store one episode; return its memory id, its session id and how many sightings it stored."""
    session = memory.start_session(
        context={"robot": context["robot"], "task": context["task"], "provenance": context["provenance"]},
        collection=collection,
    )["session_id"]
    # The episode happened when its window starts in the recording (bag time: nanoseconds since the epoch).
    observed = s.window.start_ns / 1e9
    learned = memory.learn(
        describe(context, bag),
        context=context,
        collection=collection,
        session_id=session,
        observed_at=observed,
    )
    memory_id = learned["memory_id"] if learned["status"] == "created" else learned["existing_id"]
    if bag_map.joints and s.joints:
        payload = joint_payload(s.joints, bag_map.joint_samples)
        memory.save_perceptions(
            [
                {
                    "description": (
                        f"Joint trajectory of episode {s.window.index}: {len(payload['t_ns'])} of "
                        f"{len(s.joints)} states sampled"
                    ),
                    "perception_type": "procedural",
                    "data": payload,
                    "metadata": {"provenance": context["provenance"]},
                    "collection": collection,
                    "session_id": session,
                    "observed_at": s.joints[0][0] / 1e9,
                }
            ]
        )
    topic = bag_map.objects.topic if bag_map.objects else ""
    seen = [
        {**sighting_item(one, topic), "collection": collection, "session_id": session}
        for one in s.sightings.done()
    ]  # empty without a detection topic
    for start in range(0, len(seen), _SIGHTINGS_PER_BATCH):
        memory.save_perceptions(seen[start : start + _SIGHTINGS_PER_BATCH])
    score = None if s.outcome is None else (1.0 if s.outcome else 0.0)
    memory.end_session(session, outcome_score=score)
    return int(memory_id), str(session), len(seen)


__all__ = [
    "BagMap",
    "Boundaries",
    "Cut",
    "PoseTopic",
    "Window",
    "import_bag",
    "load_map",
    "map_from_dict",
    "open_bag",
]
