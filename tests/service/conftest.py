"""Fixtures and helpers of the service tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.embedders.hashing import HashingEmbedder


@pytest.fixture
def hash64(locate: Callable[[str], Any], tmp_path: Path, settings: Settings) -> Iterator[RobotMemory]:
    """A RobotMemory with a 64-dimension hashing embedder, so vectors are stored and compared."""
    with RobotMemory(locate("source.db"), settings=settings, embedder=HashingEmbedder(dim=64)) as mem:
        yield mem
