"""MCAP export: recalled episodes written, then read back by the ``mcap`` library and by ``rosbags``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from rosbags.highlevel import AnyReader

from robotmem import RobotMemory, ValidationError
from robotmem.integrations.mcap_export import export_mcap
from robotmem.integrations.rosbag import BagMap, Boundaries, PoseTopic, import_bag

from .bags import plan_episodes, write_rosbags

BAG_MAP = BagMap(
    poses=(PoseTopic("object", "/object_pose"), PoseTopic("goal", "/goal")),
    joints="/joint_states",
    joint_samples=3,
    outcome="/outcome",
    task={"name": "push"},
)


@pytest.fixture
def exported(tmp_path: Path, memory: RobotMemory) -> tuple[Path, list[dict], dict]:
    plans = plan_episodes(8)
    import_bag(
        memory, write_rosbags(tmp_path / "run", plans, "sqlite3"), BAG_MAP, Boundaries(marker="/episode")
    )
    found = memory.recall("push", n=4, spatial_sort={"field": "spatial.layout_initial", "target": [0.0] * 6})
    perceptions = memory.recall(
        "joint trajectory", n=2, include_data=True, context_filter={"type": "perception"}
    )
    records = found["memories"] + perceptions["memories"]
    out = tmp_path / "recalled.mcap"
    return out, records, export_mcap(records, out)


def test_the_export_reads_back_with_the_mcap_library(exported: tuple[Path, list[dict], dict]) -> None:
    path, records, summary = exported
    episodes = [r for r in records if r["type"] == "fact"]
    with path.open("rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        assert reader.get_header().profile == "ros2"
        seen = list(reader.iter_decoded_messages())
    topics = {channel.topic for _, channel, _, _ in seen}
    assert topics == set(summary["topics"]) == {
        "/robotmem/memories", "/robotmem/log", "/robotmem/joint_states",
        "/robotmem/spatial/object_initial", "/robotmem/spatial/object_final",
        "/robotmem/spatial/goal_initial", "/robotmem/spatial/goal_final", "/robotmem/spatial/position",
    }  # fmt: skip
    assert len(seen) == summary["messages"]
    texts = [json.loads(m.data) for _, c, _, m in seen if c.topic == "/robotmem/memories"]
    assert sorted(t["id"] for t in texts) == sorted(r["id"] for r in records)
    by_id = {t["id"]: t for t in texts}
    for episode in episodes:
        where = episode["context"]["provenance"]
        assert by_id[episode["id"]]["task"] == episode["task"]
        stamps = [msg.log_time for _, c, msg, _ in seen if c.topic == "/robotmem/memories"]
        assert where["t_start_ns"] in stamps
    points = [
        (msg.log_time, d.point) for _, c, msg, d in seen if c.topic == "/robotmem/spatial/object_initial"
    ]
    first = min(episodes, key=lambda e: e["context"]["provenance"]["t_start_ns"])
    t0, p0 = min(points, key=lambda p: p[0])
    assert t0 == first["context"]["provenance"]["t_start_ns"]
    assert [p0.x, p0.y, p0.z] == pytest.approx(first["spatial"]["object_initial"])
    logs = [d for _, c, _, d in seen if c.topic == "/robotmem/log"]
    assert {d.level for d in logs} <= {2, 3} and any("push episode" in d.message for d in logs)
    joints = [d for _, c, _, d in seen if c.topic == "/robotmem/joint_states"]
    assert len(joints) == 6 and list(joints[0].name) == ["shoulder", "elbow", "wrist"]


def test_the_export_reads_back_with_rosbags(exported: tuple[Path, list[dict], dict]) -> None:
    path, records, summary = exported
    with AnyReader([path]) as reader:
        assert {c.topic for c in reader.connections} == set(summary["topics"])
        count = 0
        for connection, _, raw in reader.messages():
            message = reader.deserialize(raw, connection.msgtype)
            count += 1
            if connection.topic == "/robotmem/memories":
                assert json.loads(message.data)["id"] in {r["id"] for r in records}
            if connection.msgtype == "sensor_msgs/msg/JointState":
                assert len(message.position) == 3
    assert count == summary["messages"]


def test_exported_points_carry_the_frame_the_bag_named(tmp_path: Path, memory: RobotMemory) -> None:
    bag = write_rosbags(tmp_path / "odom", plan_episodes(3), "sqlite3", frame_id="odom")
    imported = import_bag(memory, bag, BAG_MAP, Boundaries(marker="/episode"))
    episode = memory.get_memory(imported["memory_ids"][0])
    summary = export_mcap([episode], tmp_path / "odom.mcap")
    with AnyReader([tmp_path / "odom.mcap"]) as reader:
        frames = {
            (connection.topic, reader.deserialize(raw, connection.msgtype).header.frame_id)
            for connection, _, raw in reader.messages()
            if connection.topic.startswith("/robotmem/spatial/")
        }
    assert {topic for topic, _ in frames} == {
        t for t in summary["topics"] if t.startswith("/robotmem/spatial/")
    }
    assert {frame for _, frame in frames} == {"odom"}


def test_export_refuses_an_existing_file(exported: tuple[Path, list[dict], dict]) -> None:
    path, records, _ = exported
    with pytest.raises(ValidationError, match="exists"):
        export_mcap(records, path)


@pytest.mark.parametrize("stamp", [2**64 - 1, 2**63, (2**31) * 10**9, -1])
def test_a_time_mcap_cannot_carry_is_refused_and_leaves_no_file(
    tmp_path: Path, memory: RobotMemory, stamp: int
) -> None:
    memory.learn("pushed the block to the goal", context={"provenance": {"t_start_ns": stamp}})
    records = memory.recall("", n=5)["memories"]
    (tmp_path / "out").mkdir()
    with pytest.raises(
        ValidationError, match=rf"t_start_ns is {stamp} ns; an MCAP ROS 2 message carries 0\.\."
    ):
        export_mcap(records, tmp_path / "out" / "out.mcap")
    assert list((tmp_path / "out").iterdir()) == []


def test_joint_data_of_the_wrong_shape_is_refused_and_leaves_no_file(
    tmp_path: Path, memory: RobotMemory
) -> None:
    for data, message in (
        (
            {"joint_names": ["a"], "t_ns": [1, 2], "positions": [[0.1]]},
            "t_ns and positions must be lists of one length",
        ),
        (
            {"joint_names": ["a"], "t_ns": [2**64], "positions": [[0.1]]},
            r"data.t_ns\[0\] is 18446744073709551616 ns",
        ),
        (
            {"joint_names": ["a"], "t_ns": [1], "positions": [["x"]]},
            r"positions\[0\]: expected a list of finite numbers",
        ),
        ({"joint_names": [1], "t_ns": [1], "positions": [[0.1]]}, "joint_names: expected a list of texts"),
    ):
        saved = memory.save_perception("joint trajectory of the push", "procedural", data=data)
        record = memory.recall("", n=1, include_data=True, context_filter={"id": saved["memory_id"]})[
            "memories"
        ]
        (tmp_path / "out").mkdir(exist_ok=True)
        with pytest.raises(ValidationError, match=message):
            export_mcap(record, tmp_path / "out" / "out.mcap")
        assert list((tmp_path / "out").iterdir()) == []


def test_an_interrupted_write_leaves_no_file(tmp_path: Path, memory: RobotMemory) -> None:
    """A record that fails while the file is being written (here: a spatial name MCAP accepts, a
    message the writer refuses) leaves neither the file nor its temporary name."""
    memory.learn("pushed the block to the goal")
    records = memory.recall("", n=5)["memories"]
    records[0]["content"] = "\ud800"  # a lone surrogate cannot be encoded as the message's UTF-8 text
    (tmp_path / "out").mkdir()
    with pytest.raises(Exception):  # noqa: B017 - whatever the writer raises, nothing may remain
        export_mcap(records, tmp_path / "out" / "out.mcap")
    assert list((tmp_path / "out").iterdir()) == []
