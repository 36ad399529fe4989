"""PostgreSQL schema version 4: ``observed_at`` added to a store of version 3, filled, indexed and logged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.store.postgres import regions, schema


def _v3_store(dsn: str, tmp_path: Path) -> list[str]:
    """A store as version 3 left it, holding three memories; returns their ``created_at``."""
    with RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path)) as mem:
        for i in range(3):
            mem.learn(f"shelf {i} holds the spare batteries", collection="depot")
    with psycopg.connect(dsn) as conn:
        for statement in schema.OBJECT_IDS_DROP:  # the index of object ids
            conn.execute(statement)
        for statement in regions.DROP:  # the later spatial index
            conn.execute(statement)
        conn.execute(
            "ALTER TABLE memories DROP COLUMN observed_at CASCADE"
        )  # its index and the trigger go too
        conn.execute(
            "CREATE TRIGGER memories_logged_update AFTER UPDATE OF collection, type, content, human_summary, "
            "content_hash, category, confidence, context, scope_files, scope_entities, session_id, "
            "perception_type, status, superseded_by, merged_ids, invalidated_reason, created_at, updated_at, "
            "uid, robot_id ON memories FOR EACH ROW EXECUTE FUNCTION rm_log_memory()"
        )
        conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
        return [str(r[0]) for r in conn.execute("SELECT created_at FROM memories ORDER BY id")]


def test_a_version_3_store_gains_observed_at_from_created_at(postgres_server: Any, tmp_path: Path) -> None:
    dsn = postgres_server.create()
    try:
        created = _v3_store(dsn, tmp_path)
        with RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path)) as mem:
            found = mem.recall("", collection="depot", n=10, order="recent")["memories"]
            assert [m["observed_at"] for m in found] == created[::-1]
            assert [m["id"] for m in mem.recall("", collection="depot", since=created[1])["memories"]] == [
                3,
                2,
            ]
            mem.update(1, "shelf 0 holds the spare batteries and fuses", observed_at="2030-01-01T00:00:00Z")
            # The corrected time is a logged change: the process's copies see it at once.
            assert mem.recall("", collection="depot", order="recent", n=1)["memories"][0]["id"] == 1
            assert [
                m["id"] for m in mem.recall("", collection="depot", since="2029-01-01T00:00:00Z")["memories"]
            ] == [1]
        with psycopg.connect(dsn) as conn:
            version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            assert version is not None and int(version[0]) == schema.SCHEMA_VERSION
            indexes = {
                str(r[0])
                for r in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'memories'")
            }
            assert "idx_mem_observed" in indexes
    finally:
        postgres_server.drop(dsn)
