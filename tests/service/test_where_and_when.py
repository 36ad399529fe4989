"""Event time on both engines: ``observed_at`` written, corrected, windowed, ordered and carried.

``since``/``until`` are conditions of recall's scope, so they restrict every channel before any limit:
each window here is checked against brute force over what was written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import FakeClock, raw_sql, table_counts

from robotmem import RobotMemory, ValidationError
from robotmem.config import Settings

START = datetime(2025, 12, 1, 0, 0, tzinfo=timezone.utc)


def stored(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds")


def patrol(mem: RobotMemory, count: int = 40) -> dict[int, datetime]:
    """``count`` sightings of the dock, one an hour, written in a shuffled order; id → when observed."""
    when: dict[int, datetime] = {}
    for k in sorted(range(count), key=lambda i: (i * 7) % count):
        moment = START + timedelta(hours=k)
        found = mem.save_perception(
            f"patrol {k}: the charging dock is clear, battery {50 + k} percent",
            context={"spatial": {"position": [float(k % 5), float(k // 5), 0.0]}, "room": f"room-{k % 3}"},
            observed_at=stored(moment),
        )
        when[found["memory_id"]] = moment
    return when


def test_observed_at_defaults_to_now_and_takes_iso_or_epoch_seconds(
    memory: RobotMemory, clock: FakeClock
) -> None:
    now = memory.learn("the left gripper pad is worn")["memory_id"]
    iso = memory.learn("the lab door sticks", observed_at="2025-06-01T10:00:00+02:00")["memory_id"]
    epoch = memory.save_perception("camera saw the red mug", observed_at=1_750_000_000.25)["memory_id"]
    text = memory.save_perception("camera saw the blue mug", observed_at="1750000000")["memory_id"]
    assert memory.get_memory(now)["observed_at"] == memory.get_memory(now)["created_at"] == stored(clock.now)
    assert memory.get_memory(iso)["observed_at"] == "2025-06-01T08:00:00.000000+00:00"
    assert memory.get_memory(epoch)["observed_at"] == "2025-06-15T15:06:40.250000+00:00"
    assert memory.get_memory(text)["observed_at"] == "2025-06-15T15:06:40.000000+00:00"
    assert memory.get_memory(iso)["created_at"] == stored(clock.now)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: m.learn("the lab door sticks", observed_at="2025-06-01T10:00:00"), "observed_at: "),
        (lambda m: m.learn("the lab door sticks", observed_at="last tuesday"), "observed_at: must be"),
        (lambda m: m.learn("the lab door sticks", observed_at=1e15), "observed_at: "),
        (lambda m: m.save_perception("camera saw a mug", observed_at=float("nan")), "observed_at: "),
        (lambda m: m.save_perceptions([{"description": "camera saw a mug", "observed_at": "x"}]), "items[0]"),
        (lambda m: m.recall("dock", since="-2 hours"), "since: must be"),
        (lambda m: m.recall("dock", until="2026-01-01"), "until: "),
        (lambda m: m.recall("dock", since="now", until="-1h"), "since: "),
        (lambda m: m.learn("the lab door sticks", observed_at="1_750_000_000"), "observed_at: must be"),
        (
            lambda m: m.learn("the lab door sticks", observed_at="１７５００００００００"),
            "observed_at: must be",
        ),
        (lambda m: m.recall("dock", until="nan"), "until: must be"),
    ],
)
def test_a_bad_time_names_its_field_and_writes_nothing(
    memory: RobotMemory, call: Callable[[RobotMemory], Any], message: str
) -> None:
    before = table_counts(memory)
    with pytest.raises(ValidationError) as caught:
        call(memory)
    assert caught.value.message.startswith(message), caught.value.message
    assert table_counts(memory) == before


def test_a_window_restricts_before_the_limit(memory: RobotMemory) -> None:
    when = patrol(memory)
    since, until = START + timedelta(hours=30), START + timedelta(hours=33)
    inside = {m for m, t in when.items() if since <= t <= until}
    assert len(inside) == 4
    for query in ("charging dock battery", ""):
        found = memory.recall(query, n=10, since=stored(since), until=stored(until))["memories"]
        assert {m["id"] for m in found} == inside  # 36 better or newer matches outside never crowd them out
    # Combined with a filter and a spatial sort: still only the window.
    near = memory.recall(
        "dock",
        n=2,
        since=stored(since),
        until=stored(until),
        context_filter={"room": {"$ne": "room-0"}},
        spatial_sort={"field": "spatial.position", "target": [0.0, 6.0, 0.0]},
    )["memories"]
    expected = sorted(
        (m for m in inside if memory.get_memory(m)["context"]["room"] != "room-0"),
        key=lambda m: sum(
            (a - b) ** 2 for a, b in zip(memory.get_memory(m)["spatial"]["position"], [0, 6, 0], strict=True)
        ),
    )[:2]
    assert [m["id"] for m in near] == expected
    # An open side of a window, and epoch seconds.
    late = memory.recall("", n=100, since=(START + timedelta(hours=37)).timestamp())["memories"]
    assert {m["id"] for m in late} == {m for m, t in when.items() if t >= START + timedelta(hours=37)}


def test_a_relative_window_counts_back_from_now(memory: RobotMemory, clock: FakeClock) -> None:
    ages = {"ten minutes": 10, "ninety minutes": 90, "three hours": 180, "two days": 2880}
    ids = {
        name: memory.learn(
            f"the hallway light flickered {name} ago", observed_at=stored(clock.now - timedelta(minutes=age))
        )["memory_id"]
        for name, age in ages.items()
    }

    def window(**bounds: Any) -> set[str]:
        found = memory.recall("hallway light", n=10, **bounds)["memories"]
        return {name for name, i in ids.items() if i in {m["id"] for m in found}}

    assert window(since="-2h") == {"ten minutes", "ninety minutes"}
    assert window(until="-1h") == {"ninety minutes", "three hours", "two days"}
    assert window(since="-2h", until="-30m") == {"ninety minutes"}
    assert window(since="-7d", until="now") == set(ages)
    assert window(since="-1w") == set(ages)
    assert window(since="-1d") == {"ten minutes", "ninety minutes", "three hours"}


def test_order_recent_returns_the_newest_observed_first(memory: RobotMemory) -> None:
    when = patrol(memory, 12)
    newest = sorted(when, key=lambda m: when[m], reverse=True)
    assert [m["id"] for m in memory.recall("", n=5, order="recent")["memories"]] == newest[:5]
    # With a query: the relevant memories, newest first (not the order they were stored in).
    found = memory.recall("charging dock", n=12, order="recent")["memories"]
    assert [m["id"] for m in found] == [m for m in newest if m in {f["id"] for f in found}]
    assert len(found) == 12
    for hit in found:
        assert hit["observed_at"] == stored(when[hit["id"]])


def test_perception_context_is_filterable_and_sortable_and_metadata_keeps_its_place(
    memory: RobotMemory,
) -> None:
    saved = memory.save_perceptions(
        [
            {
                "description": "lidar saw the pallet by the dock",
                "context": {"spatial": {"position": [4.0, 1.0]}, "object": {"id": "pallet-2"}},
                "metadata": {"sensor": "lidar-front"},
            },
            {
                "description": "lidar saw the pallet by the door",
                "context": {"spatial": {"position": [9.0, 9.0]}, "object": {"id": "pallet-2"}},
            },
            {"description": "lidar saw a cart by the door", "context": {"object": {"id": "cart-1"}}},
        ]
    )
    ids = [s["memory_id"] for s in saved]
    found = memory.recall("", n=10, context_filter={"object.id": "pallet-2"})["memories"]
    assert {m["id"] for m in found} == set(ids[:2])
    nearest = memory.recall(
        "pallet", spatial_sort={"field": "spatial.position", "target": [8.0, 8.0]}, n=1, include_data=True
    )["memories"]
    assert nearest[0]["id"] == ids[1]
    first = memory.get_memory(ids[0])
    assert first["metadata"] == {"sensor": "lidar-front"}
    assert first["context"]["source"] == "save_perception"
    with pytest.raises(ValidationError, match=r"^context: "):
        memory.save_perception("lidar saw a pallet", context="[1, 2]")


def test_update_corrects_when_a_memory_happened(memory: RobotMemory) -> None:
    lesson = memory.learn("the ramp is slippery when wet", observed_at="2025-01-01T00:00:00Z")["memory_id"]
    assert memory.recall("ramp", since="2025-06-01T00:00:00Z")["memories"] == []
    memory.update(lesson, "the ramp is slippery when wet or icy", observed_at="2025-07-01T00:00:00Z")
    assert [m["id"] for m in memory.recall("ramp", since="2025-06-01T00:00:00Z")["memories"]] == [lesson]
    memory.update(lesson, "the ramp is slippery when wet, icy or dusty")  # no observed_at: kept
    assert memory.get_memory(lesson)["observed_at"] == "2025-07-01T00:00:00.000000+00:00"
    # A record field filters can name, like created_at.
    found = memory.recall("", context_filter={"observed_at": {"$lt": "2025-08-01"}})["memories"]
    assert [m["id"] for m in found] == [lesson]


def test_export_import_and_sync_carry_observed_at(
    memory: RobotMemory, locate: Callable[[str], Any], settings: Settings, tmp_path: Path
) -> None:
    when = patrol(memory, 6)
    memory.export_memories(tmp_path / "out.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    exported = {r["memory"]["id"]: r["memory"]["observed_at"] for r in lines if "memory" in r}
    assert exported == {m: stored(t) for m, t in when.items()}
    # A file written before event time was recorded: its memories happened when they were stored.
    for record in lines:
        if "memory" in record:
            del record["memory"]["observed_at"]
    (tmp_path / "old.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    with RobotMemory(locate("copy.db"), embed_backend="hash", settings=settings) as copy:
        copy.import_memories(tmp_path / "out.jsonl")
        assert {m: copy.get_memory(m)["observed_at"] for m in when} == exported
        window = copy.recall("", n=10, since=stored(START + timedelta(hours=4)))["memories"]
        assert {m["id"] for m in window} == {m for m, t in when.items() if t >= START + timedelta(hours=4)}
    with RobotMemory(locate("old.db"), embed_backend="hash", settings=settings) as old:
        old.import_memories(tmp_path / "old.jsonl")
        for m in when:
            record = old.get_memory(m)
            assert record["observed_at"] == record["created_at"]
        # A time without a zone is refused as learn refuses it: which moment it names depends on the machine.
        lines[-1]["memory"]["observed_at"] = "2026-03-02T08:00:00"
        (tmp_path / "naive.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
        counts = table_counts(old)
        with pytest.raises(ValidationError, match=r"memory.observed_at: '2026-03-02T08:00:00' has no zone"):
            old.import_memories(tmp_path / "naive.jsonl")
        assert table_counts(old) == counts
    with RobotMemory(locate("fleet.db"), embed_backend="hash", settings=settings) as fleet:
        memory.sync(location_text(fleet))
        assert {m["uid"]: m["observed_at"] for m in fleet.recall("", n=10)["memories"]} == {
            memory.get_memory(m)["uid"]: stored(t) for m, t in when.items()
        }


def location_text(mem: RobotMemory) -> str:
    from tests.conftest import location_of

    return str(location_of(mem))


def test_check_reports_and_repair_fixes_an_observed_at_written_behind_robotmems_back(
    memory: RobotMemory,
) -> None:
    readable = memory.learn("the lift door closes slowly")["memory_id"]
    garbage = memory.learn("the lift button sticks")["memory_id"]
    statements = [
        f"UPDATE memories SET observed_at = '2025-05-05T10:00:00+02:00' WHERE id = {readable}",
        f"UPDATE memories SET observed_at = 'last spring' WHERE id = {garbage}",
    ]
    raw_sql(memory, sqlite=statements, postgres=statements)
    report = memory.integrity_report()
    assert report["problems"]["times_invalid"] == 2
    assert report["examples"]["times_invalid"] == [readable, garbage]
    repaired = memory.repair()
    assert repaired["repaired"]["times_normalised"] == 2 and repaired["repaired"]["times_replaced"] == 1
    assert memory.get_memory(readable)["observed_at"] == "2025-05-05T08:00:00.000000+00:00"
    assert memory.get_memory(garbage)["observed_at"] == memory.get_memory(garbage)["created_at"]
    assert memory.integrity_report()["ok"]


def test_windows_agree_with_and_without_the_in_process_copies(
    locate: Callable[[str], Any], settings: Settings
) -> None:
    """The recall mirror answers a window from its own column of times; the database compares the stored
    text. They agree, also once a time not in the stored form (written by another program) is present."""
    location = locate("windows.db")
    with RobotMemory(location, embed_backend="hash", settings=settings) as mem:
        when = patrol(mem, 30)
    windows = [
        {"since": stored(START + timedelta(hours=10))},
        {"until": stored(START + timedelta(hours=4, minutes=30))},
        {"since": stored(START + timedelta(hours=12)), "until": stored(START + timedelta(hours=20))},
        {"since": stored(START + timedelta(hours=12)), "query": "dock battery", "order": "recent"},
    ]

    def answers() -> list[list[int]]:
        found = []
        for mirrored in (True, False):
            with RobotMemory(
                location, embed_backend="hash", settings=settings.replace(recall_mirror=mirrored)
            ) as mem:
                found.append(
                    [
                        [m["id"] for m in mem.recall(**{"query": "", "n": 50, **w})["memories"]]
                        for w in windows
                    ]
                )
        assert found[0] == found[1]
        return found[0]

    first = answers()
    assert sorted(first[0]) == sorted(m for m, t in when.items() if t >= START + timedelta(hours=10))
    odd = next(iter(when))
    statements = [f"UPDATE memories SET observed_at = '2025-12-01T14:00:00+02:00' WHERE id = {odd}"]
    with RobotMemory(location, embed_backend="hash", settings=settings) as mem:
        raw_sql(mem, sqlite=statements, postgres=statements)
    answers()


@pytest.mark.parametrize("mirrored", [True, False])
def test_a_time_order_with_a_query_gives_the_newest_memories_holding_its_words(
    locate: Callable[[str], Any], settings: Settings, mirrored: bool
) -> None:
    """Ordered by time, a query asks for the newest (or first stored) memories holding its words, not for
    the newest of the best ranked: here ten times as many hold them as each channel's depth, and the oldest
    rank first."""
    shallow = settings.replace(candidate_depth=3, recall_mirror=mirrored)
    when: dict[int, datetime] = {}
    mugs: set[int] = set()
    with RobotMemory(locate("orders.db"), embed_backend="hash", settings=shallow) as mem:
        for k in sorted(range(60), key=lambda i: (i * 7) % 60):  # stored in a shuffled order
            moment = START + timedelta(hours=k)
            if k % 3 == 2:
                text = f"patrol {k}: the charging dock is clear"
            elif k < 12:
                text = f"patrol {k}: the mug, the red mug, a mug on shelf {k}"  # ranks first
            else:
                text = f"patrol {k}: a red mug on shelf {k}"
            found = mem.save_perception(
                text, context={"spatial": {"position": [float(k % 4), 0.0, 0.0]}}, observed_at=stored(moment)
            )
            when[int(found["memory_id"])] = moment
            if "mug" in text:
                mugs.add(int(found["memory_id"]))
        newest = sorted(mugs, key=lambda m: when[m], reverse=True)
        got = [m["id"] for m in mem.recall("mug", n=5, order="recent")["memories"]]
        assert got == newest[:5]
        first_stored = sorted(mugs)[:5]  # stored one after another: created_at follows the id
        assert [m["id"] for m in mem.recall("mug", n=5, order="time")["memories"]] == first_stored
        since, until = START + timedelta(hours=20), START + timedelta(hours=40)
        region = {"field": "spatial.position", "center": [1.0, 0.0, 0.0], "radius": 1.0}  # x 0, 1 or 2

        def hour(m: int) -> int:
            return int((when[m] - START).total_seconds()) // 3600

        near = [m for m in newest if since <= when[m] <= until and hour(m) % 4 != 3]
        found = mem.recall(
            "mug", n=4, order="recent", since=stored(since), until=stored(until), region=region
        )["memories"]
        assert [m["id"] for m in found] == near[:4] and len(near) > 4


@pytest.mark.parametrize(
    "moment", ["2500-01-01T00:00:00.000001Z", "9999-06-01T00:00:00.000001Z", "0005-01-01T00:00:00.000001Z"]
)
def test_a_window_is_exact_to_the_microsecond_in_every_year(
    locate: Callable[[str], Any], settings: Settings, recall_mirror: bool, moment: str
) -> None:
    """Both recall sources bound ``observed_at`` to the microsecond, far from now as near it (the mirror
    once held epoch microseconds in a float64, which rounds them beyond 2255)."""
    chosen = settings.replace(recall_mirror=recall_mirror)
    with RobotMemory(locate("far.db"), embed_backend="hash", settings=chosen) as memory:
        seen = memory.learn("a calibration run far from now", observed_at=moment)["memory_id"]
        memory.learn("another run a microsecond later", observed_at=moment[:-2] + "2Z")

        def found(**window: Any) -> list[int]:
            return [int(m["id"]) for m in memory.recall("", n=10, min_confidence=0.0, **window)["memories"]]

        assert found(since=moment, until=moment) == [seen]
        assert seen not in found(until=moment[:-2] + "0Z")
        assert seen not in found(since=moment[:-2] + "2Z")
        assert found(since=moment, order="recent")[-1] == seen


@pytest.mark.parametrize("frame", [None, 5, "", "   ", ["map"]])
def test_a_frame_that_names_no_frame_is_refused_when_written(memory: RobotMemory, frame: Any) -> None:
    """A position in a frame no region or sort can name would be in no frame, while ``last_seen`` reported
    it in the default one: such a frame is refused on every write, naming the field, and nothing is stored."""
    kept = memory.learn("the dock stands by the east wall", context={"spatial": {"position": [1, 2]}})
    before = table_counts(memory)
    bad = {"spatial": {"position": [0.0, 0.0, 0.0], "frame": frame}, "object": {"id": "tb-1"}}
    for call in (
        lambda: memory.learn("a turtlebot parked at the origin", context=bad),
        lambda: memory.save_perception("a turtlebot seen at the origin", context=bad),
        lambda: memory.update(kept["memory_id"], "the dock stands by the west wall", context=bad),
        lambda: memory.start_session(context={"spatial": {"frame": frame}}),  # its memories inherit it
    ):
        with pytest.raises(ValidationError, match=r"context\.spatial\.frame"):
            call()
    items = [
        {"description": f"a turtlebot seen, frame {k}", "context": bad if k == 1 else {}} for k in range(3)
    ]
    with pytest.raises(ValidationError, match=r"items\[1\]\.context\.spatial\.frame"):
        memory.save_perceptions(items)
    assert table_counts(memory) == before
