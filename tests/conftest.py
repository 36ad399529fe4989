"""Shared fixtures: real SQLite files in a temporary directory, the hashing embedder or the bundled model."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from robotmem import RobotMemory
from robotmem.config import Settings

# ``make test`` runs every property with its full count of examples (the default profile);
# ``make test-fast`` selects this profile, which runs a tenth of each (``tests.strategies.examples``).
hypothesis_settings.register_profile("fast", max_examples=10)


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
def memory(tmp_path: Path, settings: Settings, clock: FakeClock) -> Iterator[RobotMemory]:
    """A RobotMemory on a temporary file with the deterministic hashing embedder."""
    with RobotMemory(tmp_path / "memory.db", embed_backend="hash", settings=settings, clock=clock) as mem:
        yield mem


@pytest.fixture
def bm25_memory(tmp_path: Path, settings: Settings) -> Iterator[RobotMemory]:
    """A RobotMemory with no embedder: BM25 only."""
    with RobotMemory(tmp_path / "bm25.db", embed_backend="none", settings=settings) as mem:
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
def real_memory(tmp_path: Path, settings: Settings, bundled_embedder) -> Iterator[RobotMemory]:  # type: ignore[no-untyped-def]
    """A RobotMemory with the real default model (for search-quality tests)."""
    with RobotMemory(tmp_path / "real.db", settings=settings, embedder=bundled_embedder) as mem:
        yield mem


def table_counts(mem: RobotMemory) -> dict[str, int]:
    """Row counts of every table, to show that a rejected call changed nothing."""
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
