"""Shared fixtures: real stores (a SQLite file in a temporary directory, or a database on a throwaway
PostgreSQL server), the hashing embedder or the bundled model.

The contract suite (``CONTRACT`` below) runs once per engine: a test that asks for a store through the
``memory``/``bm25_memory``/``real_memory``/``locate`` fixtures gets ``[sqlite]`` and ``[postgres]``
variants. ``ROBOTMEM_TEST_ENGINES=sqlite`` runs the SQLite variants alone (no server needed); CI runs
both. A test about SQLite's file itself carries ``@pytest.mark.sqlite_only``. A test that also asks for
``recall_mirror`` runs on SQLite with and without the recall mirror, and once on every other engine.
The helpers at the end reach beneath the service on either engine (row counts, stored vectors, damage
for the checks, another connection holding the write lock).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings

from robotmem import RobotMemory
from robotmem.config import Settings

# ``make test`` runs every property with its full count of examples (the default profile);
# ``make test-fast`` selects this profile, which runs a tenth of each (``tests.strategies.examples``).
hypothesis_settings.register_profile("fast", max_examples=10)


TESTS = Path(__file__).parent
# Directories and files whose stores run on every engine.
CONTRACT = ("service", "reliability", "test_filters.py", "test_surfaces.py", "adapters/test_web_api.py")
ENGINES = tuple(
    name.strip()
    for name in os.environ.get("ROBOTMEM_TEST_ENGINES", "sqlite,postgres").split(",")
    if name.strip()
)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "engine" not in metafunc.fixturenames:
        return
    relative = Path(str(metafunc.definition.path)).relative_to(TESTS)
    contract = relative.parts[0] in CONTRACT or relative.as_posix() in CONTRACT
    engines = [e for e in ENGINES if contract or e == "sqlite"] or ["sqlite"]
    if metafunc.definition.get_closest_marker("sqlite_only") is not None:
        engines = ["sqlite"]
    if "recall_mirror" not in metafunc.fixturenames:
        metafunc.parametrize("engine", engines)
        return
    # SQLite recalls through its mirror or through SQL; the other engines have one source.
    cases = [
        (engine, mirror)
        for engine in engines
        for mirror in ((True, False) if engine == "sqlite" else (False,))
    ]
    metafunc.parametrize(
        ("engine", "recall_mirror"),
        cases,
        ids=[engine if engine != "sqlite" else f"sqlite-{'mirror' if m else 'sql'}" for engine, m in cases],
    )


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Any]:
    """A PostgreSQL cluster with pgvector for the whole run."""
    from tests.postgres_server import PostgresServer

    server = PostgresServer()
    yield server
    server.stop()


@pytest.fixture
def locate(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[[str], Any]]:
    """Return a function giving a new store location of the test's engine (``name`` names the SQLite file).

    Every call gives a new, empty store: a name asked for again gets a numbered file, as every call on a
    server gets a new database.
    """
    made: list[str] = []
    files: set[Path] = set()

    def location(name: str = "memory.db") -> Any:
        if engine == "sqlite":
            path, number = tmp_path / name, 1
            while path in files or path.exists():
                number += 1
                path = tmp_path / f"{Path(name).stem}-{number}{Path(name).suffix}"
            files.add(path)
            return path
        dsn = str(request.getfixturevalue("postgres_server").create())
        made.append(dsn)
        return dsn

    yield location
    if made:
        server = request.getfixturevalue("postgres_server")
        for dsn in made:
            server.drop(dsn)


class FakeClock:
    """A clock tests move by hand."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def memory(locate: Callable[[str], Any], settings: Settings, clock: FakeClock) -> Iterator[RobotMemory]:
    """A RobotMemory on a new store with the deterministic hashing embedder."""
    with RobotMemory(locate("memory.db"), embed_backend="hash", settings=settings, clock=clock) as mem:
        yield mem


@pytest.fixture
def bm25_memory(locate: Callable[[str], Any], settings: Settings) -> Iterator[RobotMemory]:
    """A RobotMemory with no embedder: BM25 only."""
    with RobotMemory(locate("bm25.db"), embed_backend="none", settings=settings) as mem:
        yield mem


@pytest.fixture(scope="session")
def bundled_embedder():  # type: ignore[no-untyped-def]
    """The default bundled model, loaded once per test run."""
    from robotmem.embedders.bundled import BundledEmbedder

    embedder = BundledEmbedder()
    if not embedder.available:
        pytest.fail(f"the bundled model must load offline: {embedder.status}")
    return embedder


@pytest.fixture
def real_memory(locate: Callable[[str], Any], settings: Settings, bundled_embedder) -> Iterator[RobotMemory]:  # type: ignore[no-untyped-def]
    """A RobotMemory with the real default model (for search-quality tests)."""
    with RobotMemory(locate("real.db"), settings=settings, embedder=bundled_embedder) as mem:
        yield mem


def table_counts(mem: RobotMemory) -> dict[str, int]:
    """Row counts of every table, to show that a rejected call changed nothing."""
    if mem.location.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(mem.engine.store.dsn) as conn:  # type: ignore[attr-defined]
            names = [
                str(r[0])
                for r in conn.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
                )
            ]
            return {name: int(conn.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0]) for name in names}
    import sqlite3

    conn = sqlite3.connect(mem.path)
    try:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'memories_fts_%'"
            )
        ]
        return {name: conn.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0] for name in names}
    finally:
        conn.close()


def stored_vector(mem: RobotMemory, memory_id: int) -> Any:
    """The vector the store holds for ``memory_id`` (float32 array), read through the export rows."""
    import numpy as np

    records = mem.engine.read(lambda tx: list(tx.transfer.iter_memories(None, with_vectors=True)))
    blob = next(r["vector"] for r in records if r["memory"]["id"] == memory_id)
    return None if blob is None else np.frombuffer(blob, dtype="<f4")


# ---- engine-neutral access for tests that look beneath the service ---------------------------------


def is_server(location: Any) -> bool:
    """True when ``location`` names a PostgreSQL database rather than a SQLite file."""
    return str(location).startswith(("postgresql://", "postgres://"))


def location_of(mem: RobotMemory) -> Any:
    """Where ``mem``'s store is, to open it again: the SQLite path, or the server address (with credentials)."""
    dsn = getattr(mem.engine.store, "dsn", None)
    return dsn if dsn is not None else mem.path


def read_store(location: Any, work: Callable[[Any], Any]) -> Any:
    """Run the read ``work(tx)`` on the store at ``location`` (either engine), opened just for it."""
    from robotmem.store import open_store

    if is_server(location):
        settings = Settings().replace(database_url=str(location))
    else:
        settings = Settings(home=Path(location).parent).replace(
            db_path=Path(location), database_url="", recall_mirror=False
        )
    store = open_store(settings, lambda: "2026-01-01T00:00:00.000000+00:00")
    try:
        return store.read(work)
    finally:
        store.close()


def without_vector(location: Any) -> int:
    """Active memories without a vector (on SQLite counted through the partial index ``idx_mem_no_embed``)."""
    return int(read_store(location, lambda tx: tx.jobs.count_without_vector()))


def vector_rows(location: Any) -> list[tuple[int, str, int]]:
    """``(memory_id, model_id, bytes)`` of every stored vector, whatever model made it."""
    if is_server(location):
        import psycopg

        with psycopg.connect(str(location)) as conn:
            return [
                (int(r[0]), str(r[1]), 4 * int(r[2]))
                for r in conn.execute(
                    "SELECT id, embedding_model, vector_dims(embedding) FROM memories "
                    "WHERE embedding IS NOT NULL ORDER BY id"
                )
            ]
    import sqlite3

    conn = sqlite3.connect(location)
    try:
        return [
            (r[0], r[1], len(r[2]))
            for r in conn.execute(
                "SELECT memory_id, model_id, embedding FROM memory_vectors WHERE embedding IS NOT NULL"
            )
        ]
    finally:
        conn.close()


def has_tables(location: Any) -> bool:
    """True when a store exists at ``location`` (a SQLite file, or tables in the database)."""
    if not is_server(location):
        return Path(location).exists()
    import psycopg

    with psycopg.connect(str(location)) as conn:
        row = conn.execute(
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchone()
        return bool(row and row[0])


def raw_sql(mem: RobotMemory, *, sqlite: Sequence[str], postgres: Sequence[str]) -> None:
    """Run statements behind robotmem's back (damage for the checks to find), foreign keys off."""
    location = location_of(mem)
    if is_server(location):
        import psycopg

        with psycopg.connect(str(location), autocommit=True) as conn:
            # As the cluster's superuser: skip the foreign-key triggers, as SQLite's foreign_keys = OFF does.
            conn.execute("SET session_replication_role = replica")
            for statement in postgres:
                conn.execute(statement)  # type: ignore[arg-type]
        return
    import sqlite3

    conn = sqlite3.connect(location, isolation_level=None)
    try:
        conn.execute("PRAGMA foreign_keys = OFF")
        for statement in sqlite:
            conn.execute(statement)
    finally:
        conn.close()


def rewrite_context(mem: RobotMemory, memory_id: int, context: dict[str, Any]) -> None:
    """Give a memory a context robotmem would refuse now (another program's, or one written before a rule),
    behind its back but with the store's triggers running, as another writer's statement would."""
    text = json.dumps(context, ensure_ascii=False)
    location = location_of(mem)
    if is_server(location):
        import psycopg

        with psycopg.connect(str(location), autocommit=True) as conn:
            conn.execute(
                "UPDATE memories SET context = %s::jsonb, context_text = %s WHERE id = %s",
                (text, text, memory_id),
            )
        return
    import sqlite3

    conn = sqlite3.connect(location, isolation_level=None)
    try:
        conn.execute("UPDATE memories SET context = ? WHERE id = ?", (text, memory_id))
    finally:
        conn.close()


def query_rows(mem: RobotMemory, *, sqlite: str, postgres: str) -> list[tuple[Any, ...]]:
    """The rows of one read query in the engine's own SQL, for tests that compare what is stored."""
    location = location_of(mem)
    if is_server(location):
        import psycopg

        with psycopg.connect(str(location)) as conn:
            return [tuple(r) for r in conn.execute(postgres)]  # type: ignore[arg-type]
    import sqlite3

    conn = sqlite3.connect(location)
    try:
        return conn.execute(sqlite).fetchall()
    finally:
        conn.close()


@contextlib.contextmanager
def write_lock_held(mem: RobotMemory) -> Iterator[None]:
    """Hold the store's write lock from another connection, as another process writing would."""
    location = location_of(mem)
    if is_server(location):
        import psycopg

        from robotmem.store.postgres.connection import WRITE_LOCK

        with psycopg.connect(str(location), autocommit=True) as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (WRITE_LOCK,))
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (WRITE_LOCK,))
        return
    import sqlite3

    blocker = sqlite3.connect(location, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        yield
        blocker.execute("ROLLBACK")
    finally:
        blocker.close()
