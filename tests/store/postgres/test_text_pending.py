"""PostgreSQL's text index takes new rows at once (no GIN pending list), in a new store and after the
migration of a store that had one; what a search finds is the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.store.postgres import schema


def _options(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT reloptions FROM pg_class WHERE relname = 'idx_memory_terms'").fetchone()
    return list(row[0] or []) if row else []


def _pending_rows(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
        row = conn.execute("SELECT pending_tuples FROM pgstatginindex('idx_memory_terms')").fetchone()
    return int(row[0]) if row else -1


def test_a_new_store_has_no_pending_list(postgres_server: Any, tmp_path: Path) -> None:
    dsn = postgres_server.create()
    try:
        with RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path)):
            pass
        assert _options(dsn) == ["fastupdate=off"]
    finally:
        postgres_server.drop(dsn)


def test_the_migration_turns_the_list_off_and_merges_it(postgres_server: Any, tmp_path: Path) -> None:
    dsn = postgres_server.create()
    try:
        with RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path)):
            pass
        with psycopg.connect(dsn) as conn:  # the list as before the migration: new rows wait in it
            conn.execute("ALTER INDEX idx_memory_terms SET (fastupdate = on)")
        with RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path)) as mem:
            mem.learn("the charger in bay seven is broken", collection="depot")
            mem.save_perceptions(
                [{"description": f"pallet {i} seen at bay seven", "collection": "depot"} for i in range(30)]
            )
        assert _options(dsn) == ["fastupdate=on"]
        assert _pending_rows(dsn) > 0
        with psycopg.connect(dsn) as conn:
            conn.execute(
                "UPDATE meta SET value = %s WHERE key = 'schema_version'",
                (str(schema.MIGRATIONS.index(schema._migrate_terms_without_pending_list)),),
            )
        with RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path)) as mem:
            assert _options(dsn) == ["fastupdate=off"]
            assert _pending_rows(dsn) == 0
            found = mem.recall("broken charger", collection="depot", n=3)["memories"]
            assert [m["content"] for m in found][:1] == ["the charger in bay seven is broken"]
            with psycopg.connect(dsn) as conn:
                count = conn.execute(
                    "SELECT count(*) FROM memory_terms WHERE terms @@ 'seven'::tsquery"
                ).fetchone()
            assert count == (31,)
    finally:
        postgres_server.drop(dsn)
