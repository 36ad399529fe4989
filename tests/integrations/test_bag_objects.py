"""Objects from a bag's detection topic: ``vision_msgs`` arrays written at test time, imported as sightings,
and asked back with ``last_seen`` and ``around`` against the truth the writer used."""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path

import pytest

from robotmem import RobotMemory, ValidationError
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
    result = import_bag(memory, bag, BagMap(objects=named), WHOLE_BAG)
    assert memory.last_seen(object_id="mug-3")["objects"][0]["position"] == list(MUG_AFTER)
    assert result["sightings"] == 2 * kept_per_object(1.0)
    missing = ObjectTopic("/detections", position="results.3.pose.pose.position")
    with pytest.raises(ValidationError, match="objects.position: messages on /detections have no field"):
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
