"""Bag import: bags written at test time in every format, imported, and recalled against brute force."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from robotmem import RobotMemory, ValidationError
from robotmem.integrations.rosbag import BagMap, Boundaries, PoseTopic, import_bag, load_map

from .bags import BAG_START_NS, PlannedEpisode, plan_episodes, write_mcap_ros2, write_rosbags

FULL_MAP = BagMap(
    poses=(PoseTopic("object", "/object_pose"), PoseTopic("goal", "/goal")),
    joints="/joint_states",
    joint_samples=4,
    outcome="/outcome",
    robot={"id": "arm-01", "type": "UR5"},
    task={"name": "push"},
)
MARKERS = Boundaries(marker="/episode")


def nearest_successes(plans: list[PlannedEpisode], target: list[float], n: int) -> list[int]:
    wins = [p for p in plans if p.success]
    return [p.index for p in sorted(wins, key=lambda p: (math.dist(p.layout, target), p.index))[:n]]


def recalled_episodes(mem: RobotMemory, target: list[float], n: int, query: str = "") -> list[int]:
    found = mem.recall(
        query,
        n=n,
        context_filter={"task.success": True},
        spatial_sort={"field": "spatial.layout_initial", "target": target},
    )
    return [m["task"]["episode"] for m in found["memories"]]


@pytest.mark.parametrize("storage", ["sqlite3", "mcap", "ros1"])
def test_rosbags_formats_import_and_recall_the_nearest_successes(
    storage: str, tmp_path: Path, memory: RobotMemory
) -> None:
    plans = plan_episodes(24)
    bag = write_rosbags(tmp_path / f"run_{storage}", plans, storage)
    result = import_bag(memory, bag, FULL_MAP, MARKERS)
    assert result["storage"] == storage
    assert (result["episodes"], result["imported"], result["skipped"]) == (24, 24, 0)
    for target in ([0.0] * 6, [0.5, -0.5, 0.2, -0.3, 0.4, 0.1], plans[3].layout):
        assert recalled_episodes(memory, target, 5) == nearest_successes(plans, target, 5)
        assert recalled_episodes(memory, target, 5, query="push") == nearest_successes(plans, target, 5)

    detail = memory.get_memory(result["memory_ids"][3])
    p = plans[3]
    assert detail["spatial"]["object_initial"] == pytest.approx(list(p.object_initial))
    assert detail["spatial"]["object_final"] == pytest.approx(list(p.object_final))
    assert detail["spatial"]["goal_initial"] == pytest.approx(list(p.goal))
    assert detail["task"]["success"] is p.success
    assert detail["robot"] == {"id": "arm-01", "type": "UR5"}
    where = detail["context"]["provenance"]
    assert where["bag"] == str(bag.resolve()) and where["storage"] == storage
    assert (where["t_start_ns"], where["t_end_ns"]) == (p.start_ns, p.end_ns)
    assert where["start_offset_s"] == pytest.approx((p.start_ns - BAG_START_NS) / 1e9)
    assert set(where["topics"]) == {"/object_pose", "/goal", "/joint_states", "/outcome"}

    session = memory.session_memories(result["session_ids"][3])
    assert session["session"]["outcome_score"] == (1.0 if p.success else 0.0)
    perception = [m for m in session["memories"] if m["type"] == "perception"]
    assert len(perception) == 1 and perception[0]["perception_type"] == "procedural"
    data = memory.get_memory(perception[0]["id"])["data"]
    assert data["joint_names"] == ["shoulder", "elbow", "wrist"]
    assert len(data["positions"]) == 4 and data["sampled_from"] == 6


def test_an_mcap_from_the_official_ros2_writer_imports(tmp_path: Path, memory: RobotMemory) -> None:
    plans = plan_episodes(15, seed=3)
    bag = write_mcap_ros2(tmp_path / "official", plans)
    bag_map = BagMap(poses=FULL_MAP.poses, outcome="/outcome", task={"name": "push"})
    result = import_bag(memory, bag, bag_map, MARKERS)
    assert (result["storage"], result["imported"]) == ("mcap", 15)
    target = [0.2, 0.1, -0.4, 0.0, 0.3, 0.3]
    assert recalled_episodes(memory, target, 4) == nearest_successes(plans, target, 4)
    first = memory.get_memory(result["memory_ids"][0])
    assert first["task"]["reward"] == (1.0 if plans[0].success else -1.0)  # the JSON outcome's fields


def test_reimporting_a_bag_adds_nothing(tmp_path: Path, memory: RobotMemory) -> None:
    bag = write_rosbags(tmp_path / "run", plan_episodes(6), "sqlite3")
    first = import_bag(memory, bag, FULL_MAP, MARKERS)
    before = memory.stats()
    again = import_bag(memory, bag, FULL_MAP, MARKERS)
    assert (again["imported"], again["skipped"]) == (0, 6)
    assert memory.stats() == before
    moved = bag.rename(tmp_path / "moved")  # the same bag elsewhere is still the same bag
    assert import_bag(memory, moved, FULL_MAP, MARKERS)["skipped"] == 6
    assert len(first["memory_ids"]) == 6


def test_windows_and_gaps_cut_the_same_episodes(tmp_path: Path, memory: RobotMemory) -> None:
    plans = plan_episodes(5)
    bag = write_rosbags(tmp_path / "run", plans, "mcap")
    by_gap = import_bag(
        memory, bag, FULL_MAP, Boundaries(gap_topic="/joint_states", gap_s=0.5), collection="gap"
    )
    assert by_gap["imported"] == 5
    windows = tuple(((p.start_ns - BAG_START_NS) / 1e9, (p.end_ns - BAG_START_NS) / 1e9) for p in plans[:2])
    by_window = import_bag(memory, bag, FULL_MAP, Boundaries(windows=windows), collection="win")
    assert by_window["imported"] == 2
    for mid in by_gap["memory_ids"]:
        # A gap window spans the gap topic's own messages: the object's first pose comes after the
        # first joint state, so the initial pose is the second sample; the outcome comes after the last.
        detail = memory.get_memory(mid)
        plan = plans[detail["task"]["episode"]]
        assert detail["spatial"]["object_final"] == pytest.approx(list(plan.object_final))
        assert "success" not in detail["task"]
    overlapping = import_bag(
        memory, bag, FULL_MAP, Boundaries(windows=((0.0, 2.0), (1.0, 2.0))), collection="overlap"
    )
    wide, late = (memory.get_memory(m)["spatial"] for m in overlapping["memory_ids"])
    assert wide["object_initial"] == pytest.approx(list(plans[0].object_initial))
    assert late["object_initial"] == pytest.approx(list(plans[0].object_final))  # the pose at 1.01 s
    assert wide["object_final"] == late["object_final"]
    for mid in by_window["memory_ids"]:
        detail = memory.get_memory(mid)
        plan = plans[detail["task"]["episode"]]
        assert detail["task"]["success"] is plan.success
        assert detail["spatial"]["object_initial"] == pytest.approx(list(plan.object_initial))


def test_a_missing_topic_is_named_with_what_the_bag_has(tmp_path: Path, memory: RobotMemory) -> None:
    bag = write_rosbags(tmp_path / "run", plan_episodes(2), "sqlite3")
    bag_map = BagMap(poses=(PoseTopic("object", "/tf_object"),), outcome="/outcome")
    before = memory.stats()
    with pytest.raises(
        ValidationError, match=r"no topic /tf_object; it has .*/object_pose \(geometry_msgs/msg/PoseStamped\)"
    ):
        import_bag(memory, bag, bag_map, MARKERS)
    with pytest.raises(ValidationError, match="exactly one of"):
        import_bag(memory, bag, FULL_MAP, Boundaries())
    with pytest.raises(ValidationError, match="does not exist"):
        import_bag(memory, tmp_path / "nothing", FULL_MAP, MARKERS)
    with pytest.raises(ValidationError, match=r"poses.object: messages on /outcome have no field 'x.y'"):
        import_bag(memory, bag, BagMap(poses=(PoseTopic("object", "/outcome", "x.y"),)), MARKERS)
    assert memory.stats() == before


def test_a_toml_map_file_gives_the_same_import(tmp_path: Path, memory: RobotMemory) -> None:
    map_file = tmp_path / "map.toml"
    map_file.write_text(
        """
[episodes]
marker = "/episode"
[poses]
object = "/object_pose"
goal = {topic = "/goal", field = "point"}
[joints]
topic = "/joint_states"
samples = 4
[outcome]
topic = "/outcome"
[robot]
id = "arm-01"
[task]
name = "push"
""",
        encoding="utf-8",
    )
    bag_map, boundaries = load_map(map_file)
    assert boundaries == MARKERS
    plans = plan_episodes(8)
    result = import_bag(memory, write_rosbags(tmp_path / "run", plans, "ros1"), bag_map, boundaries)
    assert result["imported"] == 8
    target = [0.0] * 6
    assert recalled_episodes(memory, target, 3) == nearest_successes(plans, target, 3)
    bad = tmp_path / "bad.json"
    bad.write_text('{"posez": {}}', encoding="utf-8")
    with pytest.raises(ValidationError, match="map: unknown key 'posez'"):
        load_map(bad)


def test_the_map_file_of_the_docs_imports_a_bag(tmp_path: Path, memory: RobotMemory) -> None:
    page = (Path(__file__).parents[2] / "docs" / "bring-your-data.md").read_text(encoding="utf-8")
    text = page.split("cat > push_map.toml <<'EOF'\n", 1)[1].split("\nEOF\n", 1)[0]
    map_file = tmp_path / "push_map.toml"
    map_file.write_text(text, encoding="utf-8")
    bag_map, boundaries = load_map(map_file)
    plans = plan_episodes(6)
    result = import_bag(memory, write_rosbags(tmp_path / "run", plans, "mcap"), bag_map, boundaries)
    assert result["imported"] == 6
    target = plans[1].layout
    assert recalled_episodes(memory, target, 2, query="push") == nearest_successes(plans, target, 2)


def test_context_keys_from_a_bag_are_filterable_and_map_keys_are_checked(
    tmp_path: Path, memory: RobotMemory
) -> None:
    """Outcome JSON keys read from the bag are renamed to reachable ones; map names are refused up front."""
    plans = plan_episodes(4)
    bag = write_rosbags(tmp_path / "run", plans, "sqlite3", outcome_as="json-unreachable-keys")
    before = memory.stats()
    for bad_map, message in (
        (BagMap(poses=(PoseTopic("arm.tip", "/object_pose"),)), r"pose name 'arm\.tip'"),
        (BagMap(poses=FULL_MAP.poses, robot={"model.name": "UR5"}), r"map\.robot: key 'model\.name'"),
        (BagMap(poses=FULL_MAP.poses, task={"": "push"}), r"map\.task: key ''"),
    ):
        with pytest.raises(ValidationError, match=message):
            import_bag(memory, bag, bad_map, MARKERS)
    bad = tmp_path / "bad.json"
    bad.write_text('{"poses": {"arm.tip": "/object_pose"}}', encoding="utf-8")
    with pytest.raises(ValidationError, match=r"pose name 'arm\.tip'"):
        load_map(bad)
    assert memory.stats() == before
    result = import_bag(memory, bag, BagMap(poses=FULL_MAP.poses, outcome="/outcome"), MARKERS)
    task = memory.get_memory(result["memory_ids"][0])["task"]
    assert task["reward_total"] == (1.0 if plans[0].success else -1.0) and task["_$by"] == "op"
    wins = memory.recall("", context_filter={"task.reward_total": {"$gt": 0}})["memories"]
    assert sorted(m["task"]["episode"] for m in wins) == [p.index for p in plans if p.success]
