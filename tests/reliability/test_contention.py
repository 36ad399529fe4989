"""Many writers on one file and writers killed mid-write, at sizes that fit the test suite.

The scenarios live in ``benchmarks/soak.py`` (``make bench`` runs them at full size); here they run
smaller. Each returns its figures and a ``passed`` verdict built from the checks listed there. The
scenarios write SQLite files; many processes writing to a PostgreSQL store are in ``test_fleet.py``.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

# Spawns processes or servers; left out of `make test-fast`.
pytestmark = [pytest.mark.slow, pytest.mark.sqlite_only]

SOAK = Path(__file__).resolve().parents[2] / "benchmarks" / "soak.py"


@pytest.fixture(scope="module")
def soak() -> ModuleType:
    spec = importlib.util.spec_from_file_location("robotmem_soak", SOAK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _summary(result: dict[str, Any]) -> str:
    keys = ("expected", "stored", "error_count", "errors", "duplicates", "lost", "integrity_ok", "elapsed_s")
    return str({k: result.get(k) for k in keys})


def test_four_processes_and_a_reader_lose_nothing(soak: ModuleType, tmp_path: Path) -> None:
    result = soak.scenario_processes(tmp_path, writers=4, per_writer=100)
    assert result["passed"], _summary(result)
    assert result["stored"] == 400 and result["error_count"] == 0 and not result["lost"]
    assert result["reader"]["recalls"] > 0


def test_eight_threads_sharing_one_instance_lose_nothing(soak: ModuleType, tmp_path: Path) -> None:
    result = soak.scenario_threads(tmp_path, threads=8, per_thread=40)
    assert result["passed"], _summary(result)
    assert result["stored"] == 320 and result["error_count"] == 0 and not result["lost"]
    assert result["reader"]["recalls"] > 0


def test_writer_killed_at_random_moments_loses_no_acknowledged_write(
    soak: ModuleType, tmp_path: Path
) -> None:
    result = soak.scenario_crash(tmp_path, runs=6)
    assert result["passed"], json.dumps(result["failed_runs"])
    assert result["acknowledged_total"] > 0
