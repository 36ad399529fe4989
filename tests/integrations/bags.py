"""Bags written at test time: rosbag2 (sqlite3, MCAP) and ROS 1 by ``rosbags``, MCAP by ``mcap_ros2``.

``plan_episodes`` draws the episodes (layout, outcome, timing); each writer turns the same plan into
its format, so a test knows the truth it must recall.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

BAG_START_NS = 1_700_000_000_000_000_000
EPISODE_NS = 2_000_000_000  # an episode lasts 2 s ...
PAUSE_NS = 1_000_000_000  # ... and 1 s of nothing lies between two
JOINTS = ["shoulder", "elbow", "wrist"]


@dataclass(frozen=True)
class PlannedEpisode:
    index: int
    start_ns: int
    object_initial: tuple[float, float, float]
    object_final: tuple[float, float, float]
    goal: tuple[float, float, float]
    success: bool

    @property
    def end_ns(self) -> int:
        return self.start_ns + EPISODE_NS

    @property
    def layout(self) -> list[float]:
        return [*self.object_initial, *self.goal]


def plan_episodes(count: int, seed: int = 7) -> list[PlannedEpisode]:
    rng = random.Random(seed)
    plans = []
    for i in range(count):
        start = BAG_START_NS + i * (EPISODE_NS + PAUSE_NS)
        obj = tuple(round(rng.uniform(-1, 1), 4) for _ in range(3))
        goal = tuple(round(rng.uniform(-1, 1), 4) for _ in range(3))
        final = tuple(round(o + rng.uniform(-0.1, 0.1), 4) for o in obj)
        plans.append(PlannedEpisode(i, start, obj, final, goal, rng.random() < 0.6))  # type: ignore[arg-type]
    return plans


def events(plans: list[PlannedEpisode], *, outcome_as: str = "bool") -> list[tuple[str, int, str, object]]:
    """Return ``(topic, t_ns, kind, value)`` in time order: markers, poses, joints, outcomes."""
    out: list[tuple[str, int, str, object]] = []
    for p in plans:
        out.append(("/episode", p.start_ns, "string", "start"))
        for k in range(3):  # object moves from its initial to its final pose
            share = k / 2
            point = tuple(a + (b - a) * share for a, b in zip(p.object_initial, p.object_final, strict=True))
            out.append(("/object_pose", p.start_ns + 10_000_000 + k * 500_000_000, "pose", point))
        out.append(("/goal", p.start_ns + 20_000_000, "point", p.goal))
        for k in range(6):
            out.append(
                (
                    "/joint_states",
                    p.start_ns + 100_000_000 + k * 300_000_000,
                    "joints",
                    [0.1 * k, -0.2, 0.3 + k],
                )
            )
        if outcome_as == "bool":
            out.append(("/outcome", p.end_ns - 20_000_000, "bool", p.success))
        elif outcome_as == "json":
            text = json.dumps({"success": p.success, "reward": 1.0 if p.success else -1.0})
            out.append(("/outcome", p.end_ns - 20_000_000, "string", text))
        else:  # JSON whose keys no filter path could reach as written
            text = json.dumps({"success": p.success, "reward.total": 1.0 if p.success else -1.0, "$by": "op"})
            out.append(("/outcome", p.end_ns - 20_000_000, "string", text))
        out.append(("/episode", p.end_ns, "string", "end"))
    out.sort(key=lambda e: e[1])
    return out


MSGTYPES = {
    "int": "std_msgs/msg/Int32",
    "string": "std_msgs/msg/String",
    "bool": "std_msgs/msg/Bool",
    "pose": "geometry_msgs/msg/PoseStamped",
    "point": "geometry_msgs/msg/PointStamped",
    "joints": "sensor_msgs/msg/JointState",
}


def _header(T, t_ns: int, frame_id: str, ros1: bool):  # type: ignore[no-untyped-def]
    """A ``std_msgs/Header`` stamped ``t_ns`` in ``frame_id`` (ROS 1's has a ``seq``)."""
    stamp = T["builtin_interfaces/msg/Time"](sec=t_ns // 10**9, nanosec=t_ns % 10**9)
    seq = {"seq": 0} if ros1 else {}
    return T["std_msgs/msg/Header"](**seq, stamp=stamp, frame_id=frame_id)


def _build(ts, kind: str, t_ns: int, value, ros1: bool, frame_id: str = "map"):  # type: ignore[no-untyped-def]
    T = ts.types
    header = _header(T, t_ns, frame_id, ros1)
    if kind == "int":
        return T["std_msgs/msg/Int32"](data=value)
    if kind == "string":
        return T["std_msgs/msg/String"](data=value)
    if kind == "bool":
        return T["std_msgs/msg/Bool"](data=value)
    if kind == "pose":
        point = T["geometry_msgs/msg/Point"](x=value[0], y=value[1], z=value[2])
        quat = T["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=0.0, w=1.0)
        pose = T["geometry_msgs/msg/Pose"](position=point, orientation=quat)
        return T["geometry_msgs/msg/PoseStamped"](header=header, pose=pose)
    if kind == "point":
        point = T["geometry_msgs/msg/Point"](x=value[0], y=value[1], z=value[2])
        return T["geometry_msgs/msg/PointStamped"](header=header, point=point)
    import numpy as np

    return T["sensor_msgs/msg/JointState"](
        header=header,
        name=list(JOINTS),
        position=np.array(value, dtype=np.float64),
        velocity=np.zeros(3),
        effort=np.zeros(3),
    )


def write_rosbags(
    path: Path, plans: list[PlannedEpisode], storage: str, *, outcome_as: str = "bool", frame_id: str = "map"
) -> Path:
    """Write the plan with ``rosbags``: ``storage`` is ``sqlite3``, ``mcap`` (rosbag2) or ``ros1``; every
    stamped message's header names ``frame_id``."""
    return write_stream(path, events(plans, outcome_as=outcome_as), storage, frame_id=frame_id)


def _writer(path: Path, storage: str):  # type: ignore[no-untyped-def]
    """The bag path and an unopened ``rosbags`` writer: ROS 1 (``ros1``, a ``.bag``) or rosbag2 version 9
    with ``sqlite3`` or ``mcap`` storage."""
    if storage == "ros1":
        from rosbags.rosbag1 import Writer as Ros1Writer

        return path.with_suffix(".bag"), Ros1Writer(path.with_suffix(".bag"))
    from rosbags.rosbag2 import StoragePlugin
    from rosbags.rosbag2 import Writer as Ros2Writer

    plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
    return path, Ros2Writer(path, version=9, storage_plugin=plugin)


def write_stream(
    path: Path, stream: list[tuple[str, int, str, object]], storage: str, *, frame_id: str = "map"
) -> Path:
    """Write ``(topic, t_ns, kind, value)`` events (in time order) with ``rosbags`` in ``storage``."""
    from rosbags.typesys import Stores, get_typestore

    ros1 = storage == "ros1"
    ts = get_typestore(Stores.ROS1_NOETIC if ros1 else Stores.ROS2_HUMBLE)
    bag, writer_cm = _writer(path, storage)
    with writer_cm as writer:
        connections = {}
        for topic, t_ns, kind, value in stream:
            if topic not in connections:
                connections[topic] = writer.add_connection(topic, MSGTYPES[kind], typestore=ts)
            message = _build(ts, kind, t_ns, value, ros1, frame_id)
            raw = (
                ts.serialize_ros1(message, MSGTYPES[kind])
                if ros1
                else ts.serialize_cdr(message, MSGTYPES[kind])
            )
            writer.write(connections[topic], t_ns, raw)
    return bag


MCAP_DEFS = {
    "std_msgs/msg/String": "string data",
    "std_msgs/msg/Bool": "bool data",
    "geometry_msgs/msg/Point": "float64 x\nfloat64 y\nfloat64 z",
}


def write_mcap_ros2(path: Path, plans: list[PlannedEpisode]) -> Path:
    """Write the plan with the official ``mcap_ros2`` writer: poses as Point, outcomes as JSON strings."""
    from mcap_ros2.writer import Writer

    bag = path.with_suffix(".mcap")
    with bag.open("wb") as f:
        writer = Writer(f)
        schemas = {name: writer.register_msgdef(name, text) for name, text in MCAP_DEFS.items()}
        for topic, t_ns, kind, value in events(plans, outcome_as="json"):
            if kind == "string":
                writer.write_message(topic, schemas["std_msgs/msg/String"], {"data": value}, log_time=t_ns)
            elif kind in ("pose", "point"):
                point = {"x": value[0], "y": value[1], "z": value[2]}  # type: ignore[index]
                writer.write_message(topic, schemas["geometry_msgs/msg/Point"], point, log_time=t_ns)
            # joint states are left out: this bag checks the format, not every mapping
        writer.finish()
    return bag


# vision_msgs as released: Humble and later (tracking id ``id``, class in ``hypothesis.class_id``) and ROS 1
# Noetic (no tracking id, class as an integer ``id``). ``Detection2D`` is Humble's, its box in pixels.
VISION_MSGS = {
    "humble": {
        "vision_msgs/msg/ObjectHypothesis": "string class_id\nfloat64 score",
        "vision_msgs/msg/ObjectHypothesisWithPose": (
            "vision_msgs/ObjectHypothesis hypothesis\ngeometry_msgs/PoseWithCovariance pose"
        ),
        "vision_msgs/msg/BoundingBox3D": "geometry_msgs/Pose center\ngeometry_msgs/Vector3 size",
        "vision_msgs/msg/Detection3D": (
            "std_msgs/Header header\nvision_msgs/ObjectHypothesisWithPose[] results\n"
            "vision_msgs/BoundingBox3D bbox\nstring id"
        ),
        "vision_msgs/msg/Detection3DArray": "std_msgs/Header header\nvision_msgs/Detection3D[] detections",
        "vision_msgs/msg/Point2D": "float64 x\nfloat64 y",
        "vision_msgs/msg/Pose2D": "vision_msgs/Point2D position\nfloat64 theta",
        "vision_msgs/msg/BoundingBox2D": "vision_msgs/Pose2D center\nfloat64 size_x\nfloat64 size_y",
        "vision_msgs/msg/Detection2D": (
            "std_msgs/Header header\nvision_msgs/ObjectHypothesisWithPose[] results\n"
            "vision_msgs/BoundingBox2D bbox\nstring id"
        ),
        "vision_msgs/msg/Detection2DArray": "std_msgs/Header header\nvision_msgs/Detection2D[] detections",
    },
    "noetic": {
        "vision_msgs/msg/ObjectHypothesisWithPose": (
            "int64 id\nfloat64 score\ngeometry_msgs/PoseWithCovariance pose"
        ),
        "vision_msgs/msg/BoundingBox3D": "geometry_msgs/Pose center\ngeometry_msgs/Vector3 size",
        "vision_msgs/msg/Detection3D": (
            "std_msgs/Header header\nvision_msgs/ObjectHypothesisWithPose[] results\nvision_msgs/BoundingBox3D bbox"
        ),
        "vision_msgs/msg/Detection3DArray": "std_msgs/Header header\nvision_msgs/Detection3D[] detections",
    },
}


@dataclass(frozen=True)
class Detected:
    """One detection in a test bag: a tracking id ("" for none), its class, score and box centre."""

    object_id: str
    class_id: str
    position: tuple[float, float, float]
    score: float = 0.9
    stamp_ns: int | None = None  # the detection's own header stamp (None: the array's)
    frame_id: str | None = None  # the detection's own header frame (None: the array's)
    boxed: bool = True  # False: the box left zero, the position in the hypothesis' pose only


def write_detections(
    path: Path,
    frames: list[tuple[int, str, list[Detected]]],
    storage: str,
    *,
    topic: str = "/detections",
    two_d: bool = False,
) -> Path:
    """Write ``(t_ns, frame_id, detections)`` as ``vision_msgs`` detection arrays with ``rosbags``: Humble's
    types for rosbag2 (``sqlite3``, ``mcap``; ``two_d`` for ``Detection2DArray``), Noetic's for ``ros1``
    (the class a number, no tracking id). Each array's header carries its time and frame."""
    import numpy as np
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    ros1 = storage == "ros1"
    ts = get_typestore(Stores.ROS1_NOETIC if ros1 else Stores.ROS2_HUMBLE)
    types: dict[str, object] = {}
    for name, text in VISION_MSGS["noetic" if ros1 else "humble"].items():
        types.update(get_types_from_msg(text, name))
    ts.register(types)  # type: ignore[arg-type]
    T = ts.types
    kind = "vision_msgs/msg/Detection2DArray" if two_d else "vision_msgs/msg/Detection3DArray"

    def pose(p: tuple[float, float, float]):  # type: ignore[no-untyped-def]
        point = T["geometry_msgs/msg/Point"](x=p[0], y=p[1], z=p[2])
        return T["geometry_msgs/msg/Pose"](
            position=point, orientation=T["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=0.0, w=1.0)
        )

    def detection(header, d: Detected):  # type: ignore[no-untyped-def]
        if d.stamp_ns is not None or d.frame_id is not None:
            t_ns = header.stamp.sec * 10**9 + header.stamp.nanosec if d.stamp_ns is None else d.stamp_ns
            header = _header(T, t_ns, header.frame_id if d.frame_id is None else d.frame_id, ros1)
        with_cov = T["geometry_msgs/msg/PoseWithCovariance"](pose=pose(d.position), covariance=np.zeros(36))
        if ros1:
            result = T["vision_msgs/msg/ObjectHypothesisWithPose"](
                id=int(d.class_id), score=d.score, pose=with_cov
            )
        else:
            hypothesis = T["vision_msgs/msg/ObjectHypothesis"](class_id=d.class_id, score=d.score)
            result = T["vision_msgs/msg/ObjectHypothesisWithPose"](hypothesis=hypothesis, pose=with_cov)
        size = T["geometry_msgs/msg/Vector3"](x=0.1, y=0.1, z=0.1)
        if two_d:
            center = T["vision_msgs/msg/Pose2D"](
                position=T["vision_msgs/msg/Point2D"](x=320.0, y=240.0), theta=0.0
            )
            box = T["vision_msgs/msg/BoundingBox2D"](center=center, size_x=20.0, size_y=20.0)
            return T["vision_msgs/msg/Detection2D"](header=header, results=[result], bbox=box, id=d.object_id)
        if not d.boxed:
            size = T["geometry_msgs/msg/Vector3"](x=0.0, y=0.0, z=0.0)
        box = T["vision_msgs/msg/BoundingBox3D"](
            center=pose(d.position if d.boxed else (0.0, 0.0, 0.0)), size=size
        )
        if ros1:
            return T["vision_msgs/msg/Detection3D"](header=header, results=[result], bbox=box)
        return T["vision_msgs/msg/Detection3D"](header=header, results=[result], bbox=box, id=d.object_id)

    bag, writer_cm = _writer(path, storage)
    with writer_cm as writer:
        connection = writer.add_connection(topic, kind, typestore=ts)
        for t_ns, frame_id, detections in frames:
            header = _header(T, t_ns, frame_id, ros1)
            message = T[kind](header=header, detections=[detection(header, d) for d in detections])
            raw = ts.serialize_ros1(message, kind) if ros1 else ts.serialize_cdr(message, kind)
            writer.write(connection, t_ns, raw)
    return bag
