"""Objects from a bag's detection topic: ``vision_msgs`` arrays written at test time, imported as sightings,
and asked back with ``last_seen`` and ``around`` against the truth the writer used."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from robotmem import RobotMemory, ValidationError
from robotmem.config import Settings
from robotmem.integrations.bag_map import ObjectTopic, load_map
from robotmem.integrations.rosbag import BagMap, Boundaries, import_bag

from .bags import BAG_START_NS, Detected, write_detections

STEP_NS = 500_000_000  # detections at 2 Hz ...
STEPS = 120  # ... for 60 s
MOVED_NS = BAG_START_NS + 30 * 10**9  # the mug is carried away after 30 s
MUG_BEFORE, MUG_AFTER = (1.0, 2.0, 0.8), (4.0, -1.0, 0.9)
CHAIR = (2.0, 2.0, 0.0)
LABELS = {"47": "red mug", "56": "chair"}
WHOLE_BAG = Boundaries(windows=((0.0, 60.0),))


def patrol(mug_id: str = "mug-3", chair_id: str = "chair-1") -> list[tuple[int, str, list[Detected]]]:
    """The mug on the table, then on the shelf; the chair in place, its box centre jittering by 1 cm."""
    frames = []
    for k in range(STEPS):
        t_ns = BAG_START_NS + k * STEP_NS
        mug = MUG_BEFORE if t_ns < MOVED_NS else MUG_AFTER
        jitter = 0.01 * math.sin(k)
        chair = (CHAIR[0] + jitter, CHAIR[1] - jitter, CHAIR[2])
        frames.append(
            (t_ns, "map", [Detected(mug_id, "47", mug, 0.8), Detected(chair_id, "56", chair, 0.95)])
        )
    return frames


def stamp(t_ns: int) -> float:
    return t_ns / 1e9


def seconds(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def kept_per_object(every_s: float) -> int:
    """Sightings the import keeps of one object seen every step: one per ``every_s``, and the last."""
    every = round(every_s * 1e9)
    kept, last = [], None
    for k in range(STEPS):
        t = k * STEP_NS
        if last is None or t - last >= every:
            kept.append(t)
            last = t
    return len(kept) + (kept[-1] != (STEPS - 1) * STEP_NS)


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_detections_become_sightings_that_answer_where_an_object_was_last_seen(
    storage: str, tmp_path: Path, memory: RobotMemory
) -> None:
    bag = write_detections(tmp_path / f"patrol_{storage}", patrol(), storage)
    bag_map = BagMap(objects=ObjectTopic("/detections", every_s=5.0, labels=LABELS))
    result = import_bag(memory, bag, bag_map, WHOLE_BAG)
    assert (result["imported"], result["sightings"]) == (1, 2 * kept_per_object(5.0))
    [mug] = memory.last_seen(object_id="mug-3")["objects"]
    assert mug["position"] == list(MUG_AFTER) and mug["frame"] == "map" and mug["label"] == "red mug"
    assert seconds(mug["observed_at"]) == pytest.approx(stamp(BAG_START_NS + (STEPS - 1) * STEP_NS))
    assert mug["sightings"] == kept_per_object(5.0)
    # Before it was carried away, it stood on the table.
    before = memory.last_seen(object_id="mug-3", as_of=stamp(MOVED_NS - 10**8))["objects"]
    assert before[0]["position"] == list(MUG_BEFORE)
    assert seconds(before[0]["observed_at"]) <= stamp(MOVED_NS)
    # A description names it, in the map's words; a thing never seen names nothing.
    assert [o["object_id"] for o in memory.last_seen("where is the red mug")["objects"]] == ["mug-3"]
    assert memory.last_seen("the blue bicycle")["objects"] == []
    # What is around the shelf now is the mug; the table holds nothing any more.
    assert [o["object_id"] for o in memory.around(list(MUG_AFTER), 0.5)["objects"]] == ["mug-3"]
    assert memory.around(list(MUG_BEFORE), 0.5)["objects"] == []
    chair = memory.last_seen(object_id="chair-1")["objects"][0]
    assert math.dist(chair["position"], CHAIR) <= 0.02
    # The sightings are perceptions of the episode's session, from the bag's detection topic.
    sighting = memory.get_memory(mug["memory_id"])
    assert sighting["type"] == "perception" and sighting["session_id"] == result["session_ids"][0]
    assert sighting["context"]["detection"] == {"topic": "/detections", "score": 0.8}
    assert (
        sighting["context"]["provenance"]["key"]
        == memory.get_memory(result["memory_ids"][0])["context"]["provenance"]["key"]
    )
    assert "red mug (mug-3)" in sighting["content"]


def test_reimporting_adds_no_sighting(tmp_path: Path, memory: RobotMemory) -> None:
    bag = write_detections(tmp_path / "patrol", patrol(), "sqlite3")
    bag_map = BagMap(objects=ObjectTopic("/detections"))
    first = import_bag(memory, bag, bag_map, WHOLE_BAG)
    again = import_bag(memory, bag, bag_map, WHOLE_BAG)
    assert first["sightings"] == 2 * kept_per_object(1.0) and (again["imported"], again["sightings"]) == (
        0,
        0,
    )
    assert memory.last_seen(object_id="mug-3")["objects"][0]["sightings"] == kept_per_object(1.0)


def test_every_s_zero_keeps_every_detection(tmp_path: Path, memory: RobotMemory) -> None:
    bag = write_detections(tmp_path / "patrol", patrol(), "sqlite3")
    result = import_bag(memory, bag, BagMap(objects=ObjectTopic("/detections", every_s=0.0)), WHOLE_BAG)
    assert result["sightings"] == 2 * STEPS


def test_ros1_detections_without_a_tracking_id_are_grouped_by_label(
    tmp_path: Path, memory: RobotMemory
) -> None:
    bag = write_detections(tmp_path / "patrol", patrol(), "ros1")
    bag_map = BagMap(objects=ObjectTopic("/detections", every_s=2.0, labels={"56": "椅子", "47": "red mug"}))
    result = import_bag(memory, bag, bag_map, WHOLE_BAG)
    assert result["sightings"] > 0 and result["warnings"] == []
    [chair] = memory.last_seen("椅子在哪里")["objects"]
    assert chair["object_id"] is None and chair["label"] == "椅子"
    assert math.dist(chair["position"], CHAIR) <= 0.02
    assert chair["sightings"] == kept_per_object(2.0)  # one group: every sighting within 1 m of the last
    # The mug moved 4.2 m: label-only sightings that far apart are two objects, the newest first.
    mugs = memory.last_seen("red mug")["objects"]
    assert [m["position"] for m in mugs] == [list(MUG_AFTER), list(MUG_BEFORE)]


def test_a_map_file_names_the_detection_topic_and_its_settings(tmp_path: Path, memory: RobotMemory) -> None:
    bag = write_detections(tmp_path / "patrol", patrol(), "mcap")
    map_file = tmp_path / "map.toml"
    map_file.write_text(
        "[episodes]\nwindows = [[0.0, 60.0]]\n"
        '[objects]\ntopic = "/detections"\nevery_s = 10.0\nlabels = {"47" = "red mug"}\n',
        encoding="utf-8",
    )
    bag_map, bounds = load_map(map_file)
    assert bag_map.objects == ObjectTopic("/detections", 10.0, labels={"47": "red mug"})
    result = import_bag(memory, bag, bag_map, bounds)
    assert result["sightings"] == 2 * kept_per_object(10.0)
    assert memory.last_seen("red mug")["objects"][0]["object_id"] == "mug-3"


@pytest.mark.parametrize(
    ("objects", "message"),
    [
        ({"topic": "/detections", "every_s": -1}, "objects.every_s: expected 0..9.2e+09 seconds, got -1.0"),
        ({"topic": "/detections", "every_s": "often"}, "map.objects.every_s: expected a number"),
        ({"topic": ""}, "map.objects.topic: expected non-empty text"),
        ({"topic": "/detections", "colour": "red"}, "map.objects: unknown key 'colour'"),
        ({"topic": "/detections", "labels": {"47": ""}}, "objects.labels.47: expected non-empty text"),
        ({"topic": "/detections", "labels": ["cup"]}, "map.objects.labels: expected a table"),
    ],
)
def test_a_bad_objects_table_is_refused_naming_its_key(
    objects: dict[str, object], message: str, tmp_path: Path
) -> None:
    from robotmem.integrations.bag_map import map_from_dict

    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace("+", r"\+")):
        map_from_dict({"objects": objects, "episodes": {"windows": [[0.0, 1.0]]}})


def test_image_boxes_need_a_position_named_and_nothing_is_written_before(
    tmp_path: Path, memory: RobotMemory
) -> None:
    bag = write_detections(tmp_path / "boxes", patrol(), "sqlite3", two_d=True)
    with pytest.raises(ValidationError, match="objects.position: detections on /detections are 2-D boxes"):
        import_bag(memory, bag, BagMap(objects=ObjectTopic("/detections")), WHOLE_BAG)
    assert memory.recall("", n=10)["memories"] == []
    named = ObjectTopic("/detections", position="results.0.pose.pose.position")
    pixels = ObjectTopic("/detections", position="bbox.center.position")  # 2 numbers of an image
    with pytest.raises(ValidationError, match="not a position of 3 numbers .these detections are 2-D boxes"):
        import_bag(memory, bag, BagMap(objects=pixels), WHOLE_BAG)
    assert memory.recall("", n=10)["memories"] == []
    result = import_bag(memory, bag, BagMap(objects=named), WHOLE_BAG)
    assert memory.last_seen(object_id="mug-3")["objects"][0]["position"] == list(MUG_AFTER)
    assert result["sightings"] == 2 * kept_per_object(1.0)
    missing = ObjectTopic("/detections", position="results.3.pose.pose.position")
    with pytest.raises(ValidationError, match="objects.position: detections on /detections have no field"):
        import_bag(memory, bag, BagMap(objects=missing), Boundaries(windows=((0.0, 30.0),)))


def test_detections_naming_no_object_are_skipped_and_counted(tmp_path: Path, memory: RobotMemory) -> None:
    frames = [(t, f, [*ds, Detected("", "", (0.0, 0.0, 0.0))]) for t, f, ds in patrol()]
    bag = write_detections(tmp_path / "unnamed", frames, "sqlite3")
    result = import_bag(memory, bag, BagMap(objects=ObjectTopic("/detections")), WHOLE_BAG)
    assert result["warnings"] == [
        f"objects: {STEPS} detections on /detections named neither an id nor a label; skipped"
    ]
    assert result["sightings"] == 2 * kept_per_object(1.0)


def test_the_patrol_map_of_the_docs_reads(tmp_path: Path) -> None:
    page = (Path(__file__).parents[2] / "docs" / "bring-your-data.md").read_text(encoding="utf-8")
    text = page.split("**Objects from a detection topic.** A patrol's map:\n\n```toml\n", 1)[1].split(
        "```", 1
    )[0]
    map_file = tmp_path / "patrol.toml"
    map_file.write_text(text, encoding="utf-8")
    bag_map, boundaries = load_map(map_file)
    assert bag_map.objects == ObjectTopic("/detections", 1.0, labels={"47": "red mug", "56": "chair"})
    assert (boundaries.gap_topic, boundaries.gap_s) == ("/odom", 5.0)


def _one_object(stamps_s: list[float], **detected: object) -> list[tuple[int, str, list[Detected]]]:
    """cup-1 in one array a second; its own header stamped ``stamps_s`` seconds from the bag's start."""
    return [
        (
            BAG_START_NS + k * 10**9,
            "map",
            [
                Detected(
                    "cup-1", "41", (float(k), 0.0, 0.0), stamp_ns=BAG_START_NS + round(s * 1e9), **detected
                )
            ],  # type: ignore[arg-type]
        )
        for k, s in enumerate(stamps_s)
    ]


def test_stamps_out_of_order_are_all_kept_with_every_s_zero_and_the_latest_always(
    tmp_path: Path, memory: RobotMemory
) -> None:
    """A detector's latency reorders header stamps: nothing is lost for it, and the latest stamp stays."""
    stamps = [0.0, 2.0, 1.0, 4.0, 3.0, 5.0, 5.5]
    bag = write_detections(tmp_path / "late", _one_object(stamps), "sqlite3")
    every = import_bag(memory, bag, BagMap(objects=ObjectTopic("/detections", every_s=0.0)), WHOLE_BAG)
    assert every["sightings"] == len(stamps)
    [cup] = memory.last_seen(object_id="cup-1")["objects"]
    assert seconds(cup["observed_at"]) == pytest.approx(stamp(BAG_START_NS) + 5.5)


def test_an_object_keeps_its_last_sighting_in_each_frame(tmp_path: Path, memory: RobotMemory) -> None:
    frames = [
        (BAG_START_NS + k * 10**9, "map" if k < 5 else "odom", [Detected("box-1", "7", (float(k), 0.0, 0.0))])
        for k in range(10)
    ]
    bag = write_detections(tmp_path / "frames", frames, "sqlite3")
    import_bag(memory, bag, BagMap(objects=ObjectTopic("/detections", every_s=3.0)), WHOLE_BAG)
    in_map = {"center": [2.0, 0.0, 0.0], "radius": 5.0, "frame": "map"}
    [box] = memory.last_seen(object_id="box-1", region=in_map)["objects"]
    assert box["position"] == [4.0, 0.0, 0.0] and box["frame"] == "map"
    assert memory.last_seen(object_id="box-1")["objects"][0]["position"] == [9.0, 0.0, 0.0]


def test_label_only_thinning_groups_with_the_object_group_radius(
    tmp_path: Path, locate: Callable[[str], Any], settings: Settings
) -> None:
    """Two chairs 0.6 m apart are two objects at a 0.3 m radius: each keeps its own last sighting."""
    frames = [
        (
            BAG_START_NS + k * 10**9,
            "map",
            [Detected("", "56", (0.0, 0.0, 0.0)), Detected("", "56", (0.6, 0.0, 0.0))],
        )
        for k in range(10)
    ]
    bag = write_detections(tmp_path / "chairs", frames, "sqlite3")
    close = settings.replace(object_group_radius=0.3)
    with RobotMemory(locate("chairs.db"), embed_backend="hash", settings=close) as memory:
        import_bag(memory, bag, BagMap(objects=ObjectTopic("/detections", every_s=100.0)), WHOLE_BAG)
        chairs = memory.last_seen("56")["objects"]
        assert sorted(c["position"][0] for c in chairs) == [0.0, 0.6]
        assert [seconds(c["observed_at"]) for c in chairs] == [pytest.approx(stamp(BAG_START_NS) + 9)] * 2


def test_an_empty_box_gives_way_to_the_hypothesis_pose(tmp_path: Path, memory: RobotMemory) -> None:
    bag = write_detections(tmp_path / "unboxed", _one_object([0.0, 1.0], boxed=False), "sqlite3")
    import_bag(memory, bag, BagMap(objects=ObjectTopic("/detections")), WHOLE_BAG)
    assert memory.last_seen(object_id="cup-1")["objects"][0]["position"] == [1.0, 0.0, 0.0]


def test_stamps_of_another_clock_take_the_bag_time_and_are_warned(
    tmp_path: Path, memory: RobotMemory
) -> None:
    """Simulation time counts from zero: 100 s after 1970 is not when a 2023 recording saw the cup."""
    frames = [
        (
            BAG_START_NS + k * 10**9,
            "map",
            [Detected("cup-1", "41", (0.0, 0.0, 0.0), stamp_ns=(100 + k) * 10**9)],
        )
        for k in range(3)
    ]
    bag = write_detections(tmp_path / "sim", frames, "sqlite3")
    result = import_bag(memory, bag, BagMap(objects=ObjectTopic("/detections")), WHOLE_BAG)
    assert result["warnings"] == [
        "objects: 3 detections on /detections are stamped more than an hour from the time the bag recorded "
        "them (another clock: simulation time?); the bag's time was taken"
    ]
    [cup] = memory.last_seen(object_id="cup-1")["objects"]
    assert seconds(cup["observed_at"]) == pytest.approx(stamp(BAG_START_NS) + 2)


@pytest.mark.parametrize(
    ("paths", "message"),
    [
        ({"id": "bbox.center.position"}, "objects.id: 'bbox.center.position' on /detections holds"),
        (
            {"label": "results.0.hypothesis.score"},
            "objects.label: 'results.0.hypothesis.score' on /detections holds float",
        ),
        ({"items": "header.frame_id"}, "objects.items: 'header.frame_id' on /detections is not a list"),
        ({"items": "header"}, "objects.items: 'header' on /detections is not a list"),
        (
            {"id": "uid", "position": "bbox.center.position"},
            "objects.id: detections on /detections have no field 'uid'",
        ),
        (
            {"items": "detections", "position": "bbox.size.x"},
            "'bbox.size.x' on /detections is not a position",
        ),
        ({"items": "results"}, "objects.items: messages on /detections have no field 'results'"),
    ],
)
def test_a_path_that_misses_or_reaches_the_wrong_kind_is_refused_before_anything_is_written(
    paths: dict[str, str], message: str, tmp_path: Path, memory: RobotMemory
) -> None:
    bag = write_detections(tmp_path / "patrol", patrol()[:4], "sqlite3")
    with pytest.raises(ValidationError, match=re.escape(message)):
        import_bag(memory, bag, BagMap(objects=ObjectTopic("/detections", **paths)), WHOLE_BAG)  # type: ignore[arg-type]
    assert memory.recall("", n=10)["memories"] == []


def test_an_empty_class_in_labels_is_refused() -> None:
    from robotmem.integrations.bag_map import map_from_dict

    with pytest.raises(ValidationError, match="objects.labels: a class must be non-empty text"):
        map_from_dict(
            {"objects": {"topic": "/d", "labels": {"": "cup"}}, "episodes": {"windows": [[0.0, 1.0]]}}
        )
