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
- ``/robotmem/spatial/<name>`` (``geometry_msgs/msg/PointStamped``, frame ``map``): every 3-number
  ``spatial`` field (3D panel);
- ``/robotmem/joint_states`` (``sensor_msgs/msg/JointState``): the samples of a joint-trajectory
  perception (``joint_names``, ``t_ns``, ``positions``; recall with ``include_data=True``) at their times.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from robotmem.errors import ValidationError

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


def stamp_ns(memory: Mapping[str, Any]) -> int:
    """Return the time a memory's messages carry: its episode's start in the bag, else ``observed_at``
    (when it happened), else ``created_at``."""
    where = (memory.get("context") or {}).get("provenance") or {}
    if isinstance(where.get("t_start_ns"), int):
        return int(where["t_start_ns"])
    created = memory.get("observed_at") or memory.get("created_at")
    if isinstance(created, str):
        return int(datetime.fromisoformat(created).timestamp() * 1e9)
    raise ValidationError(
        f"memories: memory {memory.get('id')} has no created_at; pass recall or list results"
    )


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

    def header(self, t_ns: int) -> Any:
        T = self.ts.types
        return T["std_msgs/msg/Header"](stamp=self.time(t_ns), frame_id="map")

    def time(self, t_ns: int) -> Any:
        return self.ts.types["builtin_interfaces/msg/Time"](sec=t_ns // 10**9, nanosec=t_ns % 10**9)


def export_mcap(memories: Iterable[Mapping[str, Any]], path: str | Path) -> dict[str, Any]:
    """Write ``memories`` (recall's or a listing's records) to a new MCAP file at ``path``.

    Returns ``{"path", "memories", "messages", "topics"}``. Raises ``ValidationError`` when ``path``
    exists or a record has no time.
    """
    out_path = Path(path)
    if out_path.exists():
        raise ValidationError(f"path: {out_path} exists; export-mcap writes a new file")
    records = sorted(memories, key=lambda m: (stamp_ns(m), m.get("id", 0)))
    with out_path.open("wb") as stream:
        out = _Out(stream)
        for memory in records:
            _write_memory(out, memory)
        out.writer.finish()  # type: ignore[no-untyped-call]
    return {
        "path": str(out_path),
        "memories": len(records),
        "messages": out.count,
        "topics": sorted(out.channels),
    }


def _write_memory(out: _Out, memory: Mapping[str, Any]) -> None:
    T, t_ns = out.ts.types, stamp_ns(memory)
    record = {k: v for k, v in memory.items() if k not in ("data", "metadata")}
    text = json.dumps(record, ensure_ascii=False, default=str)
    out.write("/robotmem/memories", "std_msgs/msg/String", t_ns, T["std_msgs/msg/String"](data=text))
    success = (memory.get("task") or {}).get("success")
    log = T["foxglove_msgs/msg/Log"](
        timestamp=out.time(t_ns),
        level=_LEVEL_WARNING if success is False else _LEVEL_INFO,
        message=str(memory.get("content", "")),
        name=f"robotmem/{memory.get('collection', '')}",
        file=f"memory {memory.get('id', '')}",
        line=int(memory.get("id") or 0),
    )
    out.write("/robotmem/log", "foxglove_msgs/msg/Log", t_ns, log)
    for name, value in sorted((memory.get("spatial") or {}).items()):
        if isinstance(value, list) and len(value) == 3 and all(isinstance(x, (int, float)) for x in value):
            point = T["geometry_msgs/msg/Point"](x=float(value[0]), y=float(value[1]), z=float(value[2]))
            message = T["geometry_msgs/msg/PointStamped"](header=out.header(t_ns), point=point)
            out.write(f"/robotmem/spatial/{name}", "geometry_msgs/msg/PointStamped", t_ns, message)
    data = memory.get("data")
    if isinstance(data, Mapping) and {"joint_names", "t_ns", "positions"} <= set(data):
        for sample_ns, position in zip(data["t_ns"], data["positions"], strict=False):
            state = T["sensor_msgs/msg/JointState"](
                header=out.header(int(sample_ns)),
                name=[str(n) for n in data["joint_names"]],
                position=np.asarray(position, dtype=np.float64),
                velocity=np.zeros(0),
                effort=np.zeros(0),
            )
            out.write("/robotmem/joint_states", "sensor_msgs/msg/JointState", int(sample_ns), state)
