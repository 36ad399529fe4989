"""What a memory says of the object it saw, read without its whole record: ``sightings`` and
``objects_of`` and ``objects_named`` of the memory table, alike on both engines (the store contract, asked beneath the service)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.records import Sighting

CONTEXTS = [
    {
        "object": {"id": "mug-3", "label": "red mug"},
        "spatial": {"position": [1.5, 2.0, 0.8], "frame": "odom"},
    },
    {"object": {"label": "红色杯子"}, "spatial": {"position": [0.25, -3]}},
    {"object": {"id": "", "label": "cone"}, "spatial": {"position": "here", "frame": 7}},
    {"object": {"id": 42, "label": ["not", "a", "text"]}},
    {"task": {"name": "patrol"}},
]


def test_sightings_read_the_object_position_frame_and_time(memory: RobotMemory) -> None:
    ids = [
        memory.learn(f"sighting {i}", context=context, observed_at=1_780_000_000 + i)["memory_id"]
        for i, context in enumerate(CONTEXTS)
    ]

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
