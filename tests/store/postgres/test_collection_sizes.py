"""``collection_sizes`` (schema v2) counts every collection's memories, whatever writes them, and a
store made by schema v1 gains correct counts when it is opened."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.store.postgres import regions, schema


def _sizes(dsn: str) -> tuple[dict[str, int], dict[str, int]]:
    """(the kept counts, the counts of the rows themselves)."""
    with psycopg.connect(dsn) as conn:
        kept = {str(c): int(n) for c, n in conn.execute("SELECT collection, memories FROM collection_sizes")}
        real = {
            str(c): int(n)
            for c, n in conn.execute("SELECT collection, count(*) FROM memories GROUP BY collection")
        }
    return {c: n for c, n in kept.items() if n}, real


def test_every_write_keeps_the_counts(postgres_server: Any, tmp_path: Path) -> None:
    dsn = postgres_server.create()
    other = postgres_server.create()
    try:
        with RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path)) as mem:
            ids = [
                mem.learn(f"lesson {i}: the gripper needs {i} N on cup {i}")["memory_id"] for i in range(12)
            ]
            mem.learn("a lesson of the arm team about joint 3 limits", collection="arm")
            session = mem.start_session(collection="arm")["session_id"]
            mem.save_perceptions(
                [
                    {
                        "description": f"tactile reading {k} of the pad",
                        "perception_type": "tactile",
                        "collection": "arm",
                    }
                    for k in range(5)
                ]
            )
            mem.end_session(session, outcome_score=0.5)
            mem.forget(ids[0], "wrong")
            export = tmp_path / "all.jsonl"
            mem.export_memories(export)
            assert _sizes(dsn)[0] == _sizes(dsn)[1] == {"default": 12, "arm": 6}
        with RobotMemory(other, embed_backend="none", settings=Settings(home=tmp_path)) as copy:
            copy.import_memories(export)
            copy.learn("one more lesson about the conveyor speed", collection="belt")
        kept, real = _sizes(other)
        assert kept == real == {"default": 12, "arm": 6, "belt": 1}
        with psycopg.connect(other) as conn:  # a memory moved or deleted by hand is counted too
            conn.execute("UPDATE memories SET collection = 'belt' WHERE id = (SELECT min(id) FROM memories)")
            conn.execute("DELETE FROM memories WHERE collection = 'arm'")
        kept, real = _sizes(other)
        assert kept == real == {"default": 11, "belt": 2}
    finally:
        postgres_server.drop(dsn)
        postgres_server.drop(other)


def test_a_version_1_store_is_counted_when_opened(postgres_server: Any, tmp_path: Path) -> None:
    dsn = postgres_server.create()
    try:
        with RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path)) as mem:
            for i in range(7):
                mem.learn(f"lesson {i} about the welding torch angle {i * 5} degrees", collection=f"c{i % 2}")
        with psycopg.connect(dsn) as conn:  # back to what version 1 left
            for statement in schema.OBJECT_IDS_DROP:  # the index of object ids
                conn.execute(statement)
            for statement in regions.DROP:  # version 5
                conn.execute(statement)
            conn.execute("ALTER TABLE memories DROP COLUMN observed_at CASCADE")  # version 4
            conn.execute("DROP TABLE context_value_counts")  # version 3
            conn.execute("DROP FUNCTION rm_count_value_rows CASCADE")
            conn.execute("DROP TABLE collection_sizes")
            conn.execute(
                "DROP FUNCTION rm_count_moved_memory, rm_count_memory_rows, rm_count_collection CASCADE"
            )
            conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
        with RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path)) as mem:
            mem.learn("a lesson after the upgrade about torch speed", collection="c0")
            assert (
                int(
                    mem.engine.read(
                        lambda tx: tx.conn.execute(
                            "SELECT value FROM meta WHERE key = 'schema_version'"
                        ).fetchone()[0]
                    )
                )
                == schema.SCHEMA_VERSION
            )
        kept, real = _sizes(dsn)
        assert kept == real == {"c0": 5, "c1": 3}
    finally:
        postgres_server.drop(dsn)
