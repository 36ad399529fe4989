"""Regions and frames in recall, on every engine and both SQLite sources: exact at the boundary, one frame
at a time, applied before any limit, and the spatial index kept in step with every write."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import query_rows, table_counts

from robotmem import RobotMemory, ValidationError
from robotmem.config import Settings
from robotmem.query.regions import Region
from robotmem.store.sqlite import regions, schema


@pytest.fixture
def mem(locate: Callable[[str], Any], settings: Settings, recall_mirror: bool) -> Iterator[RobotMemory]:
    chosen = settings.replace(recall_mirror=recall_mirror)
    with RobotMemory(locate("regions.db"), embed_backend="hash", settings=chosen) as memory:
        yield memory


def _learn(mem: RobotMemory, text: str, position: list[float], frame: str | None = None) -> int:
    spatial: dict[str, Any] = {"position": position}
    if frame is not None:
        spatial["frame"] = frame
    result = mem.learn(text, context={"spatial": spatial})
    assert result["status"] == "created"
    return int(result["memory_id"])


def _ids(mem: RobotMemory, query: str = "", **options: Any) -> set[int]:
    return {int(m["id"]) for m in mem.recall(query, n=100, min_confidence=0.0, **options)["memories"]}


def test_a_sphere_holds_its_boundary_and_nothing_beyond(mem: RobotMemory) -> None:
    on = _learn(mem, "cup on the sphere's surface", [3.0, 4.0, 0.0])  # exactly 5 from the origin
    beyond = _learn(mem, "cup just past the surface", [3.0, 4.0 + 1e-9, 0.0])
    inside = _learn(mem, "cup at the centre", [0.0, 0.0, 0.0])
    found = _ids(mem, region={"center": [0, 0, 0], "radius": 5})
    assert found == {on, inside}
    assert beyond not in found
    assert _ids(mem, region={"center": [0, 0, 0], "radius": 0}) == {inside}


def test_a_position_far_beyond_any_region_leaves_spheres_and_around_answering(mem: RobotMemory) -> None:
    near = _learn(mem, "marker near the dock", [1.0, 1.0])
    for far in ([1e200, 0.0], [1e300, 1e300, 1e300], [-1e308, 1.0]):  # squares beyond a float64
        _learn(mem, f"marker placed away at {far[0]:g}", far)
    assert _ids(mem, region={"center": [1, 1], "radius": 1}) == {near}
    assert _ids(mem, region={"center": [1, 1, 0], "radius": 1e12}) == set()  # 2-D positions lack a z
    assert _ids(mem, "marker", region={"center": [1, 1], "radius": 1}, since="-1h") == {near}
    assert [m["id"] for m in mem.around([1, 1], 1.0)["memories"]] == [near]
    assert len(_ids(mem, region={"min": [-1e12, -1e12], "max": [1e12, 1e12]})) == 1


def test_a_box_holds_its_faces_and_a_circle_tests_x_and_y(mem: RobotMemory) -> None:
    corner = _learn(mem, "crate at the box corner", [1.0, 2.0, 3.0])
    outside = _learn(mem, "crate a hair outside", [1.0, 2.0, 3.0000001])
    flat = _learn(mem, "crate with a floor position", [0.5, 1.0])
    box = {"min": [0, 0, 0], "max": [1, 2, 3]}
    assert _ids(mem, region=box) == {corner}  # the 2-D position has no z to test
    assert _ids(mem, region={"min": [0, 0], "max": [1, 2]}) == {corner, outside, flat}
    assert _ids(mem, region={"center": [1, 2], "radius": 0}) == {corner, outside}


def test_positions_in_other_frames_never_compare(mem: RobotMemory) -> None:
    in_map = _learn(mem, "charger seen in the map frame", [1.0, 1.0, 0.0])
    unnamed = _learn(mem, "charger seen without a frame", [1.0, 1.0, 0.0])
    in_odom = _learn(mem, "charger seen in the odom frame", [1.0, 1.0, 0.0], frame="odom")
    sphere = {"center": [1, 1, 0], "radius": 0.5}
    assert _ids(mem, region=sphere) == {in_map, unnamed}  # no frame named: "map"
    assert _ids(mem, region={**sphere, "frame": "map"}) == {in_map, unnamed}
    assert _ids(mem, region={**sphere, "frame": "odom"}) == {in_odom}
    assert _ids(mem, region={**sphere, "frame": "base_link"}) == set()
    target = {"field": "spatial.position", "target": [1, 1, 0]}
    hits = mem.recall("", n=10, spatial_sort={**target, "frame": "odom"})["memories"]
    measured = {int(h["id"]): h.get("spatial_distance") for h in hits}
    assert measured[in_odom] == 0.0
    assert measured[in_map] is None and measured[unnamed] is None  # present, but not measured
    dropped = mem.recall("", n=10, spatial_sort={**target, "max_distance": 1.0})["memories"]
    assert {int(h["id"]) for h in dropped} == {in_map, unnamed}


def test_a_frame_holding_no_position_is_warned_with_the_frames_that_do(mem: RobotMemory) -> None:
    """A region or spatial sort in a frame the index holds no position in (``/map`` for ``map``) returns
    nothing measured and says which frames hold positions; a frame that holds some, or a region that is
    merely empty, gets no warning; a frame emptied by forget is no longer listed."""
    _learn(mem, "charger seen without a frame", [1.0, 1.0, 0.0])
    odom = _learn(mem, "charger seen in the odom frame", [1.0, 1.0, 0.0], frame="odom")
    sphere = {"center": [1, 1, 0], "radius": 0.5}
    wrong = mem.recall("charger", region={**sphere, "frame": "/map"})
    assert wrong["memories"] == []
    assert wrong["warnings"] == [
        "region.frame: no memory has a position at `spatial.position` in frame '/map' "
        "(frames with a position: 'map', 'odom')"
    ]
    target = {"field": "spatial.position", "target": [1, 1, 0]}
    unmeasured = mem.recall("charger", spatial_sort={**target, "frame": "base_link"})
    assert unmeasured["memories"] and all(h.get("spatial_distance") is None for h in unmeasured["memories"])
    assert unmeasured["warnings"] == [
        "spatial_sort.frame: no memory has a position at `spatial.position` in frame 'base_link' "
        "(frames with a position: 'map', 'odom')"
    ]
    assert mem.recall("charger", region={**sphere, "frame": "odom"})["warnings"] == []
    assert (
        mem.recall("charger", region={"center": [50, 50, 0], "radius": 1, "frame": "odom"})["warnings"] == []
    )
    assert mem.recall("charger", spatial_sort={**target, "frame": "odom"})["warnings"] == []
    mem.forget(odom, reason="seen in the wrong frame")
    [warning] = mem.recall("charger", region={**sphere, "frame": "odom"})["warnings"]
    assert warning.endswith("in frame 'odom' (frames with a position: 'map')")


def test_the_frames_a_warning_names_are_quoted_and_capped(mem: RobotMemory) -> None:
    for k in range(23):
        _learn(mem, f"robot {k} docked", [0.0, 0.0], frame=f"robot{k:02d}/odom")
    [warning] = mem.recall("docked", region={"center": [0, 0], "radius": 1, "frame": "robot99/odom"})[
        "warnings"
    ]
    assert "(frames with a position: 'robot00/odom', 'robot01/odom'," in warning
    assert warning.endswith("'robot19/odom' and 3 more)") and "robot20" not in warning


def test_the_region_applies_before_the_limit_and_with_query_and_filter(mem: RobotMemory) -> None:
    far = [_learn(mem, f"mug number {i} on the far shelf", [50.0 + i, 0.0, 1.0]) for i in range(30)]
    near = _learn(mem, "the mug on the near table is chipped", [0.5, 0.5, 1.0])
    other = mem.learn(
        "plate on the near table", context={"spatial": {"position": [0.4, 0.5, 1.0]}, "kind": "x"}
    )
    assert far and other["status"] == "created"
    region = {"center": [0, 0, 1], "radius": 1}
    hits = mem.recall("mug", n=1, min_confidence=0.0, region=region)["memories"]
    assert [int(h["id"]) for h in hits] == [near]
    assert _ids(mem, region=region, context_filter={"kind": "x"}) == {int(other["memory_id"])}
    ordered = mem.recall("", n=2, region={"center": [55, 0, 1], "radius": 2.5}, spatial_sort={
        "field": "spatial.position", "target": [55, 0, 1]})["memories"]  # fmt: skip
    assert [int(h["id"]) for h in ordered] == [far[5], far[4]] or [int(h["id"]) for h in ordered] == [
        far[5],
        far[6],
    ]


def test_the_index_follows_forget_update_and_a_reopen(mem: RobotMemory, locate: Callable[[str], Any]) -> None:
    kept = _learn(mem, "the pallet stands by the dock", [2.0, 0.0, 0.0])
    gone = _learn(mem, "the trolley stands by the dock", [2.0, 0.1, 0.0])
    moved = _learn(mem, "the ladder stands by the dock", [2.0, 0.2, 0.0])
    dock = {"center": [2, 0, 0], "radius": 1}
    assert _ids(mem, region=dock) == {kept, gone, moved}
    mem.forget(gone, "taken away")
    mem.update(moved, "the ladder stands by the dock", context={"spatial": {"position": [9.0, 0.0, 0.0]}})
    assert _ids(mem, region=dock) == {kept}
    assert _ids(mem, region={"center": [9, 0, 0], "radius": 0.1}) == {moved}
    mem.update(
        kept, "the pallet stands by the dock", context={"spatial": {"position": [2.0, 0.0], "frame": "odom"}}
    )
    assert _ids(mem, region=dock) == set()
    assert _ids(mem, region={"center": [2, 0], "radius": 0.1, "frame": "odom"}) == {kept}
    rows = query_rows(
        mem, sqlite="SELECT count(*) FROM memory_positions", postgres="SELECT count(*) FROM memory_positions"
    )
    assert rows == [(2,)]


def test_recall_equals_a_scan_over_random_positions(mem: RobotMemory) -> None:
    rng = random.Random(7)
    points: dict[int, tuple[str, tuple[float, ...]]] = {}
    for i in range(120):
        frame = rng.choice(["map", "odom"])
        position = [round(rng.uniform(-5, 5), 1) for _ in range(rng.choice([2, 3]))]
        points[_learn(mem, f"sighting {i} of a box on the floor", position, frame=frame)] = (
            frame,
            tuple(position),
        )
    for _ in range(12):
        frame = rng.choice(["map", "odom"])
        if rng.random() < 0.5:
            raw: dict[str, Any] = {
                "center": [rng.uniform(-3, 3) for _ in range(3)],
                "radius": rng.uniform(0, 4),
            }
        else:
            low = [round(rng.uniform(-5, 2), 1) for _ in range(2)]
            raw = {"min": low, "max": [v + round(rng.uniform(0, 5), 1) for v in low]}
        raw["frame"] = frame
        region = Region(("spatial", "position"), frame, **_shape(raw))
        expected = {
            m for m, (f, p) in points.items() if f == frame and len(p) >= region.dims and _inside(region, p)
        }
        assert _ids(mem, region=raw) == expected


def test_a_region_within_a_window_equals_a_scan(mem: RobotMemory) -> None:
    """Region, time window and a query together: exactly the memories in both, by brute force (on
    PostgreSQL such a scope is listed once from the positions' time index and both channels rank it)."""
    rng = random.Random(11)
    start = 1_767_225_600  # 2026-01-01T00:00:00Z
    batch: list[tuple[str, tuple[float, ...], int]] = []
    for _ in range(160):
        frame = rng.choice(["map", "odom"])
        position = [round(rng.uniform(-5, 5), 1) for _ in range(3)]
        moment = start + 60 * rng.randrange(0, 24 * 60)
        batch.append((frame, tuple(position), moment))
    stored = mem.save_perceptions(
        [
            {
                "description": f"sighting {i}: a {rng.choice(['red', 'blue'])} box on the floor",
                "perception_type": "visual",
                "context": {"spatial": {"position": list(p), "frame": f}},
                "observed_at": t,
            }
            for i, (f, p, t) in enumerate(batch)
        ]
    )
    points = {int(s["memory_id"]): row for s, row in zip(stored, batch, strict=True)}
    sizes = []
    for _ in range(10):
        frame = rng.choice(["map", "odom"])
        raw: dict[str, Any] = {"center": [rng.uniform(-3, 3) for _ in range(3)], "radius": rng.uniform(1, 5)}
        raw["frame"] = frame
        region = Region(("spatial", "position"), frame, **_shape(raw))
        since = start + 60 * rng.randrange(0, 20 * 60)
        until = since + 60 * rng.randrange(30, 8 * 60)
        expected = {
            m for m, (f, p, t) in points.items() if f == frame and since <= t <= until and _inside(region, p)
        }
        window = {"region": raw, "since": since, "until": until}
        assert _ids(mem, **window) == expected
        assert _ids(mem, "box", **window) == expected  # every memory holds the word
        hits = mem.recall("box on the floor", n=3, min_confidence=0.0, **window)["memories"]
        assert {int(h["id"]) for h in hits} <= expected and len(hits) == min(3, len(expected))
        sizes.append(len(expected))
    assert max(sizes) >= 3 and min(sizes) < max(sizes)  # the windows and regions chosen hold something


def _shape(raw: dict[str, Any]) -> dict[str, Any]:
    if "radius" in raw:
        return {"center": tuple(raw["center"]), "radius": raw["radius"]}
    return {"low": tuple(raw["min"]), "high": tuple(raw["max"])}


def _inside(region: Region, point: tuple[float, ...]) -> bool:
    import numpy as np

    row = np.full((1, 3), np.nan)
    row[0, : len(point)] = point
    return bool(region.contains(row)[0])


@pytest.mark.parametrize(
    ("region", "words"),
    [
        ({"center": [1], "radius": 1}, "center must be a list of 2 or 3"),
        ({"center": [1, 2], "radius": -1}, "radius must be a number from 0 to 1e+12"),
        ({"min": [0, 0], "max": [1, 1, 1]}, "the same number of coordinates"),
        ({"min": [2, 0], "max": [1, 1]}, "min must not exceed max"),
        ({"field": "spatial.object_position", "center": [1, 2], "radius": 1}, "indexed position path"),
        ({"center": [1, 2], "radius": 1, "frame": ""}, "region.frame"),
        ({"center": [1, 2], "min": [0, 0]}, "either center and radius"),
        ({"center": [1, 2], "radius": 1, "shape": "x"}, "unknown key"),
        ("{not json", "not valid JSON"),
    ],
)
def test_a_bad_region_is_refused_naming_the_field(mem: RobotMemory, region: Any, words: str) -> None:
    before = table_counts(mem)
    with pytest.raises(ValidationError, match="region") as caught:
        mem.recall("", region=region)
    assert words in str(caught.value)
    assert table_counts(mem) == before


def test_a_region_and_a_spatial_sort_in_two_frames_are_refused(mem: RobotMemory) -> None:
    """Positions of two frames never compare: a sort in odom would measure nothing a region in map keeps."""
    _learn(mem, "cone by the gate", [1.0, 1.0])
    _learn(mem, "cone by the gate, odometry", [1.0, 1.0], frame="odom")
    before = table_counts(mem)
    sort = {"field": "spatial.position", "target": [1, 1], "frame": "odom"}
    for region in ({"center": [1, 1], "radius": 2}, {"center": [1, 1], "radius": 2, "frame": "map"}):
        with pytest.raises(ValidationError, match="spatial_sort.frame: 'odom' is not region.frame 'map'"):
            mem.recall("cone", region=region, spatial_sort=sort)
    assert table_counts(mem) == before
    both = mem.recall("cone", region={"center": [1, 1], "radius": 2, "frame": "odom"}, spatial_sort=sort)
    assert [m["content"] for m in both["memories"]] == ["cone by the gate, odometry"]


def test_a_store_of_the_previous_version_gains_the_index(tmp_path: Path, settings: Settings) -> None:
    import sqlite3

    path = tmp_path / "old.db"
    with RobotMemory(path, embed_backend="none", settings=settings) as old:
        old.learn("the forklift parks at bay three", context={"spatial": {"position": [7.0, 1.0]}})
        old.learn(
            "the forklift parks in the yard", context={"spatial": {"position": [7.0, 1.0], "frame": "yard"}}
        )
    conn = sqlite3.connect(path, isolation_level=None)
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    for statement in (*schema.OBJECT_IDS_DROP, *regions.DROP):  # the index of object ids came after
        conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {version - 2}")
    conn.close()
    with RobotMemory(path, embed_backend="none", settings=settings) as new:
        assert len(new.recall("", region={"center": [7, 1], "radius": 0.5})["memories"]) == 1
        assert len(new.recall("", region={"center": [7, 1], "radius": 0.5, "frame": "yard"})["memories"]) == 1


def test_import_and_sync_carry_positions_into_the_other_store_s_index(
    mem: RobotMemory, locate: Callable[[str], Any], settings: Settings, tmp_path: Path
) -> None:
    kept = _learn(mem, "the cart waits at the loading dock", [4.0, 1.0, 0.0])
    _learn(mem, "the cart waits in the yard", [4.0, 1.0, 0.0], frame="odom")
    mem.forget(_learn(mem, "the cart was never at the dock", [4.0, 1.1, 0.0]), "wrong sighting")
    mem.export_memories(tmp_path / "out.jsonl")
    dock = {"center": [4, 1, 0], "radius": 0.5}
    with RobotMemory(locate("imported.db"), embed_backend="hash", settings=settings) as other:
        other.import_memories(tmp_path / "out.jsonl")
        found = other.recall("", n=10, region=dock)["memories"]
        assert [m["content"] for m in found] == [mem.get_memory(kept)["content"]]
    fleet = locate("fleet.db")
    mem.sync(fleet)
    with RobotMemory(fleet, embed_backend="hash", settings=settings) as shared:
        found = shared.recall("", n=10, region=dock)["memories"]
        assert [m["content"] for m in found] == [mem.get_memory(kept)["content"]]
        assert len(shared.recall("", n=10, region={**dock, "frame": "odom"})["memories"]) == 1
