"""Fixtures and helpers of the service tests."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.embedders.hashing import HashingEmbedder


@pytest.fixture
def hash64(tmp_path: Path, settings: Settings) -> Iterator[RobotMemory]:
    """A RobotMemory with a 64-dimension hashing embedder, so vectors are stored and compared."""
    with RobotMemory(tmp_path / "source.db", settings=settings, embedder=HashingEmbedder(dim=64)) as mem:
        yield mem


def without_vector(path: Path) -> int:
    """Active memories without a vector, counted through the partial index ``idx_mem_no_embed``."""
    conn = sqlite3.connect(path)
    try:
        return int(
            conn.execute(
                "SELECT COUNT(*) FROM memories INDEXED BY idx_mem_no_embed "
                "WHERE embedding_model IS NULL AND status = 'active'"
            ).fetchone()[0]
        )
    finally:
        conn.close()


def vector_rows(path: Path) -> list[tuple[int, str, int]]:
    """``(memory_id, model_id, bytes)`` of every live vector."""
    conn = sqlite3.connect(path)
    try:
        return [
            (r[0], r[1], len(r[2]))
            for r in conn.execute(
                "SELECT memory_id, model_id, embedding FROM memory_vectors WHERE embedding IS NOT NULL"
            )
        ]
    finally:
        conn.close()
