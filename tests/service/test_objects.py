"""Objects that persist, on every engine: ``last_seen`` (by id, by description, as of a time) and ``around``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from tests.conftest import FakeClock, table_counts

from robotmem import RobotMemory, ValidationError


def _see(
    memory: RobotMemory,
    clock: FakeClock,
    text: str,
    label: str,
    position: list[float],
    object_id: str | None = None,
    frame: str | None = None,
) -> int:
    clock.advance(minutes=10)
    named: dict[str, Any] = {"label": label, **({"id": object_id} if object_id else {})}
    spatial: dict[str, Any] = {"position": position, **({"frame": frame} if frame else {})}
    result = memory.learn(text, context={"object": named, "spatial": spatial})
    assert result["status"] == "created"
    return int(result["memory_id"])


@pytest.fixture
def site(memory: RobotMemory, clock: FakeClock) -> dict[str, int]:
    """A morning on a site: a mug seen twice, a pallet moved, a Chinese label, cones without ids."""
    return {
        "mug_early": _see(
            memory, clock, "saw the red mug on the kitchen counter", "red mug", [1, 2, 0.9], "mug-3"
        ),
        "mug_late": _see(
            memory, clock, "saw the red mug by the kitchen sink", "red mug", [1.4, 2, 0.9], "mug-3"
        ),
        "cup": _see(memory, clock, "saw the red cup on the lab shelf", "red cup", [10, 2, 1.5], "cup-1"),
        "pallet_before": _see(memory, clock, "the pallet stands at bay one", "pallet", [5, 5, 0], "pallet-1"),
        "pallet_after": _see(
            memory, clock, "the pallet stands at bay four", "pallet", [20, 5, 0], "pallet-1"
        ),
        "teapot": _see(memory, clock, "看到红色杯子在桌子上", "红色杯子", [3, 3, 0.8], "mug-9"),
        "cone_a1": _see(
            memory, clock, "a traffic cone in the yard, first look", "cone", [1, 1, 0], frame="odom"
        ),
        "cone_a2": _see(
            memory, clock, "a traffic cone in the yard, second look", "cone", [1.3, 1, 0], frame="odom"
        ),
        "cone_b": _see(memory, clock, "a traffic cone by the gate", "cone", [15, 1, 0], frame="odom"),
    }


def test_an_object_by_id_is_its_latest_sighting_wherever_it_moved(
    memory: RobotMemory, site: dict[str, int]
) -> None:
    (pallet,) = memory.last_seen(object_id="pallet-1")["objects"]
    assert pallet == {
        "object_id": "pallet-1",
        "label": "pallet",
        "position": [20.0, 5.0, 0.0],
        "frame": "map",
        "observed_at": "2026-01-01T12:50:00Z",
        "memory_id": site["pallet_after"],
        "sightings": 2,
    }
    assert memory.last_seen(object_id="no-such-thing") == {
        "objects": [],
        "note": "no sighting in collection 'default' names object id 'no-such-thing': nothing is known of it here",
    }


def test_as_of_answers_where_it_was_before_it_moved(memory: RobotMemory, site: dict[str, int]) -> None:
    (before,) = memory.last_seen(object_id="pallet-1", as_of="2026-01-01T12:49:59Z")["objects"]
    assert before["memory_id"] == site["pallet_before"] and before["position"] == [5.0, 5.0, 0.0]
    assert memory.last_seen(object_id="pallet-1", as_of="2026-01-01T12:00:00Z") == {
        "objects": [],
        "note": "object 'pallet-1' has 2 sightings in collection 'default', none in the window, as_of or "
        "region asked",
    }
    epoch = 1767272400  # 2026-01-01T13:00:00Z
    assert (
        memory.last_seen(object_id="pallet-1", as_of=epoch)["objects"][0]["memory_id"] == site["pallet_after"]
    )


def test_a_description_finds_the_object_it_names_and_never_a_wrong_one(
    memory: RobotMemory, site: dict[str, int]
) -> None:
    found = memory.last_seen("where is the red mug")["objects"]
    assert found[0]["object_id"] == "mug-3" and found[0]["memory_id"] == site["mug_late"]
    assert memory.last_seen("红色杯子")["objects"][0]["object_id"] == "mug-9"
    giraffe = memory.last_seen("the purple giraffe")
    assert giraffe["objects"] == [] and "is named by the description" in giraffe["note"]


@pytest.mark.parametrize(
    ("description", "named"),
    [
        ("blue mug", []),  # shares "mug" with the red mug: not enough
        ("mug-7", []),  # shares "mug" with mug-3, but names an id nobody carries
        ("where is tool 3", []),
        ("红色的杯子", ["mug-9"]),
        ("蓝色杯子", []),
        ("mug", ["mug-3"]),  # every word asked is among the red mug's names
        ("the red mug on the kitchen counter", ["mug-3"]),  # holds the whole label
        ("where did I last see mug-3", ["mug-3"]),  # holds the whole id
        ("red", ["cup-1", "mug-3"]),
    ],
)
def test_a_description_names_an_object_by_all_its_words_not_one(
    memory: RobotMemory, site: dict[str, int], description: str, named: list[str]
) -> None:
    found = memory.last_seen(description)["objects"]
    assert sorted(o["object_id"] for o in found) == named


def test_a_label_is_found_when_no_sighting_says_it(memory: RobotMemory, clock: FakeClock) -> None:
    """A detector's label names the object even when the caption of its sightings does not hold it."""
    seen = _see(memory, clock, "camera frame 456 processed", "green cup", [1, 1, 0], "cup-4")
    _see(memory, clock, "检测帧 457 已处理", "黄色盒子", [2, 1, 0])
    (cup,) = memory.last_seen("where is my green cup")["objects"]
    assert cup["object_id"] == "cup-4" and cup["memory_id"] == seen
    assert [o["label"] for o in memory.last_seen("黄色盒子在哪里")["objects"]] == ["黄色盒子"]
    assert memory.last_seen("where is my blue cup")["objects"] == []


def test_a_chinese_label_is_named_however_the_sentence_around_it_splits(
    memory: RobotMemory, clock: FakeClock
) -> None:
    seen = _see(memory, clock, "看到充电宝在桌子上", "充电宝", [1, 1, 0], "bank-1")
    for description in ("充电宝", "充电宝在哪", "上次看到充电宝是在哪里", "我的充电宝在哪里"):
        assert [o["memory_id"] for o in memory.last_seen(description)["objects"]] == [seen], description
    assert memory.last_seen("充电器在哪")["objects"] == []


def test_a_description_looks_past_many_sightings_of_other_objects(
    memory: RobotMemory, clock: FakeClock
) -> None:
    for k in range(120):  # their captions say "mug" more often than any mug's
        _see(memory, clock, f"mug mug rack {k} by the mug shelf", "rack", [k, 0, 0], f"rack-{k}")
    _see(memory, clock, "the green mug on the desk", "green mug", [1, 5, 0], "mug-2")
    found = memory.last_seen("mug")["objects"]
    assert [o["object_id"] for o in found] == ["mug-2"]


def test_an_id_names_its_object_alone_and_the_most_specific_name_comes_first(
    memory: RobotMemory, clock: FakeClock
) -> None:
    """An id-like word ("mug-2") is one word: it names mug-2, not mug-30 nor every mug; an unknown id names
    nothing. A label held whole ranks before a label that merely holds every word asked."""
    for object_id, label, x in (("mug-1", "mug", 1), ("mug-2", "mug", 5), ("mug-30", "mug", 9)):
        _see(memory, clock, f"a mug seen at spot {x}", label, [x, 0, 0], object_id)
    _see(memory, clock, "red mug lid, red mug lid", "red mug lid", [3, 0, 0], "lid-1")
    _see(memory, clock, "a person walking by with a mug", "person", [8, 0, 0], "2")  # a tracker's number
    _see(memory, clock, "the thing on the mug shelf", "the", [2, 2, 0], "t-9")  # a label of stop words

    def named(description: str, n: int = 5) -> list[str]:
        return [o["object_id"] for o in memory.last_seen(description, n=n)["objects"]]

    assert named("mug-2") == named("where is MUG-2?") == ["mug-2"]
    assert named("mug-99") == named("mug_2") == []
    assert named("where is the red mug", n=1) != ["lid-1"]
    assert named("red mug")[-1] == "lid-1" and sorted(named("red mug")[:3]) == ["mug-1", "mug-2", "mug-30"]
    assert sorted(named("mugs")) == sorted(named("mug")) == ["lid-1", "mug-1", "mug-2", "mug-30"]
    assert "2" not in named("the mug on shelf 2") and "t-9" not in named("where is the mug")


def test_the_words_of_an_id_name_that_object_before_others_of_its_label(
    memory: RobotMemory, clock: FakeClock
) -> None:
    """Two pallets share a label; "pallet 2" holds that label and every word of pallet-2's id."""
    for object_id, x in (("pallet-1", 5), ("pallet-2", 20), ("pallet-3", 35)):
        _see(memory, clock, f"saw the pallet at bay {x}", "pallet", [x, 5, 0], object_id)

    def named(description: str, n: int = 5) -> list[str]:
        return [o["object_id"] for o in memory.last_seen(description, n=n)["objects"]]

    assert named("pallet 2", n=1) == ["pallet-2"]
    assert named("where is pallet 1")[0] == "pallet-1"
    assert named("where did I leave pallet 3", n=1) == ["pallet-3"]
    assert sorted(named("pallet")) == ["pallet-1", "pallet-2", "pallet-3"]
    assert named("pallet 4") == named("pallet")  # no such id: the label names them all


def test_without_a_description_the_most_recently_seen_come_first(
    memory: RobotMemory, clock: FakeClock
) -> None:
    first_cone = _see(memory, clock, "a cone by the gate", "cone", [0, 0, 0])
    barrel = _see(memory, clock, "a barrel in the yard", "barrel", [5, 0, 0], "barrel-1")
    second_cone = _see(memory, clock, "a cone far down the road", "cone", [50, 0, 0])
    assert [o["memory_id"] for o in memory.last_seen()["objects"]] == [second_cone, barrel, first_cone]
    assert [o["memory_id"] for o in memory.last_seen(n=2)["objects"]] == [second_cone, barrel]
    assert memory.last_seen(until="-1w")["note"].startswith(
        "no sighting (a memory whose context names an object)"
    )
    assert "note" not in memory.last_seen()


def test_sightings_without_an_id_group_by_label_and_distance(
    memory: RobotMemory, site: dict[str, int]
) -> None:
    cones = memory.last_seen("cone")["objects"]
    assert [(c["object_id"], c["memory_id"], c["sightings"]) for c in cones] == [
        (None, site["cone_b"], 1),
        (None, site["cone_a2"], 2),
    ]
    assert {c["frame"] for c in cones} == {"odom"}


def test_the_group_radius_is_a_setting(memory: RobotMemory, site: dict[str, int]) -> None:
    # The two yard cones lie 0.3 apart and the gate's 14 m further: one radius groups, another splits.
    def cones(radius: float) -> list[tuple[int, int]]:
        memory.settings = memory.settings.replace(object_group_radius=radius)
        return [(c["memory_id"], c["sightings"]) for c in memory.last_seen("cone")["objects"]]

    assert cones(0.29) == [(site["cone_b"], 1), (site["cone_a2"], 1), (site["cone_a1"], 1)]
    assert cones(0.31) == [(site["cone_b"], 1), (site["cone_a2"], 2)]
    assert cones(20.0) == [(site["cone_b"], 3)]
    gate = memory.around([15, 1], 1.0, frame="odom")["objects"]
    assert [(o["memory_id"], o["sightings"]) for o in gate] == [(site["cone_b"], 3)]
    memory.settings = memory.settings.replace(object_group_radius=0.0)
    assert [o["sightings"] for o in memory.around([15, 1], 1.0, frame="odom")["objects"]] == [1]


def test_window_and_region_narrow_the_sightings(memory: RobotMemory, site: dict[str, int]) -> None:
    kitchen = {"center": [1.2, 2, 0.9], "radius": 0.5}
    found = memory.last_seen(object_id="mug-3", region={**kitchen, "center": [1, 2, 0.9], "radius": 0.1})[
        "objects"
    ]
    assert found[0]["memory_id"] == site["mug_early"] and found[0]["sightings"] == 1
    assert memory.last_seen(object_id="mug-3", until="2026-01-01T12:15:00Z")["objects"][0]["sightings"] == 1
    assert memory.last_seen(object_id="mug-3", since="-5m")["objects"] == []  # relative to the clock


def test_around_lists_what_is_here_now_nearest_first(memory: RobotMemory, site: dict[str, int]) -> None:
    here = memory.around([4, 4, 0], 3.5)
    assert [o["object_id"] for o in here["objects"]] == ["mug-9", "mug-3"]
    assert here["objects"][0]["distance"] == pytest.approx((1 + 1 + 0.64) ** 0.5)
    # The pallet stood at bay one, but was seen at bay four since: it is not around bay one any more.
    assert "pallet-1" not in [o["object_id"] for o in memory.around([5, 5, 0], 1.0)["objects"]]
    assert [m["id"] for m in memory.around([5, 5, 0], 1.0)["memories"]] == [site["pallet_before"]]
    yard = memory.around([1, 1], 1.0, frame="odom")
    assert [(o["label"], o["memory_id"]) for o in yard["objects"]] == [("cone", site["cone_a2"])]
    assert memory.around([1, 1], 1.0)["objects"] == []  # the map's (1, 1) is another place


def test_times_before_now_count_back_from_the_clock(memory: RobotMemory, site: dict[str, int]) -> None:
    # The last sighting was at 13:30, and the clock stands there: "-35m" is 12:55, after the pallet moved.
    assert (
        memory.last_seen(object_id="pallet-1", as_of="-35m")["objects"][0]["memory_id"]
        == site["pallet_after"]
    )
    (before,) = memory.last_seen(object_id="pallet-1", as_of="-0.75h")["objects"]  # 12:45
    assert before["memory_id"] == site["pallet_before"] and before["sightings"] == 1
    assert memory.last_seen(object_id="pallet-1", as_of="now")["objects"][0]["sightings"] == 2
    assert memory.last_seen(object_id="mug-3", since="-2h", until="now")["objects"][0]["sightings"] == 2
    (late,) = memory.last_seen(object_id="mug-3", since="-72m")["objects"]  # 12:18: the later sighting only
    assert late["memory_id"] == site["mug_late"] and late["sightings"] == 1
    (early,) = memory.last_seen(object_id="mug-3", until="-75m")["objects"]  # 12:15: the earlier only
    assert early["memory_id"] == site["mug_early"]
    assert memory.last_seen(object_id="mug-3", since="-1d", until="-1h")["objects"][0]["sightings"] == 2
    assert memory.last_seen(object_id="mug-3", until="-1w")["objects"] == []


def test_around_from_each_object_s_latest_sighting_equals_the_sightings_in_the_region(
    memory: RobotMemory, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Objects with ids found from each one's latest sighting (a seek per object) give what the region's
    sightings give (the path past ``MOST_OBJECTS`` ids) and what a scan of every sighting gives: the
    objects whose latest sighting lies within the radius, in that frame, since the time asked."""
    import random

    from robotmem.service import objects

    rng = random.Random(5)
    latest: dict[str, tuple[list[float], str]] = {}
    batch = []
    for k in range(400):
        object_id = f"crate-{rng.randrange(30)}"
        frame = rng.choice(["map", "map", "odom"])
        position = [round(rng.uniform(0, 10), 2), round(rng.uniform(0, 10), 2), 0.5]
        batch.append(
            {
                "description": f"saw {object_id} on patrol ({k})",
                "context": {
                    "object": {"id": object_id, "label": "crate"},
                    "spatial": {"position": position, "frame": frame},
                },
                "observed_at": 1_767_225_600 + 60 * k,
            }
        )
        latest[object_id] = (position, frame)
    batch += [  # sightings without an id, grouped by label and place
        {
            "description": f"cone {k}",
            "context": {"object": {"label": "cone"}, "spatial": {"position": [2.0 + 0.1 * k, 2.0, 0.5]}},
            "observed_at": 1_767_225_600 + 60 * (400 + k),
        }
        for k in range(3)
    ]
    memory.save_perceptions(batch)
    for centre, radius, frame, since in (
        ([5, 5, 0.5], 3.0, "map", None),
        ([2, 8, 0.5], 2.5, "odom", None),
        ([2, 2, 0.5], 1.0, "map", None),
        ([5, 5, 0.5], 4.0, "map", "2026-01-01T05:00:00Z"),
    ):
        found = memory.around(centre, radius, frame=frame, since=since, n=100)["objects"]
        monkeypatch.setattr(objects, "MOST_OBJECTS", 5)  # 30 ids: read from the region's sightings
        listed = memory.around(centre, radius, frame=frame, since=since, n=100)["objects"]
        monkeypatch.undo()
        assert found == listed
        expected = {
            object_id
            for object_id, (position, where) in latest.items()
            if where == frame
            and sum((a - b) ** 2 for a, b in zip(position, centre, strict=True)) <= radius**2
        }
        if since is None:  # every crate's latest sighting falls after the window's start otherwise
            assert {o["object_id"] for o in found if o["object_id"]} == expected
        assert [o["distance"] for o in found] == sorted(o["distance"] for o in found)
    cones = memory.around([2.1, 2.0, 0.5], 0.5)["objects"]
    assert [(o["label"], o["object_id"], o["sightings"]) for o in cones] == [("cone", None, 3)]


def test_a_frame_that_holds_no_position_is_warned_by_last_seen_and_around(
    memory: RobotMemory, site: dict[str, int]
) -> None:
    """Nothing found in a frame the spatial index holds no position in ("/odom" for "odom") comes with a
    warning naming the frames that do; an empty place in a known frame gets none (no ``warnings`` key)."""
    there = "(frames with a position: 'map', 'odom')"
    nothing = memory.around([1, 1], 1.0, frame="/odom")
    assert nothing == {
        "objects": [],
        "memories": [],
        "warnings": [f"frame: no memory has a position at `spatial.position` in frame '/odom' {there}"],
    }
    asked = memory.last_seen("cone", region={"center": [1, 1], "radius": 1, "frame": "/odom"})
    assert asked["objects"] == [] and asked["warnings"] == [
        f"region.frame: no memory has a position at `spatial.position` in frame '/odom' {there}"
    ]
    assert memory.around([90, 90], 1.0, frame="odom") == {"objects": [], "memories": []}
    empty = memory.last_seen("cone", region={"center": [90, 90], "radius": 1, "frame": "odom"})
    assert empty["objects"] == [] and "warnings" not in empty
    assert "warnings" not in memory.last_seen("cone", region={"center": [1, 1], "radius": 1, "frame": "odom"})


def test_around_since_a_time_before_now(memory: RobotMemory, site: dict[str, int]) -> None:
    # Since 12:30: the Chinese-labelled mug (13:00) is around, mug-3 (last seen 12:20) is not.
    recent = memory.around([4, 4, 0], 3.5, since="-1h")
    assert [o["object_id"] for o in recent["objects"]] == ["mug-9"]
    assert sorted(m["id"] for m in recent["memories"]) == sorted([site["pallet_before"], site["teapot"]])
    assert memory.around([4, 4, 0], 3.5, since="-25m") == {"objects": [], "memories": []}
    epoch = 1767270600  # 2026-01-01T12:30:00Z, the same bound as epoch seconds
    assert memory.around([4, 4, 0], 3.5, since=epoch)["objects"] == recent["objects"]


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda m: m.last_seen("mug", since="yesterday"), "since: must be an ISO 8601 time"),
        (
            lambda m: m.last_seen("mug", as_of="2026-01-01T12:00:00"),
            "as_of: '2026-01-01T12:00:00' has no zone",
        ),
        (lambda m: m.last_seen("mug", since="2026-01-02T00:00:00Z", until="2026-01-01T00:00:00Z"), "since:"),
        (lambda m: m.last_seen("mug", region={"center": [1, 2], "radius": -1}), "region: radius"),
        (lambda m: m.around([1.0], 1.0), "position"),
        (lambda m: m.around([1.0, 2.0], -1.0), "radius"),
        (lambda m: m.around([True, 2.0], 1.0), "position"),
        (lambda m: m.around([1.0, 2.0], "1"), "radius"),
        (lambda m: m.around([1e200, 1e200, 0.0], 1e200), "position: must be at most 1e+12"),
        (lambda m: m.around([1.0, 2.0], 1e13), "radius: must be a number from 0 to 1e+12"),
        (
            lambda m: m.recall("", region={"center": [1e200, 0], "radius": 1}),
            "region: center must be at most",
        ),
        (lambda m: m.recall("", region={"min": [-1e300, 0], "max": [1, 1]}), "region: min must be at most"),
        (lambda m: m.recall("", region={"center": [0, 0], "radius": 1e200}), "region: radius must be"),
        (lambda m: m.around([1.0, 2.0], 1.0, frame=""), "frame:"),
        (lambda m: m.last_seen("mug", since="-2x"), "since: must be an ISO 8601 time with a zone"),
        (lambda m: m.last_seen("mug", until="-30 minutes"), "until: must be"),
        (lambda m: m.last_seen("mug", as_of="soon"), "as_of: must be"),
        (lambda m: m.last_seen("mug", as_of=True), "as_of"),
        (lambda m: m.last_seen("mug", since="-1h", as_of="-2h"), "as_of: "),
        (lambda m: m.last_seen("mug", since="-1h", until="-2h"), "since: "),
        (lambda m: m.last_seen("mug", as_of="-400000w"), "as_of: "),
        (lambda m: m.around([1.0, 2.0], 1.0, since="last week"), "since: must be"),
        (lambda m: m.around([1.0, 2.0], 1.0, since=float("nan")), "since: must be a finite number"),
        (lambda m: m.last_seen("mug", collection="*"), "collection: '*' (every collection) is recall's"),
        (lambda m: m.around([1.0, 2.0], 1.0, collection="*"), "around answers within one collection"),
        (lambda m: m.last_seen("mug", n=True), "n: must be a whole number, not true or false (got True)"),
        (lambda m: m.around([1.0, 2.0], 1.0, n=False), "n: must be a whole number"),
        (lambda m: m.recall("mug", n=True), "n: must be a whole number"),
        (lambda m: m.get_memory(True), "memory_id: must be a whole number"),
        (lambda m: m.list_memories(limit=True), "limit: must be a whole number"),
    ],
)
def test_bad_input_is_refused_naming_the_field(
    memory: RobotMemory, site: dict[str, int], call: Any, words: str
) -> None:
    before = table_counts(memory)
    with pytest.raises(ValidationError) as caught:
        call(memory)
    assert words in str(caught.value)
    assert table_counts(memory) == before


def test_around_lists_the_memories_there_newest_observed_first(memory: RobotMemory, clock: FakeClock) -> None:
    """A recording imported now of what happened this morning is older than what the robot saw an hour
    ago, though it was stored after it."""
    clock.advance(minutes=10)
    seen = memory.learn(
        "the dock is clear",
        context={"spatial": {"position": [0.5, 0, 0]}},
        observed_at=(clock() - timedelta(hours=1)).isoformat(),
    )["memory_id"]
    clock.advance(minutes=10)
    imported = memory.learn(
        "bag: a box in front of the dock",
        context={"spatial": {"position": [0, 0.5, 0]}},
        observed_at=(clock() - timedelta(hours=5)).isoformat(),
    )["memory_id"]
    here = memory.around([0, 0, 0], 1.0)
    assert [m["id"] for m in here["memories"]] == [seen, imported]
