"""Records/s of storing the patrol log the way the patrol benchmark does, on SQLite and on PostgreSQL.

    python -m benchmarks.ingest --n 10000 [--engines sqlite,postgres] [--vectors PATH] [--dsn DSN]
        [--log PATH] [--profile DIR] [--statements]

Each run stores the first ``--n`` records of a patrol log (``patrol_data``; sightings in
``save_perceptions`` batches of up to 500 between lessons, each lesson through ``learn`` with its dedup
check, exactly ``patrol_robotmem.ingest``) into a fresh SQLite file and a fresh PostgreSQL database, and
prints records/s and the time in each of the two calls. Vectors: the table ``--vectors`` (a
``patrol.py`` ``vectors-N-seed.npz``; texts it lacks get hashing vectors, counted), else 384-d hashing
vectors. PostgreSQL: the server of ``--dsn`` (an empty database is created beside the one it names), else
a throwaway cluster under /tmp with the server's durable defaults (fsync and synchronous commit on),
stopped at the end. ``--profile DIR`` writes a cProfile of each engine's run; ``--statements`` prints
the server's statements by total time (``pg_stat_statements``) after the PostgreSQL run.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from benchmarks.harness import PrecomputedEmbedder
from benchmarks.patrol_data import PatrolLog, generate, load_log
from benchmarks.patrol_robotmem import COLLECTION, ingest

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.embedders.hashing import HashingEmbedder

DIM = 384


class TableEmbedder(PrecomputedEmbedder):
    """A vector table's vectors under the table's model id; hashing vectors for texts it lacks (counted)."""

    def __init__(self, model_id: str) -> None:
        super().__init__(HashingEmbedder(DIM))
        self._model_id = model_id
        self.misses = 0

    @property
    def model_id(self) -> str:
        return self._model_id

    def embed_one(self, text: str, *, is_query: bool = False) -> Any:
        self.misses += (text, is_query) not in self._cache
        return super().embed_one(text, is_query=is_query)

    def embed_batch(self, texts: Any, *, is_query: bool = False) -> Any:
        self.misses += sum((t, is_query) not in self._cache for t in texts)
        return super().embed_batch(texts, is_query=is_query)


def embedder_for(vectors: Path | None) -> Any:
    if vectors is None:
        return HashingEmbedder(DIM)
    table = np.load(vectors)
    embedder = TableEmbedder("intfloat/multilingual-e5-small")
    embedder.load(table["passage_texts"], table["passage_vectors"])
    return embedder


class TimedMemory:
    """A ``RobotMemory`` that adds up the wall time of ``save_perceptions`` and ``learn``."""

    def __init__(self, memory: RobotMemory) -> None:
        self.memory = memory
        self.seconds = {"save_perceptions": 0.0, "learn": 0.0}
        self.calls = {"save_perceptions": 0, "learn": 0}

    def _timed(self, name: str, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        result = getattr(self.memory, name)(*args, **kwargs)
        self.seconds[name] += time.perf_counter() - started
        self.calls[name] += 1
        return result

    def save_perceptions(self, items: Any) -> Any:
        return self._timed("save_perceptions", items)

    def learn(self, *args: Any, **kwargs: Any) -> Any:
        return self._timed("learn", *args, **kwargs)


# The ingest's server: durable commits as a robot's store has them, pg_stat_statements for ``--statements``.
DURABLE = "-c shared_buffers=1GB -c shared_preload_libraries=pg_stat_statements -c max_wal_size=4GB"


@contextlib.contextmanager
def fresh_database(dsn: str | None, keep: bool = False) -> Iterator[str]:
    """An empty database with the vector extension, dropped afterwards (unless ``keep``, on ``dsn``'s server)."""
    from tests.postgres_server import PostgresServer

    cluster = PostgresServer(DURABLE) if dsn is None else None
    admin = cluster.dsn("postgres") if cluster is not None else dsn
    assert admin is not None
    name = f"robotmem_ingest_{os.getpid()}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    target = admin.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(target, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        with contextlib.suppress(psycopg.Error):
            conn.execute("CREATE SCHEMA IF NOT EXISTS server_stats")
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA server_stats")
    try:
        yield target
    finally:
        if keep and cluster is None:
            print(f"kept {target}")
        else:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        if cluster is not None:
            cluster.stop()


def statements(dsn: str, top: int = 25) -> list[dict[str, Any]]:
    """The server's statements in this database by total time."""
    with psycopg.connect(dsn) as conn:
        found = conn.execute(
            "SELECT calls, total_exec_time, rows, left(regexp_replace(query, '\\s+', ' ', 'g'), 160) "
            "FROM server_stats.pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "ORDER BY total_exec_time DESC LIMIT %s",
            (top,),
        ).fetchall()
    return [{"calls": c, "ms": round(t, 1), "rows": r, "query": q} for c, t, r, q in found]


def store(target: Any, log: PatrolLog, vectors: Path | None, profile: Path | None) -> dict[str, Any]:
    """Store ``log`` into ``target`` (a path or a DSN); return the rates."""
    embedder = embedder_for(vectors)
    clock_now = datetime.fromtimestamp(log.end, tz=timezone.utc)
    memory = RobotMemory(
        target, collection=COLLECTION, settings=Settings(), embedder=embedder, clock=lambda: clock_now
    )
    timed = TimedMemory(memory)
    profiler = cProfile.Profile() if profile is not None else None
    started = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    rows = ingest(timed, log)
    if profiler is not None:
        profiler.disable()
    seconds = time.perf_counter() - started
    memory.close()
    if profiler is not None and profile is not None:
        profiler.dump_stats(str(profile))
    return {
        "records": len(log),
        "memories": len(rows),
        "seconds": round(seconds, 2),
        "records_per_s": round(len(log) / seconds, 1),
        "seconds_in": {k: round(v, 2) for k, v in timed.seconds.items()},
        "calls": timed.calls,
        "vector_misses": getattr(embedder, "misses", None),
    }


def first(log: PatrolLog, n: int) -> PatrolLog:
    """The first ``n`` records of ``log`` (the texts and truth shared)."""
    if n >= len(log):
        return log
    cut = PatrolLog.__new__(PatrolLog)
    cut.__dict__.update(log.__dict__)
    for name in ("times", "positions", "frames", "kinds", "objects", "rooms", "text_ids"):
        setattr(cut, name, getattr(log, name)[:n])
    return cut


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=10000, help="records to store")
    parser.add_argument("--engines", default="sqlite,postgres")
    parser.add_argument("--vectors", type=Path, help="a patrol vector table (npz)")
    parser.add_argument("--log", type=Path, help="a saved patrol log (log-N-seed.json.gz); else generated")
    parser.add_argument("--dsn", help="a PostgreSQL server to use instead of a throwaway cluster")
    parser.add_argument("--keep", action="store_true", help="keep the PostgreSQL database (with --dsn)")
    parser.add_argument("--profile", type=Path, help="write cProfile output per engine into this folder")
    parser.add_argument("--statements", action="store_true", help="print pg_stat_statements' top statements")
    args = parser.parse_args()
    log = first(load_log(args.log) if args.log else generate(args.n), args.n)
    print(f"{len(log)} records ({int((log.kinds == 1).sum())} lessons), load {os.getloadavg()}", flush=True)
    results: dict[str, Any] = {}
    for engine in args.engines.split(","):
        profile = None if args.profile is None else args.profile / f"ingest-{engine}.prof"
        if profile is not None:
            profile.parent.mkdir(parents=True, exist_ok=True)
        if engine == "sqlite":
            with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as folder:
                results[engine] = store(Path(folder) / "ingest.db", log, args.vectors, profile)
        else:
            with fresh_database(args.dsn, args.keep) as dsn:
                results[engine] = store(dsn, log, args.vectors, profile)
                if args.statements:
                    results["statements"] = statements(dsn)
        print(engine, json.dumps(results[engine]), flush=True)
    if "statements" in results:
        for row in results["statements"]:
            print(f"{row['calls']:>8} {row['ms']:>10} ms {row['rows']:>8} rows  {row['query']}")
    print(json.dumps({"load": os.getloadavg(), **{k: v for k, v in results.items() if k != "statements"}}))


if __name__ == "__main__":
    sys.exit(main())
