"""Tests of the PostgreSQL engine itself: skipped when the run leaves PostgreSQL out (``ROBOTMEM_TEST_ENGINES``)."""

from __future__ import annotations

import pytest
from tests.conftest import ENGINES


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if "postgres" in ENGINES:
        return
    skip = pytest.mark.skip(reason="ROBOTMEM_TEST_ENGINES leaves PostgreSQL out")
    for item in items:
        if "store/postgres/" in str(item.path).replace("\\", "/"):
            item.add_marker(skip)
