"""``context_value_counts`` (schema v3) counts the carriers of every context value of every collection,
whatever writes ``context_values``, and a store made by schema v2 gains correct counts when opened."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.store.postgres import regions, schema


def _counts(dsn: str) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """(the kept counts, the counts of the index rows themselves)."""
    with psycopg.connect(dsn) as conn:
        kept = {
            (str(c), str(v)): int(n)
            for c, v, n in conn.execute("SELECT collection, value, memories FROM context_value_counts")
        }
        real = {
            (str(c), str(v)): int(n)
            for c, v, n in conn.execute(
                "SELECT collection, value, count(*) FROM context_values GROUP BY collection, value"
            )
        }
    return kept, real


def _learn(mem: RobotMemory, i: int, collection: str = "default") -> int:
    return int(
        mem.learn(
            f"grasp {i}: the {['mug', 'tennis ball', 'sponge'][i % 3]} needed {i} N",
            context={"object": ["mug", "tennis ball", "sponge"][i % 3], "robot": {"id": f"arm-{i % 2}"}},
            collection=collection,
        )["memory_id"]
    )


def test_every_writer_keeps_the_counts(postgres_server: Any, tmp_path: Path) -> None:
    dsn = postgres_server.create()
    other = postgres_server.create()
    try:
        with RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path)) as mem:
            ids = [_learn(mem, i, "default" if i % 4 else "arm") for i in range(30)]
            mem.forget(ids[1], "wrong")  # a forgotten memory still carries its values
            mem.update(
                ids[2], "grasp 2: the sponge needed 9 N", context={"object": "sponge", "site": "lab 3"}
            )
            kept, real = _counts(dsn)
            assert kept == real and kept[("default", "mug")] > 0 and kept[("default", "lab 3")] == 1
            export = tmp_path / "all.jsonl"
            mem.export_memories(export)
        with RobotMemory(other, embed_backend="none", settings=Settings(home=tmp_path)) as copy:
            copy.import_memories(export)
        kept, real = _counts(other)
        assert kept == real == _counts(dsn)[1]
        with psycopg.connect(
            other
        ) as conn:  # by hand: a moved memory, a deleted one (cascading), a whole wipe
            conn.execute(
                "UPDATE context_values SET collection = 'arm' WHERE memory_id = (SELECT min(id) FROM memories)"
            )
            conn.execute("DELETE FROM memories WHERE id = (SELECT max(id) FROM memories)")
        kept, real = _counts(other)
        assert kept == real
        with RobotMemory(other, embed_backend="none", settings=Settings(home=tmp_path)) as copy:
            copy.repair()  # rebuilds context_values from the contexts
        kept, real = _counts(other)
        assert kept == real and ("default", "lab 3") in kept
        with psycopg.connect(other) as conn:
            conn.execute("DELETE FROM memories")
        assert _counts(other) == ({}, {})
    finally:
        postgres_server.drop(dsn)
        postgres_server.drop(other)


def test_a_version_2_store_is_counted_when_opened(postgres_server: Any, tmp_path: Path) -> None:
    dsn = postgres_server.create()
    try:
        with RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path)) as mem:
            for i in range(9):
                _learn(mem, i)
        with psycopg.connect(dsn) as conn:  # back to what version 2 left
            for statement in schema.OBJECT_IDS_DROP:  # the index of object ids
                conn.execute(statement)
            conn.execute("ALTER TABLE memories DROP COLUMN observed_at CASCADE")  # version 4
            conn.execute("DROP TABLE context_value_counts")
            conn.execute("DROP FUNCTION rm_count_value_rows CASCADE")
            for statement in regions.DROP:  # and the later spatial index
                conn.execute(statement)
            conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
        with RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path)) as mem:
            _learn(mem, 9)
            found = mem.recall("tennis ball grasp", n=3)
            assert found["memories"], "the recall weighs the named value by its count"
            version = mem.engine.read(
                lambda tx: tx.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            )
            assert int(version[0]) == schema.SCHEMA_VERSION
        kept, real = _counts(dsn)
        assert kept == real and kept[("default", "tennis ball")] == 3
    finally:
        postgres_server.drop(dsn)
