"""The PostgreSQL spatial index (``store/postgres/regions.py``): built by its migration from the stored
contexts, kept by its trigger, and asked through the GiST index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.store.postgres import regions, schema


def _positions(dsn: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as conn:
        return [
            tuple(r)
            for r in conn.execute("SELECT memory_id, frame, dims, x, y, z FROM memory_positions ORDER BY 1")
        ]


def test_a_store_of_the_previous_version_gains_the_index(postgres_server: Any, tmp_path: Path) -> None:
    dsn = postgres_server.create()
    try:
        with RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path)) as mem:
            mem.learn("the forklift parks at bay three", context={"spatial": {"position": [7.0, 1.0]}})
            mem.learn(
                "the forklift parks in the yard",
                context={"spatial": {"position": [7, 1, 2], "frame": "yard"}},
            )
            mem.learn("the forklift has no position", context={"spatial": {"position": [7.0, "x"]}})
        with psycopg.connect(dsn) as conn:  # back to the version before the index
            for statement in regions.DROP:
                conn.execute(statement)
            conn.execute(
                "UPDATE meta SET value = %s WHERE key = 'schema_version'", (str(schema.SCHEMA_VERSION - 1),)
            )
        with RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path)) as mem:
            assert _positions(dsn) == [(1, "map", 2, 7.0, 1.0, None), (2, "yard", 3, 7.0, 1.0, 2.0)]
            assert [m["id"] for m in mem.recall("", region={"center": [7, 1], "radius": 0})["memories"]] == [
                1
            ]
            found = mem.recall("", region={"min": [7, 1, 2], "max": [7, 1, 2], "frame": "yard"})["memories"]
            assert [m["id"] for m in found] == [2]
            mem.forget(2, "moved")
        assert [row[0] for row in _positions(dsn)] == [1]
        with psycopg.connect(dsn) as conn:
            conn.execute("SET enable_seqscan = off")  # a table this small is scanned otherwise
            plan = "\n".join(
                str(r[0])
                for r in conn.execute(
                    "EXPLAIN SELECT memory_id FROM memory_positions WHERE box && "
                    "cube(ARRAY[0, 0, 0, 0]::float8[], ARRAY[0, 1, 1, 1]::float8[])"
                )
            )
        assert "idx_memory_positions_box" in plan  # the region's box is an index condition
    finally:
        postgres_server.drop(dsn)
