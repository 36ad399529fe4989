"""Bag import: bags written at test time in every format, imported, and recalled against brute force."""

from __future__ import annotations

import dataclasses
import math
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from robotmem import RobotMemory, ValidationError
from robotmem.config import Settings
from robotmem.integrations.rosbag import BagMap, Boundaries, PoseTopic, import_bag, load_map

from .bags import (
    BAG_START_NS,
    PlannedEpisode,
    events,
    plan_episodes,
    write_mcap_ros2,
    write_rosbags,
    write_stream,
)

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


def seconds(stored: str) -> float:
    """Epoch seconds of a stored time."""
    return datetime.fromisoformat(stored).timestamp()


def iso_ns(stamp_ns: int) -> str:
    """The ISO 8601 UTC text of a bag time in nanoseconds (to the microsecond)."""
    moment = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=stamp_ns // 1000)
    return moment.isoformat(timespec="microseconds")


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
    # The episode happened when its window starts in the recording, not when it was imported.
    assert seconds(detail["observed_at"]) == pytest.approx(p.start_ns / 1e9, abs=1e-6)
    # Every topic read, the marker topic too: the slice replays with its boundaries.
    assert set(where["topics"]) == {"/object_pose", "/goal", "/joint_states", "/outcome", "/episode"}

    session = memory.session_memories(result["session_ids"][3])
    assert session["session"]["outcome_score"] == (1.0 if p.success else 0.0)
    perception = [m for m in session["memories"] if m["type"] == "perception"]
    assert len(perception) == 1 and perception[0]["perception_type"] == "procedural"
    assert perception[0]["content"] == "Joint trajectory of episode 3: 4 of 6 states sampled"
    data = memory.get_memory(perception[0]["id"])["data"]
    assert data["joint_names"] == ["shoulder", "elbow", "wrist"]
    assert len(data["positions"]) == 4 and data["sampled_from"] == 6
    # The trajectory was sensed from the episode's first joint state on.
    assert p.start_ns / 1e9 - 1e-6 <= seconds(perception[0]["observed_at"]) <= p.end_ns / 1e9
    # A window on the recording's time finds the episodes recorded in it, before any limit.
    since, until = iso_ns(plans[5].start_ns), iso_ns(plans[7].start_ns)
    window = memory.recall("", n=100, since=since, until=until, context_filter={"type": "fact"})
    assert sorted(m["task"]["episode"] for m in window["memories"]) == [5, 6, 7]
    newest = memory.recall("push", n=3, order="recent", context_filter={"type": "fact"})["memories"]
    assert [m["task"]["episode"] for m in newest] == [23, 22, 21]


@pytest.mark.parametrize(("storage", "frame_id"), [("sqlite3", "odom"), ("mcap", "odom"), ("ros1", "/odom")])
def test_imported_positions_carry_the_frame_of_their_messages(
    storage: str, frame_id: str, tmp_path: Path, memory: RobotMemory
) -> None:
    plans = plan_episodes(8, seed=11)
    bag = write_rosbags(tmp_path / f"odom_{storage}", plans, storage, frame_id=frame_id)
    result = import_bag(memory, bag, FULL_MAP, MARKERS)
    detail = memory.get_memory(result["memory_ids"][2])
    # The first pose at the start is where the episode happened, in its header's frame (ROS 1's "/odom" too).
    assert detail["spatial"]["position"] == pytest.approx(list(plans[2].object_initial))
    assert detail["spatial"]["frame"] == "odom"
    everywhere = {"min": [-2.0, -2.0, -2.0], "max": [2.0, 2.0, 2.0]}
    in_odom = memory.recall("", n=50, region={**everywhere, "frame": "odom"}, context_filter={"type": "fact"})
    assert sorted(m["id"] for m in in_odom["memories"]) == sorted(result["memory_ids"])
    assert memory.recall("", n=50, region={**everywhere, "frame": "map"})["memories"] == []
    assert memory.recall("", n=50, region=everywhere)["memories"] == []  # no frame named is map
    # A sphere around one episode's start finds exactly the episodes that began within it.
    center = list(plans[2].object_initial)
    near = memory.recall("push", n=50, region={"center": center, "radius": 0.5, "frame": "odom"})
    truth = [i for i, p in enumerate(plans) if math.dist(p.object_initial, center) <= 0.5]
    assert sorted(m["task"]["episode"] for m in near["memories"]) == truth


def test_positions_whose_header_names_no_frame_are_in_map(tmp_path: Path, memory: RobotMemory) -> None:
    bag = write_rosbags(tmp_path / "noframe", plan_episodes(4, seed=5), "sqlite3", frame_id="")
    result = import_bag(memory, bag, FULL_MAP, MARKERS)
    detail = memory.get_memory(result["memory_ids"][0])
    assert "frame" not in detail["spatial"] and len(detail["spatial"]["position"]) == 3
    found = memory.recall(
        "", n=50, region={"min": [-2.0] * 3, "max": [2.0] * 3}, context_filter={"type": "fact"}
    )
    assert sorted(m["id"] for m in found["memories"]) == sorted(result["memory_ids"])


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
    assert seconds(first["observed_at"]) == pytest.approx(plans[0].start_ns / 1e9, abs=1e-6)


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
    ends = []
    for mid, session_id in zip(by_gap["memory_ids"], by_gap["session_ids"], strict=True):
        # The joint states run from 0.1 to 1.6 s of each 2 s episode: the object's first pose (0.01 s)
        # comes before them and the outcome (1.98 s) after them, both inside the episode's window,
        # which reaches the middle of the silences around it.
        detail = memory.get_memory(mid)
        plan = plans[detail["task"]["episode"]]
        assert detail["spatial"]["object_initial"] == pytest.approx(list(plan.object_initial))
        assert detail["spatial"]["object_final"] == pytest.approx(list(plan.object_final))
        assert detail["spatial"]["goal_initial"] == pytest.approx(list(plan.goal))
        assert detail["task"]["success"] is plan.success
        assert detail["task"]["duration_s"] == pytest.approx(1.5)  # the activity: first to last joint state
        score = memory.session_memories(session_id)["session"]["outcome_score"]
        assert score == (1.0 if plan.success else 0.0)
        where = detail["context"]["provenance"]
        ends.append((where["t_start_ns"], where["t_end_ns"]))
        assert "/joint_states" in where["topics"]
    # The windows cover the bag: from its start, each silence split in its middle, to its end.
    assert ends[0][0] == BAG_START_NS and ends[-1][1] == plans[-1].end_ns
    assert all(a[1] + 1 == b[0] for a, b in zip(ends, ends[1:], strict=False))
    middle = (plans[0].start_ns + 1_600_000_000 + plans[1].start_ns + 100_000_000) // 2
    assert ends[0][1] == middle
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


def test_gap_episodes_take_poses_at_the_edges_of_the_activity(tmp_path: Path, memory: RobotMemory) -> None:
    # The object's pose is published all the time (10 Hz): it rests at the last episode's final pose for
    # 1.2 s after the activity stops, is then put back at the next start, and moves while the joint
    # states (the gap topic) run. The outcome comes 0.5 s after the activity stops.
    starts = [BAG_START_NS + 1_000_000_000 + i * 4_000_000_000 for i in range(3)]
    inits = [(float(i), 0.0, 0.0) for i in range(3)]
    finals = [(i + 0.5, 0.25, 0.0) for i in range(3)]

    def pose_at(t: int) -> tuple[float, ...]:
        for i, s in enumerate(starts):
            if s <= t <= s + 2_000_000_000:
                share = (t - s) / 2_000_000_000
                return tuple(a + (b - a) * share for a, b in zip(inits[i], finals[i], strict=True))
        done = [i for i, s in enumerate(starts) if s + 2_000_000_000 < t]
        if not done:
            return inits[0]
        j = done[-1]
        resting = t < starts[j] + 3_200_000_000 or j + 1 == len(starts)
        return finals[j] if resting else inits[j + 1]

    stream: list[tuple[str, int, str, object]] = []
    for k in range(125):
        t = BAG_START_NS + k * 100_000_000
        stream.append(("/object_pose", t, "pose", pose_at(t)))
    for i, s in enumerate(starts):
        for k in range(21):
            t = s + 5_000_000 + k * 99_500_000
            stream.append(("/joint_states", t, "joints", [0.1 * k, 0.0, 0.0]))
        stream.append(("/outcome", s + 2_500_000_000, "bool", i != 1))
    stream.sort(key=lambda e: e[1])
    bag = write_stream(tmp_path / "continuous", stream, "sqlite3")
    bag_map = BagMap(poses=(PoseTopic("object", "/object_pose"),), outcome="/outcome")
    result = import_bag(memory, bag, bag_map, Boundaries(gap_topic="/joint_states", gap_s=1.0))
    assert result["imported"] == 3
    for i, (mid, session_id) in enumerate(zip(result["memory_ids"], result["session_ids"], strict=True)):
        detail = memory.get_memory(mid)
        assert detail["spatial"]["object_initial"] == pytest.approx(list(inits[i]))
        assert detail["spatial"]["object_final"] == pytest.approx(list(finals[i]))
        assert detail["task"]["success"] is (i != 1)
        assert memory.session_memories(session_id)["session"]["outcome_score"] == (0.0 if i == 1 else 1.0)


def flipped(plans: list[PlannedEpisode]) -> list[PlannedEpisode]:
    """The same timing with the other outcome and every pose moved by 1 m: another recording."""
    return [
        dataclasses.replace(
            p,
            success=not p.success,
            object_initial=tuple(x + 1.0 for x in p.object_initial),  # type: ignore[arg-type]
            object_final=tuple(x + 1.0 for x in p.object_final),  # type: ignore[arg-type]
        )
        for p in plans
    ]


@pytest.mark.parametrize("storage", ["sqlite3", "ros1"])
def test_a_different_bag_with_the_same_timing_is_imported(
    storage: str, tmp_path: Path, memory: RobotMemory
) -> None:
    plans = plan_episodes(12)
    first = import_bag(memory, write_rosbags(tmp_path / "run", plans, storage), FULL_MAP, MARKERS)
    other = flipped(plans)
    second = import_bag(memory, write_rosbags(tmp_path / "other_run", other, storage), FULL_MAP, MARKERS)
    assert (first["imported"], second["imported"], second["skipped"]) == (12, 12, 0)
    for mid, plan in zip(second["memory_ids"], other, strict=True):
        detail = memory.get_memory(mid)
        assert detail["task"]["success"] is plan.success
        assert detail["spatial"]["object_initial"] == pytest.approx(list(plan.object_initial))
    stored = dict(zip(first["memory_ids"] + second["memory_ids"], plans + other, strict=True))
    target = [0.5, 0.5, 0.5, 0.0, 0.0, 0.0]
    wins = sorted(
        (m for m, p in stored.items() if p.success), key=lambda m: math.dist(stored[m].layout, target)
    )
    found = memory.recall(
        "", n=6, context_filter={"task.success": True},
        spatial_sort={"field": "spatial.layout_initial", "target": target},
    )["memories"]  # fmt: skip
    assert [m["id"] for m in found] == wins[:6]
    # The same bytes at another path are the same recording.
    copy = tmp_path / "copied" / "run"
    copy.parent.mkdir()
    source = tmp_path / ("run.bag" if storage == "ros1" else "run")
    if source.is_dir():
        shutil.copytree(source, copy)
    else:
        copy = copy.with_suffix(".bag")
        shutil.copy(source, copy)
    again = import_bag(memory, copy, FULL_MAP, MARKERS)
    assert (again["imported"], again["skipped"]) == (0, 12)


def test_a_bag_that_grew_imports_only_its_new_episodes(tmp_path: Path, memory: RobotMemory) -> None:
    plans = plan_episodes(8)
    import_bag(memory, write_rosbags(tmp_path / "early", plans[:5], "mcap"), FULL_MAP, MARKERS)
    later = import_bag(memory, write_rosbags(tmp_path / "later", plans, "mcap"), FULL_MAP, MARKERS)
    assert (later["imported"], later["skipped"]) == (3, 5)
    assert [memory.get_memory(m)["task"]["episode"] for m in later["memory_ids"]] == [5, 6, 7]


def test_the_duplicate_lookup_is_not_bound_by_the_recall_limit(tmp_path: Path) -> None:
    bag = write_rosbags(tmp_path / "run", plan_episodes(12), "sqlite3")
    settings = Settings(home=tmp_path / "home", max_n=5)
    with RobotMemory(tmp_path / "small.db", embed_backend="none", settings=settings) as mem:
        assert import_bag(mem, bag, FULL_MAP, MARKERS)["imported"] == 12
        before = mem.stats()
        again = import_bag(mem, bag, FULL_MAP, MARKERS)
        assert (again["imported"], again["skipped"]) == (0, 12)
        assert mem.stats() == before
        with pytest.raises(ValidationError, match="n: is 12; the limit is 5"):
            mem.recall("", n=12)  # the recall limit itself still holds


def test_a_window_without_messages_is_refused_with_the_bag_span(tmp_path: Path, memory: RobotMemory) -> None:
    plans = plan_episodes(4)  # 4 episodes of 2 s with 1 s pauses: the bag spans 11 s
    bag = write_rosbags(tmp_path / "run", plans, "ros1")
    before = memory.stats()
    with pytest.raises(
        ValidationError,
        match=r"episodes.windows: \[500, 600\] s holds no message of /object_pose, /goal, /joint_states, "
        r"/outcome; the bag spans \[0, 11.000\] s from its start",
    ):
        import_bag(memory, bag, FULL_MAP, Boundaries(windows=((500.0, 600.0),)))
    with pytest.raises(ValidationError, match=r"\[2.1, 2.9\] s, \[40, 41\] s hold no message"):
        import_bag(memory, bag, FULL_MAP, Boundaries(windows=((0.0, 2.0), (2.1, 2.9), (40.0, 41.0))))
    with pytest.raises(ValidationError, match="map: names no topic"):
        import_bag(memory, bag, BagMap(), Boundaries(windows=((0.0, 2.0),)))
    assert memory.stats() == before


def int_markers(plans: list[PlannedEpisode]) -> list[tuple[str, int, str, object]]:
    """The plan's events with the markers as std_msgs/Int32: 1 opens an episode, 0 closes it."""
    return [
        (t, at, "int", 1 if value == "start" else 0) if t == "/episode" else (t, at, kind, value)
        for t, at, kind, value in events(plans)
    ]


def test_markers_that_find_no_episode_are_an_error_naming_the_values(
    tmp_path: Path, memory: RobotMemory
) -> None:
    bag = write_stream(tmp_path / "ints", int_markers(plan_episodes(3)), "mcap")
    before = memory.stats()
    with pytest.raises(
        ValidationError,
        match=r"episodes.marker: no episode on /episode \(field 'data'\): expected the start value 'start' "
        r"and end value 'end'; its values are '1' \(3×\), '0' \(3×\)",
    ):
        import_bag(memory, bag, FULL_MAP, MARKERS)
    assert memory.stats() == before
    result = import_bag(memory, bag, FULL_MAP, Boundaries(marker="/episode", start_value="1", end_value="0"))
    assert (result["imported"], result["unclosed"], result["warnings"]) == (3, 0, [])


def test_unclosed_episodes_end_at_the_next_start_or_the_bag_end_and_are_reported(
    tmp_path: Path, memory: RobotMemory
) -> None:
    plans = plan_episodes(4)
    stream = events(plans)
    # Episode 1 loses its end marker (a second start follows), episode 3 too (the bag ends), and a
    # stray end marker sits in the pause after episode 0.
    dropped = [
        e
        for e in stream
        if not (e[0] == "/episode" and e[3] == "end" and e[1] in (plans[1].end_ns, plans[3].end_ns))
    ]
    stray = ("/episode", plans[0].end_ns + 500_000_000, "string", "end")
    bag = write_stream(tmp_path / "broken", sorted([*dropped, stray], key=lambda e: e[1]), "sqlite3")
    result = import_bag(memory, bag, FULL_MAP, MARKERS)
    assert (result["episodes"], result["imported"], result["unclosed"]) == (4, 4, 2)
    assert result["warnings"] == [
        "2 episode(s) on /episode had no end marker 'end' (opened at 3.000 s, 9.000 s); each ends at the "
        "next start or at the bag's end",
        "1 end marker(s) on /episode without an open episode, ignored (at 2.500 s)",
    ]
    spans = [memory.get_memory(m)["context"]["provenance"] for m in result["memory_ids"]]
    assert spans[1]["t_end_ns"] == plans[2].start_ns - 1
    last_message = max(e[1] for e in dropped)
    assert spans[3]["t_end_ns"] == last_message
    assert memory.get_memory(result["memory_ids"][1])["task"]["success"] is plans[1].success


def test_a_quaternion_field_is_an_orientation_not_a_position(tmp_path: Path, memory: RobotMemory) -> None:
    bag = write_rosbags(tmp_path / "run", plan_episodes(2), "sqlite3")
    with pytest.raises(
        ValidationError,
        match=r"poses.object: field 'pose.orientation' on /object_pose is a quaternion, an orientation and "
        r"not a position",
    ):
        import_bag(
            memory, bag, BagMap(poses=(PoseTopic("object", "/object_pose", "pose.orientation"),)), MARKERS
        )


def test_reading_is_reported_as_a_progress_stage(tmp_path: Path, memory: RobotMemory) -> None:
    bag = write_rosbags(tmp_path / "run", plan_episodes(3), "mcap")
    seen: list[tuple[str, int, int]] = []
    import_bag(memory, bag, FULL_MAP, MARKERS, progress=lambda *call: seen.append(call))
    reading = [c for c in seen if c[0] == "reading"]
    # 3 episodes: 2 markers (read twice: boundaries, then the digest), 3 poses, 1 goal, 6 joint states,
    # 1 outcome each.
    assert reading and {c[2] for c in reading} == {3 * (2 * 2 + 3 + 1 + 6 + 1)}
    assert sum(c[1] for c in reading) == reading[0][2]
    assert seen.index(reading[-1]) < seen.index(next(c for c in seen if c[0] == "episodes"))


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


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfe", r"map: .*map.json is not UTF-8 text"),
        (b'{"poses": []}', "map.poses: expected a table, got"),
        (b'{"poses": {"o": "/o"}, "layout": 5}', "map.layout: expected a list of pose names"),
        (b'{"joints": {"topic": "/j", "samples": "ten"}}', "joints.samples: expected 1..1000, got 'ten'"),
        (
            b'{"episodes": {"windows": [[0, "x"]]}}',
            r"map.episodes.windows: expected a list of \[start, end\] seconds",
        ),
        (
            b'{"episodes": {"windows": [[0, 1e300]]}}',
            r"episodes.windows\[0\]: expected 0 <= start < end <= 9.2e\+09",
        ),
        (
            b'{"episodes": {"gap_topic": "/j", "gap_s": "1"}}',
            "map.episodes.gap_s: expected a number of seconds",
        ),
        (b'{"episodes": {"marker": 7}}', "map.episodes.marker: expected non-empty text, got 7"),
        (b'{"outcome": {"topic": "/o", "field": ""}}', "map.outcome.field: expected non-empty text"),
        (b'{"robot": [1]}', "map.robot: expected a table"),
        (b'{"episodes": {"gap_topic": "/j", "gap_s": Infinity}}', "Infinity is not a number JSON allows"),
    ],
)
def test_a_map_file_of_the_wrong_shape_names_the_key(tmp_path: Path, content: bytes, message: str) -> None:
    map_file = tmp_path / "map.json"
    map_file.write_bytes(content)
    with pytest.raises(ValidationError, match=message):
        load_map(map_file)


def test_a_damaged_bag_is_refused_before_anything_is_written(tmp_path: Path, memory: RobotMemory) -> None:
    bag = write_rosbags(tmp_path / "run", plan_episodes(3), "mcap")
    (mcap,) = bag.glob("*.mcap")
    data = bytearray(mcap.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = b"\xff" * 64
    mcap.write_bytes(bytes(data))
    (tmp_path / "meta").mkdir()
    (tmp_path / "meta" / "metadata.yaml").write_bytes(b"\xff\xfe not yaml")
    before = memory.stats()
    for path in (bag, tmp_path / "meta"):
        with pytest.raises(ValidationError, match="bag: .* cannot be read"):
            import_bag(memory, path, FULL_MAP, MARKERS)
    with pytest.raises(
        ValidationError, match=r"episodes.gap_s: expected a number of seconds in \(0, 9.2e\+09\]"
    ):
        import_bag(memory, bag, FULL_MAP, Boundaries(gap_topic="/joint_states", gap_s=math.inf))
    assert memory.stats() == before
