"""The PostgreSQL store at 100k and 1M memories, beside the SQLite store at 100k.

The data is ``benchmarks/scale.py``'s generator (four collections, params, positions, sessions of 50,
15 % perceptions), 384-d hashing vectors, loaded through the store's own insert path in batches without
per-call dedup; the HNSW index is built once after the load (its time is reported). Databases are cached
in a cluster under ``benchmarks/.cache/pg`` (or the server of ``--dsn``), and each measurement runs on a
copy (``CREATE DATABASE ... TEMPLATE``), so writes never change the cache.

    python -m benchmarks.postgres --n 100000 --n 1000000 [--repeat 30] [--sqlite 100000]

Timings exclude the query embedding (query vectors are computed before the clock starts), as in
``benchmarks/scale.py``. Every selective-filter recall is checked against a count of the rows that pass
its filter: it must return min(n, count).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
from benchmarks.harness import CACHE, PrecomputedEmbedder, Timing, ensure_cache, measure, write_json
from benchmarks.scale import (
    DIM,
    FILTER_COMMON,
    FILTER_SELECTIVE,
    QUERIES,
    QUERY_COLLECTION,
    SESSION_SIZE,
    SPATIAL,
    _batched_perceptions,
    _fresh_lesson,
    _new_memory,
    generate,
)

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.embedders.hashing import HashingEmbedder
from robotmem.formats.serialize import session_summary

BUILD_VERSION = 3
CLUSTER = CACHE / "pg"
PORT = 55499
# A server sized for the 2-core, 24 GiB benchmark machine; the HNSW build wants its graph in memory.
SERVER_SETTINGS = (
    "-c shared_buffers=4GB -c maintenance_work_mem=6GB -c work_mem=64MB -c effective_cache_size=12GB "
    "-c max_parallel_maintenance_workers=1 -c max_wal_size=8GB -c checkpoint_timeout=30min "
    "-c synchronous_commit=off -c max_connections=100"
)


class Cluster:
    """A PostgreSQL cluster kept between runs in ``benchmarks/.cache/pg`` (as the postgres user when root)."""

    def __init__(self) -> None:
        from tests.postgres_server import USER, binaries

        self.bin = binaries()
        self.user = USER
        self.data = CLUSTER / "data"
        self._as_postgres = os.geteuid() == 0
        if not (self.data / "PG_VERSION").exists():
            CLUSTER.mkdir(parents=True, exist_ok=True)
            self._chown()
            self._run(
                [
                    str(self.bin / "initdb"),
                    "-D",
                    str(self.data),
                    "-U",
                    USER,
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--locale=C",
                ]
            )
        if self._running():
            return  # left by an interrupted run
        options = f"-p {PORT} -k {CLUSTER} -c listen_addresses=127.0.0.1 {SERVER_SETTINGS}"
        self._run(
            [
                str(self.bin / "pg_ctl"),
                "-D",
                str(self.data),
                "-o",
                options,
                "-l",
                str(CLUSTER / "log"),
                "-w",
                "start",
            ]
        )

    def _running(self) -> bool:
        command = [str(self.bin / "pg_ctl"), "-D", str(self.data), "status"]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, capture_output=True, check=False).returncode == 0

    def _chown(self) -> None:
        if self._as_postgres:
            import pwd

            entry = pwd.getpwnam("postgres")
            for path in (CLUSTER, *CLUSTER.rglob("*")):
                os.chown(path, entry.pw_uid, entry.pw_gid)

    def _run(self, command: list[str]) -> None:
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, text=True)

    def dsn(self, database: str) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{PORT}/{database}"

    def stop(self) -> None:
        self._run([str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "stop"])


def _admin(dsn: str, statement: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(statement)


def _exists(admin_dsn: str, name: str) -> bool:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None


def build(server: Any, n: int, log: Any = print) -> dict[str, Any]:
    """Build (or reuse) the database of ``n`` memories; return its build facts."""
    name = f"bench_{n}_v{BUILD_VERSION}"
    admin = server.dsn("postgres")
    facts_file = CACHE / f"pg-build-{n}-v{BUILD_VERSION}.json"
    if _exists(admin, name) and facts_file.exists():
        return {**json.loads(facts_file.read_text()), "database": name}
    _admin(admin, f"DROP DATABASE IF EXISTS {name}")
    _admin(admin, f"CREATE DATABASE {name}")
    _admin(server.dsn(name), "CREATE EXTENSION vector")
    embedder = HashingEmbedder(DIM)
    settings = Settings(home=CACHE / "home", embed_backend="none")
    start = datetime(2026, 6, 1, tzinfo=timezone.utc)
    started = time.perf_counter()
    with RobotMemory(server.dsn(name), settings=settings) as mem:
        items = list(generate(n))
        batch = 2000
        for offset in range(0, n, batch):
            chunk = items[offset : offset + batch]
            vectors = embedder.embed_batch([item.text for item in chunk])

            def work(tx: Any, chunk: list[Any] = chunk, vectors: Any = vectors, offset: int = offset) -> None:
                news, sessions = [], []
                for k, item in enumerate(chunk):
                    number = offset + k
                    session_id = f"bench-session-{number // SESSION_SIZE:06d}"
                    moment = (start + timedelta(minutes=number * 2)).isoformat(timespec="microseconds")
                    if number % SESSION_SIZE == 0:
                        tx.sessions.create(session_id, item.collection, {"robot_id": "bench"}, moment)
                    news.append(_new_memory(item, session_id, moment))
                    if number % SESSION_SIZE == SESSION_SIZE - 1 or number == n - 1:
                        sessions.append((session_id, round(0.5 + (number % 5) / 10, 2), moment))
                tx.memories.insert_many(news, list(vectors), embedder.model_id)
                for session_id, score, moment in sessions:
                    tx.sessions.end(
                        session_id, score, session_summary(tx.sessions.summarize(session_id)), moment
                    )

            mem.engine.write(work)
            if (offset // batch) % 25 == 0:
                log(f"  loaded {min(offset + batch, n):,}/{n:,} ({time.perf_counter() - started:.0f} s)")
        load_s = time.perf_counter() - started
        # The model (and its HNSW index) is recorded after the load: one index build, not a million inserts.
        index_started = time.perf_counter()
        mem.engine.write(lambda tx: tx.vectors.record_model(embedder.model_id, DIM))
        index_s = time.perf_counter() - index_started
    with psycopg.connect(server.dsn(name), autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        size = int(conn.execute("SELECT pg_database_size(current_database())").fetchone()[0])
        index_size = int(conn.execute("SELECT pg_relation_size('memories_embedding_hnsw')").fetchone()[0])
    facts = {"n": n, "load_s": load_s, "hnsw_build_s": index_s, "db_bytes": size, "hnsw_bytes": index_size}
    facts_file.write_text(json.dumps(facts))
    log(f"  built {n:,} in {load_s:.0f} s + HNSW {index_s:.0f} s, {size / 1e9:.2f} GB")
    return {**facts, "database": name}


def _selective_count(dsn: str) -> int:
    """Rows of the query collection passing ``FILTER_SELECTIVE`` (and recall's defaults)."""
    from robotmem.query.filters import parse_filter
    from robotmem.store.postgres.filters import PgFilter

    builder = PgFilter()
    where = builder.compile(parse_filter(FILTER_SELECTIVE))  # type: ignore[arg-type]
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT count(*) FROM memories m WHERE m.status = 'active' AND m.collection = %(c)s "
            f"AND m.confidence >= 0.3 AND {where}",
            {**builder.params, "c": QUERY_COLLECTION},
        ).fetchone()
    return int(row[0]) if row else 0


def measure_postgres(server: Any, n: int, repeat: int, mirror: bool = True) -> dict[str, Any]:
    """Measure recall, learn and batched perceptions on a copy of the database of ``n`` memories;
    ``mirror`` is the ``recall_mirror`` setting (BM25 from this process's postings, or on the server)."""
    facts = build(server, n, log=lambda line: print(line, file=sys.stderr))
    work_name = f"bench_work_{n}"
    admin = server.dsn("postgres")
    _admin(admin, f"DROP DATABASE IF EXISTS {work_name} WITH (FORCE)")
    copy_started = time.perf_counter()
    _admin(admin, f"CREATE DATABASE {work_name} TEMPLATE {facts['database']}")
    results: dict[str, Any] = {**facts, "copy_s": time.perf_counter() - copy_started, "repeat": repeat}
    dsn = server.dsn(work_name)
    settings = Settings(home=CACHE / "home", embed_backend="hash", embed_dim=DIM, recall_mirror=mirror)
    hashing = PrecomputedEmbedder(HashingEmbedder(DIM))
    hashing.prime(QUERIES, is_query=True)
    lessons = [_fresh_lesson(i) for i in range(500 + repeat * 4)]
    hashing.prime([text for text, _ in lessons])
    timings: list[Timing] = []
    with RobotMemory(dsn, collection=QUERY_COLLECTION, settings=settings, embedder=hashing) as mem:
        load_started = time.perf_counter()
        mem.warm_up()  # the postings' load, once per process (nothing to load without the mirror)
        results["index_load_s"] = time.perf_counter() - load_started
        postings = getattr(mem.engine.store, "postings", None)
        if postings is not None:
            results["postings_bytes"] = postings.stats()["bytes"]

        def query(i: int) -> str:
            return QUERIES[i % len(QUERIES)]

        started = time.perf_counter()
        mem.recall(query(0), context_filter=FILTER_COMMON)  # the first recall of a scope reads its mask
        results["first_filter_recall_s"] = time.perf_counter() - started
        for _ in range(3):  # the server's caches, as on a running fleet server
            mem.recall(query(0), context_filter=FILTER_COMMON)
        timings.append(measure("recall_hybrid", lambda i: mem.recall(query(i)), repeat=repeat))
        timings.append(
            measure(
                "recall_hybrid_filter",
                lambda i: mem.recall(query(i), context_filter=FILTER_COMMON),
                repeat=repeat,
            )
        )
        expected = min(5, _selective_count(dsn))
        short: list[int] = []

        def selective(i: int) -> None:
            found = mem.recall(query(i), context_filter=FILTER_SELECTIVE)["total"]
            if found != expected:
                short.append(found)

        timings.append(measure("recall_hybrid_selective_filter", selective, repeat=repeat))
        results["selective_filter_rows"] = _selective_count(dsn)
        results["selective_filter_short_results"] = len(short)
        timings.append(
            measure(
                "recall_hybrid_spatial",
                lambda i: mem.recall(query(i), context_filter=FILTER_COMMON, spatial_sort=SPATIAL),
                repeat=max(5, repeat // 3),
            )
        )
        counter = iter(range(len(lessons)))
        timings.append(
            measure("learn_precomputed_vector", lambda i: mem.learn(*lessons[next(counter)]), repeat=repeat)
        )
    with RobotMemory(dsn, collection=QUERY_COLLECTION, settings=settings, embed_backend="none") as plain:
        timings.append(
            measure(
                "recall_bm25_only_filter",
                lambda i: plain.recall(query(i), context_filter=FILTER_COMMON),
                repeat=repeat,
            )
        )
        timings.append(_batched_perceptions(plain, "save_perceptions_200_no_embedding", 4_000_000, repeat=3))
    _admin(admin, f"DROP DATABASE IF EXISTS {work_name} WITH (FORCE)")
    results["timings"] = {t.name: t.as_dict() for t in timings}
    for t in timings:
        if t.name.startswith("save_perceptions_200"):
            results[f"{t.name}_per_second"] = 200 / (t.p50 / 1000)
        if t.name == "learn_precomputed_vector":
            results["learn_per_second"] = 1000 / t.p50
    return results


def _sqlite(n: int, repeat: int) -> dict[str, Any]:
    out = CACHE / f"pg-compare-sqlite-{n}.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.scale",
            "measure",
            "--n",
            str(n),
            "--repeat",
            str(repeat),
            "--no-real-model",
            "--out",
            str(out),
        ],
        check=True,
    )
    result: dict[str, Any] = json.loads(out.read_text())
    return result


ROWS = (
    "recall_hybrid",
    "recall_hybrid_filter",
    "recall_hybrid_selective_filter",
    "recall_hybrid_spatial",
    "recall_bm25_only_filter",
    "learn_precomputed_vector",
)


def table(runs: list[tuple[str, dict[str, Any]]]) -> str:
    """Markdown: p50 / p95 ms of each operation per run, then rates and sizes."""
    head = "| measure | " + " | ".join(label for label, _ in runs) + " |"
    lines = [head, "|---" * (len(runs) + 1) + "|"]
    for row in ROWS:
        cells = []
        for _, result in runs:
            timing = result.get("timings", {}).get(row)
            cells.append(f"{timing['p50']:.1f} / {timing['p95']:.1f}" if timing else "—")
        lines.append(f"| {row} p50 / p95 ms | " + " | ".join(cells) + " |")
    extra = (
        (
            "learn per second",
            lambda r: r.get("learn_per_second") or 1000 / r["timings"]["learn_precomputed_vector"]["p50"],
        ),
        (
            "perceptions per second (batches of 200, no embedder)",
            lambda r: r.get("save_perceptions_200_no_embedding_per_second"),
        ),
        ("database size (GB)", lambda r: r.get("db_bytes", 0) / 1e9),
        ("build: load (s)", lambda r: r.get("load_s")),
        ("build: HNSW index (s)", lambda r: r.get("hnsw_build_s")),
        ("postings load in the process (s)", lambda r: r.get("index_load_s")),
        ("first recall with the common filter (s)", lambda r: r.get("first_filter_recall_s")),
        (
            "postings arrays in the process (MB)",
            lambda r: r["postings_bytes"] / 1e6 if "postings_bytes" in r else None,
        ),
        (
            "selective filter: rows passing / short results",
            lambda r: (
                f"{r.get('selective_filter_rows')} / {r.get('selective_filter_short_results')}"
                if "selective_filter_rows" in r
                else None
            ),
        ),
    )
    for label, value in extra:
        cells = []
        for _, result in runs:
            try:
                found = value(result)
            except (KeyError, TypeError, ZeroDivisionError):
                found = None
            cells.append(
                "—" if found is None else (f"{found:,.1f}" if isinstance(found, float) else str(found))
            )
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, action="append", required=True)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument(
        "--sqlite", type=int, action="append", default=[], help="also measure SQLite at this N"
    )
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument(
        "--mirror",
        choices=("on", "off", "both"),
        default="both",
        help="recall_mirror: BM25 from the process's postings (on), on the server (off), or each in turn",
    )
    parser.add_argument("--out", type=Path, default=CACHE / "results" / "postgres.json")
    args = parser.parse_args(argv)
    ensure_cache()
    server = Cluster()
    try:
        if args.build_only:
            for n in args.n:
                build(server, n)
            return 0
        runs: list[tuple[str, dict[str, Any]]] = []
        args.out.parent.mkdir(parents=True, exist_ok=True)
        mirrors = {"on": [True], "off": [False], "both": [False, True]}[args.mirror]
        for n in args.n:
            for mirror in mirrors:
                label = f"PostgreSQL {n:,}" + (
                    "" if len(mirrors) == 1 else f" (mirror {'on' if mirror else 'off'})"
                )
                runs.append((label, measure_postgres(server, n, args.repeat, mirror)))
                write_json(args.out, dict(runs))  # each run as soon as it is measured
        for n in args.sqlite:
            runs.append((f"SQLite {n:,}", _sqlite(n, args.repeat)))
    finally:
        server.stop()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, {label: result for label, result in runs})
    print(table(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
