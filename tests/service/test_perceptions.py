"""RobotMemory.save_perceptions: a batch stored like single calls, all or nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import FakeClock, query_rows, table_counts

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.errors import ValidationError


def _items(count: int) -> list[dict[str, object]]:
    return [
        {
            "description": f"Force sample {i}: fz={i / 10:.1f} N",
            "perception_type": "tactile",
            "data": {"fz": [i]},
        }
        for i in range(count)
    ]


def test_save_perceptions_stores_every_item_in_order(memory: RobotMemory) -> None:
    results = memory.save_perceptions(_items(3))

    assert [r["perception_type"] for r in results] == ["tactile"] * 3
    assert all(r["has_embedding"] for r in results)
    ids = [r["memory_id"] for r in results]
    assert ids == sorted(ids)
    detail = memory.get_memory(ids[1])
    assert detail["content"] == "Force sample 1: fz=0.1 N"
    assert detail["data"] == {"fz": [1]}


def test_save_perceptions_matches_single_calls(memory: RobotMemory) -> None:
    single = memory.save_perception(description="Camera frame: mug at 0.4 m", collection="arm")
    batch = memory.save_perceptions([{"description": "Camera frame: mug at 0.4 m", "collection": "arm"}])[0]

    assert {k: v for k, v in single.items() if k != "memory_id"} == {
        k: v for k, v in batch.items() if k != "memory_id"
    }
    found = memory.recall("camera frame mug", collection="arm")
    assert {m["id"] for m in found["memories"]} == {single["memory_id"], batch["memory_id"]}


def test_save_perceptions_join_the_current_session(memory: RobotMemory) -> None:
    session = memory.start_session()
    memory.save_perceptions(_items(4))

    ended = memory.end_session(session["session_id"])
    assert ended["summary"]["memory_count"] == 4


def test_an_invalid_item_names_its_position_and_writes_nothing(memory: RobotMemory) -> None:
    memory.save_perceptions(_items(1))
    before = table_counts(memory)
    items = _items(3)
    items[2] = {"description": "tiny"}

    with pytest.raises(ValidationError, match=r"items\[2\]\.description"):
        memory.save_perceptions(items)
    assert table_counts(memory) == before


def test_an_unknown_field_is_a_validation_error(memory: RobotMemory) -> None:
    with pytest.raises(ValidationError, match=r"items\[0\]\.colour: unknown field"):
        memory.save_perceptions([{"description": "Camera frame 1", "colour": "red"}])


def test_an_empty_batch_stores_nothing(bm25_memory: RobotMemory) -> None:
    assert bm25_memory.save_perceptions([]) == []


def _stored(mem: RobotMemory) -> dict[str, list[tuple[object, ...]]]:
    """Every row a perception writes, with its text index and vector, in the engine's own tables."""
    return {
        "memories": query_rows(
            mem,
            sqlite="SELECT id, collection, type, content, category, confidence, base_confidence, context, "
            "scope_files, scope_entities, session_id IS NOT NULL, perception_type, status, embedding_model, "
            "created_at, updated_at FROM memories ORDER BY id",
            postgres="SELECT id, collection, type, content, category, confidence, base_confidence, "
            "context::text, scope_files, scope_entities, session_id IS NOT NULL, perception_type, status, "
            "embedding_model, created_at, updated_at FROM memories ORDER BY id",
        ),
        "tags": query_rows(
            mem,
            sqlite="SELECT rowid, memory_id, tag, source FROM memory_tags ORDER BY rowid",
            postgres="SELECT position, memory_id, tag, source FROM memory_tags ORDER BY position",
        ),
        "fts": query_rows(
            mem,
            sqlite="SELECT rowid, body FROM memories_fts ORDER BY rowid",
            postgres="SELECT memory_id, terms::text, term_count FROM memory_terms ORDER BY memory_id",
        ),
        "fts_statistics": query_rows(
            mem,
            sqlite="SELECT 1",
            postgres="SELECT (SELECT string_agg(term || ':' || docs, ' ' ORDER BY term) FROM fts_terms), "
            "docs, tokens FROM fts_totals",
        ),
        "payloads": query_rows(
            mem,
            sqlite="SELECT * FROM perception_payloads ORDER BY memory_id",
            postgres="SELECT * FROM perception_payloads ORDER BY memory_id",
        ),
        "vectors": query_rows(
            mem,
            sqlite="SELECT memory_id, seq, model_id, embedding FROM memory_vectors ORDER BY seq",
            postgres="SELECT id, embedding_model, embedding::text FROM memories "
            "WHERE embedding IS NOT NULL ORDER BY id",
        ),
    }


def test_a_batch_stores_exactly_what_a_loop_of_save_perception_stores(
    tmp_path: Path, locate: Callable[[str], Any], clock: FakeClock
) -> None:
    items: list[dict[str, object]] = [
        {"description": "Camera frame 3: the mug was grasped, it worked", "data": '{"pixels": [1, 2]}'},
        {"description": "Lidar scan of the corridor", "perception_type": "visual", "metadata": {"hz": 10}},
        {"description": "Force sample: fz=4.5 N because the cup slipped", "perception_type": "tactile"},
        {"description": "相机画面：夹爪抓取杯子成功", "collection": "arm", "data": "raw text, not JSON"},
        {"description": "Camera frame 3: the mug was grasped, it worked", "data": [[1, 2], {"a": None}]},
    ]
    stored = []
    for batched in (False, True):
        settings = Settings(home=tmp_path / "home")
        with RobotMemory(
            locate(f"{batched}.db"), embed_backend="hash", settings=settings, clock=clock
        ) as mem:
            mem.learn("grip_force=12 N held the mug")
            session = mem.start_session()
            session_items = [
                *items,
                {"description": "Wrist camera in the session", "session_id": session["session_id"]},
            ]
            if batched:
                results = mem.save_perceptions(session_items)
            else:
                results = [mem.save_perception(**item) for item in session_items]  # type: ignore[arg-type]
            stored.append((results, _stored(mem)))

    assert stored[0] == stored[1]
