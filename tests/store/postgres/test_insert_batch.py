"""A batch's rows go to the server in one pipeline on PostgreSQL: a statement that fails in the middle of it
still leaves nothing of the batch written, and the store takes the next batch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.embedders.hashing import HashingEmbedder
from robotmem.errors import DatabaseError

_TABLES = (
    "memories",
    "memory_terms",
    "memory_tags",
    "perception_payloads",
    "context_values",
    "memory_changes",
)


def _counts(dsn: str) -> dict[str, int]:
    with psycopg.connect(dsn) as conn:
        return {t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]) for t in _TABLES}  # type: ignore[index]


def _items(word: str) -> list[dict[str, Any]]:
    return [
        {"description": f"crate {i} {word} on shelf four", "data": {"note": word if i == 1 else "ok"},
         "context": {"spatial": {"position": [1.0, float(i), 0.0]}}}
        for i in range(3)
    ]  # fmt: skip


def test_a_failure_inside_the_pipeline_writes_nothing(postgres_server: Any, tmp_path: Path) -> None:
    dsn = postgres_server.create()
    try:
        settings = Settings(home=tmp_path)
        with RobotMemory(dsn, embedder=HashingEmbedder(64), settings=settings) as mem:
            first = [r["memory_id"] for r in mem.save_perceptions(_items("fine"))]
        with psycopg.connect(dsn) as conn:  # the payload statement, sent after the memories, fails
            conn.execute(
                "CREATE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                "IF NEW.data LIKE '%boom%' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$"
            )
            conn.execute(
                "CREATE TRIGGER refuse_boom BEFORE INSERT ON perception_payloads FOR EACH ROW "
                "EXECUTE FUNCTION refuse_boom()"
            )
        before = _counts(dsn)
        with RobotMemory(dsn, embedder=HashingEmbedder(64), settings=settings) as mem:
            with pytest.raises(DatabaseError, match="refused"):
                mem.save_perceptions(_items("boom"))
            assert _counts(dsn) == before
            after = [r["memory_id"] for r in mem.save_perceptions(_items("later"))]
            assert min(after) > max(first)
            assert mem.get_memory(after[1])["content"] == "crate 1 later on shelf four"
        grown = _counts(dsn)
        assert grown["memories"] == before["memories"] + 3
        assert grown["perception_payloads"] == before["perception_payloads"] + 3
        with psycopg.connect(dsn) as conn:
            vectors = conn.execute("SELECT embedding FROM memories WHERE id = %s", (after[0],)).fetchone()
        expected = HashingEmbedder(64).embed_one("crate 0 later on shelf four")
        assert vectors is not None
        assert np.array_equal(np.array(str(vectors[0]).strip("[]").split(","), dtype=np.float32), expected)
    finally:
        postgres_server.drop(dsn)


def test_the_batch_that_takes_id_1000_gives_the_planner_statistics(
    postgres_server: Any, tmp_path: Path
) -> None:
    dsn = postgres_server.create()

    def analyzed() -> list[tuple[str, float]]:
        with psycopg.connect(dsn) as conn:
            found = conn.execute(
                "SELECT c.relname, c.reltuples FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid "
                "WHERE c.relname IN ('memories', 'memory_terms') AND s.last_analyze IS NOT NULL ORDER BY 1"
            ).fetchall()
        return [(str(name), float(rows)) for name, rows in found]

    try:
        batch = [{"description": f"pallet {i} at dock two"} for i in range(600)]
        with RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path)) as mem:
            mem.save_perceptions(batch)
            assert analyzed() == []
            mem.save_perceptions(batch)
            assert analyzed() == [("memories", 1200.0), ("memory_terms", 1200.0)]
    finally:
        postgres_server.drop(dsn)
