"""What a memory says of the object it saw, read without its whole record: ``sightings`` and
``objects_of`` and ``objects_named`` of the memory table, alike on both engines (the store contract, asked beneath the service)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import rewrite_context

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.records import Sighting

CONTEXTS = [
    {
        "object": {"id": "mug-3", "label": "red mug"},
        "spatial": {"position": [1.5, 2.0, 0.8], "frame": "odom"},
    },
    {"object": {"label": "红色杯子"}, "spatial": {"position": [0.25, -3]}},
    {"object": {"id": "", "label": "cone"}, "spatial": {"position": "here"}},  # its frame: 7 (below)
    {"object": {"id": 42, "label": ["not", "a", "text"]}},
    {"task": {"name": "patrol"}},
]


def test_sightings_read_the_object_position_frame_and_time(memory: RobotMemory) -> None:
    ids = [
        memory.learn(f"sighting {i}", context=context, observed_at=1_780_000_000 + i)["memory_id"]
        for i, context in enumerate(CONTEXTS)
    ]
    # A frame that is no text, as another program or an older robotmem could write it.
    rewrite_context(memory, ids[2], {**CONTEXTS[2], "spatial": {"position": "here", "frame": 7}})

    found = memory.engine.read(lambda tx: tx.memories.sightings([*ids, 99_999]))

    times = [memory.get_memory(m)["observed_at"] for m in ids]
    assert found == {
        ids[0]: Sighting(ids[0], "mug-3", "red mug", [1.5, 2.0, 0.8], "odom", times[0]),
        ids[1]: Sighting(ids[1], None, "红色杯子", [0.25, -3], "map", times[1]),
        ids[2]: Sighting(ids[2], None, "cone", None, None, times[2]),
        ids[3]: Sighting(ids[3], None, None, None, "map", times[3]),
        ids[4]: Sighting(ids[4], None, None, None, "map", times[4]),
    }
    of = memory.engine.read(lambda tx: tx.memories.objects_of([*ids, ids[0], 99_999]))
    assert of == {m: (s.object_id, s.label) for m, s in found.items()}
    assert memory.engine.read(lambda tx: tx.memories.objects_of([])) == {}
    named = memory.engine.read(lambda tx: tx.memories.objects_named([*ids, ids[0], 99_999]))
    assert named == {("mug-3", None), (None, "红色杯子"), (None, "cone")}
    assert memory.engine.read(lambda tx: tx.memories.objects_named([])) == set()


@pytest.mark.parametrize("mirror", [True, False], ids=["mirror", "sql"])
def test_the_objects_memories_name_follow_every_write(
    locate: Callable[[str], Any], tmp_path: Path, mirror: bool
) -> None:
    """``objects_of`` answers as the rows do after updates, new memories and another writer's changes (on
    SQLite a reading transaction asks the recall mirror's copy, a writing one the rows themselves)."""
    where = locate("names.db")
    settings = Settings(home=tmp_path / "home", recall_mirror=mirror)
    with RobotMemory(where, embed_backend="hash", settings=settings) as memory:
        first = memory.learn("red mug on the shelf", context={"object": {"id": "mug-3", "label": "red mug"}})
        second = memory.learn("cone by the gate", context={"object": {"label": "cone"}})
        ids = [first["memory_id"], second["memory_id"]]

        def names() -> dict[int, tuple[str | None, str | None]]:
            return memory.engine.read(lambda tx: tx.memories.objects_of([*ids, 99_999]))

        assert names() == {ids[0]: ("mug-3", "red mug"), ids[1]: (None, "cone")}
        memory.update(
            ids[1], "an orange cone by the gate", context={"object": {"id": "cone-1", "label": "orange cone"}}
        )
        third = memory.learn("a note without an object", context={"task": {"name": "patrol"}})
        ids.append(third["memory_id"])
        memory.forget(ids[0], "seen wrong")  # a forgotten memory still says what it saw
        assert names() == {
            ids[0]: ("mug-3", "red mug"),
            ids[1]: ("cone-1", "orange cone"),
            ids[2]: (None, None),
        }
        with RobotMemory(where, embed_backend="hash", settings=settings) as other:
            other.update(ids[2], "a pallet in bay four", context={"object": {"label": "pallet"}})
        expected = {ids[0]: ("mug-3", "red mug"), ids[1]: ("cone-1", "orange cone"), ids[2]: (None, "pallet")}
        assert names() == expected
        assert memory.engine.write(lambda tx: tx.memories.objects_of([*ids, 99_999])) == expected
        named = memory.engine.read(lambda tx: tx.memories.objects_named(ids))
        assert named == {("mug-3", None), ("cone-1", None), (None, "pallet")}


def test_an_objects_track_is_its_newest_active_sighting_and_how_many(memory: RobotMemory) -> None:
    """``object_track`` answers from the index of object ids what listing the sightings would: the newest
    active sighting of the id in the collection and window, ties to the later id, and the count."""
    mug = {"object": {"id": "mug-3", "label": "red mug"}}
    numbers = itertools.count()

    def seen(context: dict[str, Any], second: int, collection: str = "default") -> int:
        at, text = 1_780_000_000 + second, f"sighting number {next(numbers)}"  # never a duplicate
        return int(memory.learn(text, context=context, observed_at=at, collection=collection)["memory_id"])

    a, b, c, d = seen(mug, 10), seen(mug, 30), seen(mug, 20), seen(mug, 30)
    forgotten = seen(mug, 40)
    memory.forget(forgotten, "a reflection, not the mug")
    yard = seen(mug, 50, "yard")
    seen({"object": {"id": 3, "label": "mug"}}, 60)  # not a text: not an object id
    seen({"object": {"id": {"value": "mug-3"}}}, 70)
    moved = seen({"object": {"id": "cup-1"}}, 80)
    memory.update(moved, "sighting 80 again", context=mug)  # a rewritten context names the mug now
    time = {m: memory.get_memory(m)["observed_at"] for m in (a, b, c, d, forgotten, moved)}

    def track(
        object_id: str, since: str | None = None, until: str | None = None, collection: str = "default"
    ) -> Any:
        return memory.engine.read(lambda tx: tx.memories.object_track(collection, object_id, since, until))

    assert track("mug-3") == (moved, 5)
    assert track("mug-3", since=time[c], until=time[b]) == (d, 3)  # bounds included; d ties b, later id
    assert track("mug-3", until=time[c]) == (c, 2)
    assert track("mug-3", since=time[forgotten], until=time[forgotten]) is None
    assert track("mug-3", collection="yard") == (yard, 1)
    assert track("cup-1") is None
    assert track("3") is None
    assert track("no such object") is None

    found = memory.last_seen(object_id="mug-3")["objects"]
    assert [(o["memory_id"], o["sightings"]) for o in found] == [(moved, 5)]


def test_a_store_of_the_version_before_indexes_the_object_ids_it_holds(
    locate: Callable[[str], Any], tmp_path: Path
) -> None:
    """Opening a store written before the index of object ids adds it over the sightings already there."""
    from tests.conftest import raw_sql

    where = locate("before.db")
    settings = Settings(home=tmp_path / "home")
    with RobotMemory(where, embed_backend="hash", settings=settings) as memory:
        ids = [
            memory.learn(
                f"red mug seen at {i}", context={"object": {"id": "mug-3"}}, observed_at=1_780_000_000 + i
            )["memory_id"]
            for i in range(3)
        ]
        from robotmem.store.postgres import schema as pg_schema
        from robotmem.store.sqlite import schema as sqlite_schema

        raw_sql(
            memory,
            sqlite=[
                *sqlite_schema.OBJECT_IDS_DROP,
                f"PRAGMA user_version = {sqlite_schema.MIGRATIONS.index(sqlite_schema._migrate_object_ids)}",
            ],
            postgres=[
                *pg_schema.OBJECT_IDS_DROP,
                f"UPDATE meta SET value = '{pg_schema.MIGRATIONS.index(pg_schema._migrate_object_ids)}' WHERE key = 'schema_version'",
            ],
        )
    with RobotMemory(where, embed_backend="hash", settings=settings) as memory:
        assert memory.engine.read(lambda tx: tx.memories.object_track("default", "mug-3", None, None)) == (
            ids[2],
            3,
        )
