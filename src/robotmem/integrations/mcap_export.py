"""Recalled memories and episodes written to an MCAP file that Foxglove (and ``ros2 bag``) open.

Needs the extra ``robotmem[ros]``. The file has the ``ros2`` profile, ``ros2msg`` schemas and CDR
messages, so Foxglove, ``rosbags`` and ``ros2 bag play`` read it alike::

    from robotmem import RobotMemory
    from robotmem.integrations.mcap_export import export_mcap

    with RobotMemory() as mem:
        found = mem.recall("grasp", context_filter={"task.success": True}, include_data=True)
        export_mcap(found["memories"], "recalled.mcap")

Channels, each message stamped at the memory's time (``provenance.t_start_ns`` for an imported
episode, else ``observed_at``, when it happened, else ``created_at``):

- ``/robotmem/memories`` (``std_msgs/msg/String``): the memory record as JSON text (Raw Messages panel);
- ``/robotmem/log`` (``foxglove_msgs/msg/Log``): the insight text with its outcome as the level (Log
  panel: failures show as warnings);
- ``/robotmem/spatial/<name>`` (``geometry_msgs/msg/PointStamped``): every 3-number ``spatial`` field
  (3D panel), its ``header.frame_id`` the memory's ``spatial.frame`` (``map`` when it names none);
- ``/robotmem/joint_states`` (``sensor_msgs/msg/JointState``): the samples of a joint-trajectory
  perception (``joint_names``, ``t_ns``, ``positions``; recall with ``include_data=True``) at their times.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from robotmem.errors import ValidationError
from robotmem.query.regions import DEFAULT_FRAME
from robotmem.service.files import new_file

try:
    from mcap.writer import CompressionType, Writer
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "robotmem.integrations.mcap_export needs the extra: pip install 'robotmem[ros]'"
    ) from exc

LOG_MSG = """builtin_interfaces/Time timestamp
uint8 level
string message
string name
string file
uint32 line
"""
_LEVEL_INFO, _LEVEL_WARNING = 2, 3  # foxglove_msgs/Log levels


def _typestore() -> Any:
    store = get_typestore(Stores.ROS2_HUMBLE)
    store.register(get_types_from_msg(LOG_MSG, "foxglove_msgs/msg/Log"))
    return store


# builtin_interfaces/msg/Time holds int32 seconds and MCAP uint64 nanoseconds: 1970-01-01 .. 2038-01-19.
MAX_STAMP_NS = (2**31 - 1) * 10**9 + 999_999_999


def stamp_ns(memory: Mapping[str, Any]) -> int:
    """Return the time a memory's messages carry: its episode's start in the bag, else ``observed_at``
    (when it happened), else ``created_at``.

    Raises ``ValidationError`` naming the memory when it has no readable time or one outside
    0..``MAX_STAMP_NS`` nanoseconds (what a ROS 2 message in MCAP can carry).
    """
    context = memory.get("context")
    where = context.get("provenance") if isinstance(context, Mapping) else None
    start = where.get("t_start_ns") if isinstance(where, Mapping) else None
    if isinstance(start, int) and not isinstance(start, bool):
        return _checked_stamp(memory, "provenance.t_start_ns", start)
    created = memory.get("observed_at") or memory.get("created_at")
    if isinstance(created, str):
        try:
            moment = datetime.fromisoformat(created)
        except ValueError:
            raise ValidationError(
                f"memories: memory {memory.get('id')} has created_at {created[:40]!r}, not an ISO 8601 time"
            ) from None
        return _checked_stamp(memory, "created_at", int(moment.timestamp() * 1e9))
    raise ValidationError(
        f"memories: memory {memory.get('id')} has no created_at; pass recall or list results"
    )


def _checked_stamp(memory: Mapping[str, Any], field: str, value: int) -> int:
    if not 0 <= value <= MAX_STAMP_NS:
        raise ValidationError(
            f"memories: memory {memory.get('id')}: {field} is {value} ns; an MCAP ROS 2 message carries "
            f"0..{MAX_STAMP_NS} ns (1970-01-01 to 2038-01-19 UTC)"
        )
    return value


def joint_samples(memory: Mapping[str, Any]) -> list[tuple[int, list[str], list[float]]]:
    """Return ``(t_ns, joint_names, positions)`` of a joint-trajectory perception's data, else ``[]``.

    Raises ``ValidationError`` naming the memory when its data has the three keys but not the shape:
    ``joint_names`` texts, ``t_ns`` integers within 0..``MAX_STAMP_NS`` and ``positions`` lists of
    finite numbers, one per time.
    """
    data = memory.get("data")
    if not (isinstance(data, Mapping) and {"joint_names", "t_ns", "positions"} <= set(data)):
        return []
    names, times, positions = data["joint_names"], data["t_ns"], data["positions"]
    where = f"memories: memory {memory.get('id')}: data"
    if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        raise ValidationError(f"{where}.joint_names: expected a list of texts")
    if not (isinstance(times, list) and isinstance(positions, list) and len(times) == len(positions)):
        raise ValidationError(f"{where}: t_ns and positions must be lists of one length")
    samples = []
    for i, (t, position) in enumerate(zip(times, positions, strict=True)):
        if isinstance(t, bool) or not isinstance(t, int):
            raise ValidationError(f"{where}.t_ns[{i}]: expected an integer of nanoseconds, got {t!r:.40}")
        _checked_stamp(memory, f"data.t_ns[{i}]", t)
        if not (isinstance(position, list) and all(_is_finite(x) for x in position)):
            raise ValidationError(f"{where}.positions[{i}]: expected a list of finite numbers")
        samples.append((t, names, [float(x) for x in position]))
    return samples


def _is_finite(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an integer beyond the float range
        return False


def _point(value: Any) -> tuple[float, float, float] | None:
    if isinstance(value, list) and len(value) == 3 and all(_is_finite(x) for x in value):
        return float(value[0]), float(value[1]), float(value[2])
    return None


class _Out:
    """An MCAP writer with one channel per topic, schemas from the typestore."""

    def __init__(self, stream: Any) -> None:
        self.ts = _typestore()
        self.writer = Writer(stream, compression=CompressionType.ZSTD)
        self.writer.start(profile="ros2", library="robotmem")
        self.schemas: dict[str, int] = {}
        self.channels: dict[str, int] = {}
        self.count = 0

    def channel(self, topic: str, msgtype: str) -> int:
        if topic not in self.channels:
            if msgtype not in self.schemas:
                text, _ = self.ts.generate_msgdef(msgtype, ros_version=2)
                self.schemas[msgtype] = self.writer.register_schema(msgtype, "ros2msg", text.encode())
            self.channels[topic] = self.writer.register_channel(topic, "cdr", self.schemas[msgtype])
        return self.channels[topic]

    def write(self, topic: str, msgtype: str, t_ns: int, message: Any) -> None:
        data = self.ts.serialize_cdr(message, msgtype)
        self.writer.add_message(
            self.channel(topic, msgtype), log_time=t_ns, publish_time=t_ns, data=bytes(data)
        )
        self.count += 1

    def header(self, t_ns: int, frame: str = DEFAULT_FRAME) -> Any:
        T = self.ts.types
        return T["std_msgs/msg/Header"](stamp=self.time(t_ns), frame_id=frame)

    def time(self, t_ns: int) -> Any:
        return self.ts.types["builtin_interfaces/msg/Time"](sec=t_ns // 10**9, nanosec=t_ns % 10**9)


def export_mcap(memories: Iterable[Mapping[str, Any]], path: str | Path) -> dict[str, Any]:
    """Write ``memories`` (recall's or a listing's records) to a new MCAP file at ``path``.

    Every record is checked before anything is written; the file is written under a temporary name
    beside ``path`` and renamed once complete, so a failure leaves no file. Returns ``{"path",
    "memories", "messages", "topics"}``. Raises ``ValidationError`` when ``path`` exists or cannot be
    written, or a record has no time or one MCAP cannot carry (``stamp_ns``, ``joint_samples``).
    """
    out_path = Path(path)
    if out_path.exists():
        raise ValidationError(f"path: {out_path} exists; export-mcap writes a new file")
    records = sorted(((stamp_ns(m), m) for m in memories), key=lambda pair: (pair[0], _order(pair[1])))
    joints = [joint_samples(m) for _, m in records]
    with new_file(out_path) as partial, partial.open("wb") as stream:
        out = _Out(stream)
        for (t_ns, memory), samples in zip(records, joints, strict=True):
            _write_memory(out, memory, t_ns, samples)
        out.writer.finish()  # type: ignore[no-untyped-call]
    return {
        "path": str(out_path),
        "memories": len(records),
        "messages": out.count,
        "topics": sorted(out.channels),
    }


def _order(memory: Mapping[str, Any]) -> int:
    memory_id = memory.get("id", 0)
    return memory_id if isinstance(memory_id, int) else 0


def _write_memory(
    out: _Out, memory: Mapping[str, Any], t_ns: int, samples: list[tuple[int, list[str], list[float]]]
) -> None:
    T = out.ts.types
    record = {k: v for k, v in memory.items() if k not in ("data", "metadata")}
    text = json.dumps(record, ensure_ascii=False, default=str)
    out.write("/robotmem/memories", "std_msgs/msg/String", t_ns, T["std_msgs/msg/String"](data=text))
    task = memory.get("task")
    success = task.get("success") if isinstance(task, Mapping) else None
    log = T["foxglove_msgs/msg/Log"](
        timestamp=out.time(t_ns),
        level=_LEVEL_WARNING if success is False else _LEVEL_INFO,
        message=str(memory.get("content", "")),
        name=f"robotmem/{memory.get('collection', '')}",
        file=f"memory {memory.get('id', '')}",
        line=_order(memory) % 2**32,
    )
    out.write("/robotmem/log", "foxglove_msgs/msg/Log", t_ns, log)
    spatial = memory.get("spatial")
    spatial = spatial if isinstance(spatial, Mapping) else {}
    frame = spatial.get("frame")
    frame = frame if isinstance(frame, str) and frame else DEFAULT_FRAME
    for name, value in sorted(spatial.items()):
        xyz = _point(value)
        if xyz is not None:
            point = T["geometry_msgs/msg/Point"](x=xyz[0], y=xyz[1], z=xyz[2])
            message = T["geometry_msgs/msg/PointStamped"](header=out.header(t_ns, frame), point=point)
            out.write(f"/robotmem/spatial/{name}", "geometry_msgs/msg/PointStamped", t_ns, message)
    for sample_ns, names, position in samples:
        state = T["sensor_msgs/msg/JointState"](
            header=out.header(sample_ns),
            name=names,
            position=np.asarray(position, dtype=np.float64),
            velocity=np.zeros(0),
            effort=np.zeros(0),
        )
        out.write("/robotmem/joint_states", "sensor_msgs/msg/JointState", sample_ns, state)
