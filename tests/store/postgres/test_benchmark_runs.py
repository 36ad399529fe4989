"""`make bench-postgres` still runs: its build and measurement at a few hundred memories, both settings.

The benchmark drives the store's own insert path and the service's session summary directly; a change
there must not leave the benchmark broken until someone spends half an hour building a million rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
