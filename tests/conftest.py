"""Shared fixtures: real stores (a SQLite file in a temporary directory, or a database on a throwaway
PostgreSQL server), the hashing embedder or the bundled model.

The contract suite (``CONTRACT`` below) runs once per engine: a test that asks for a store through the
``memory``/``bm25_memory``/``real_memory``/``locate`` fixtures gets ``[sqlite]`` and ``[postgres]``
variants. ``ROBOTMEM_TEST_ENGINES=sqlite`` runs the SQLite variants alone (no server needed); CI runs
both. A test about SQLite's file itself carries ``@pytest.mark.sqlite_only``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
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
CONTRACT = ("service", "reliability", "test_filters.py", "test_surfaces.py")
ENGINES = tuple(
    name.strip()
    for name in os.environ.get("ROBOTMEM_TEST_ENGINES", "sqlite,postgres").split(",")
    if name.strip()
)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "engine" not in metafunc.fixturenames:
        return
    relative = Path(str(metafunc.definition.path)).relative_to(TESTS)
    contract = relative.parts[0] in CONTRACT
    engines = [e for e in ENGINES if contract or e == "sqlite"] or ["sqlite"]
    if metafunc.definition.get_closest_marker("sqlite_only") is not None:
        engines = ["sqlite"]
    metafunc.parametrize("engine", engines)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Any]:
    """A PostgreSQL cluster with pgvector for the whole run."""
    from tests.postgres_server import PostgresServer

    server = PostgresServer()
    yield server
    server.stop()


@pytest.fixture
def locate(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[[str], Any]]:
    """Return a function giving a new store location of the test's engine (``name`` names the SQLite file)."""
    made: list[str] = []

    def location(name: str = "memory.db") -> Any:
        if engine == "sqlite":
            return tmp_path / name
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
