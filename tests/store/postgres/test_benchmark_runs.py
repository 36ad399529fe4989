"""`make bench-postgres` still runs: its build and measurement at a few hundred memories, both settings;
and the patrol benchmark stores into and asks a PostgreSQL database.

The benchmark drives the store's own insert path and the service's session summary directly; a change
there must not leave the benchmark broken until someone spends half an hour building a million rows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from benchmarks import postgres as bench


@pytest.mark.slow
def test_the_postgres_benchmark_builds_and_measures(
    postgres_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "CACHE", tmp_path)
    facts = bench.build(postgres_server, 300, log=lambda line: None)
    assert facts["n"] == 300 and facts["db_bytes"] > 0
    for mirror in (False, True):
        result = bench.measure_postgres(postgres_server, 300, repeat=2, mirror=mirror)
        timings = result["timings"]
        assert set(bench.ROWS) <= set(timings)
        assert all(timings[row]["p50"] > 0 for row in bench.ROWS)
        assert result["selective_filter_short_results"] == 0
        assert result["selective_filter_rows"] > 0
    assert "PostgreSQL" in bench.table([("PostgreSQL 300", result)])
    postgres_server.drop(postgres_server.dsn(facts["database"]))


@pytest.mark.slow
def test_the_patrol_benchmark_stores_into_the_server_and_asks_it_again(
    postgres_server: Any, tmp_path: Path
) -> None:
    """``--robotmem-server`` stores the log in that database (no SQLite file), and ``--reuse`` asks the
    filled database again without storing, with the same answers."""
    from benchmarks import patrol_robotmem
    from benchmarks.patrol_data import generate
    from benchmarks.patrol_queries import make_queries

    from robotmem.embedders.hashing import HashingEmbedder

    log = generate(200, seed=3)
    queries = [q for q in make_queries(log) if q["kind"] in ("last_seen_id", "region_window", "around")][:12]
    names = {o.object_id for o in log.tracked if o.object_id} | {o.label for o in log.tracked}
    passages = sorted(set(log.texts) | names)
    asked = sorted({q["args"]["text"] for q in queries if q["args"].get("text")})
    hashing = HashingEmbedder(384)
    vectors = {
        "passage_texts": np.array(passages),
        "passage_vectors": hashing.embed_batch(passages),
        "query_texts": np.array(asked, dtype=str),
        "query_vectors": hashing.embed_batch(asked, is_query=True) if asked else np.zeros((0, 384)),
    }
    dsn = postgres_server.create()
    try:
        first = patrol_robotmem.run(log, queries, vectors, tmp_path, 1, server=dsn)
        assert first["engine"] == "postgresql" and first["build_s"] > 0
        assert not list(tmp_path.glob("patrol.db*"))  # nothing went to a SQLite file
        with psycopg.connect(dsn) as conn:
            row = conn.execute("SELECT count(*) FROM memories WHERE collection = 'patrol'").fetchone()
        assert row is not None and row[0] == len(
            json.loads((tmp_path / f"server-rows-{len(log)}.json").read_text())
        )
        again = patrol_robotmem.run(log, queries, vectors, tmp_path, 1, server=dsn, reuse=True)
        assert "build_s" not in again and again["answers"] == first["answers"]
        with psycopg.connect(dsn) as conn:
            assert conn.execute("SELECT count(*) FROM memories").fetchone() == row  # not stored twice
    finally:
        postgres_server.drop(dsn)


@pytest.mark.slow
def test_the_ingest_benchmark_stores_the_log_on_both_engines(postgres_server: Any, tmp_path: Path) -> None:
    """``benchmarks/ingest.py`` stores the first records of a patrol log into a SQLite file and a
    PostgreSQL database and counts the same memories and calls on both."""
    from benchmarks import ingest
    from benchmarks.patrol_data import generate

    log = ingest.first(generate(300, seed=3), 250)
    assert len(log) == 250
    on_sqlite = ingest.store(tmp_path / "ingest.db", log, None, tmp_path / "sqlite.prof")
    dsn = postgres_server.create()
    try:
        on_postgres = ingest.store(dsn, log, None, None)
    finally:
        postgres_server.drop(dsn)
    for result in (on_sqlite, on_postgres):
        assert result["records"] == 250 and result["records_per_s"] > 0
        assert result["calls"]["learn"] == int((log.kinds[:250] == 1).sum())
    assert on_sqlite["memories"] == on_postgres["memories"] == 250
    assert on_sqlite["calls"] == on_postgres["calls"]
    assert (tmp_path / "sqlite.prof").stat().st_size > 0
