"""Large perception payloads live in ``perception_payloads`` and do not slow recall of small memories."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import is_server, location_of, query_rows, table_counts

from robotmem import RobotMemory
from robotmem.config import Settings


def _median_recall_ms(mem: RobotMemory, repeats: int = 15) -> float:
    timings = []
    for i in range(repeats):
        started = time.perf_counter()
        mem.recall(f"grip force trial {i}", n=10)
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


def test_payloads_are_stored_apart_and_only_returned_on_request(
    tmp_path: Path, locate: Callable[[str], Any]
) -> None:
    with RobotMemory(locate("m.db"), embed_backend="hash", settings=Settings(home=tmp_path)) as mem:
        saved = mem.save_perception("wrist camera trajectory", data={"frames": list(range(1000))})
        stored = mem.engine.read(lambda tx: tx.memories.get(saved["memory_id"]))
        assert "frames" not in json.dumps(stored.context)
        assert table_counts(mem)["perception_payloads"] == 1
        plain = mem.recall("wrist camera trajectory")["memories"][0]
        assert plain.get("data") is None
        full = mem.recall("wrist camera trajectory", include_data=True)["memories"][0]
        assert full["data"] == {"frames": list(range(1000))}


def stored_bytes(mem: RobotMemory) -> int:
    """What the store holds on disk: the SQLite file, or the payload bytes on the server (which compresses
    what it keeps, so its files say less)."""
    location = location_of(mem)
    if not is_server(location):
        return Path(location).stat().st_size
    sql = "SELECT COALESCE(SUM(octet_length(data)), 0) FROM perception_payloads"
    return int(query_rows(mem, sqlite=sql, postgres=sql)[0][0])


def test_large_payloads_do_not_slow_recall_of_small_memories(
    tmp_path: Path, locate: Callable[[str], Any]
) -> None:
    with RobotMemory(locate("m.db"), embed_backend="hash", settings=Settings(home=tmp_path)) as mem:
        for i in range(200):
            mem.learn(f"trial {i}: grip_force={i / 10:.1f}N on the oak shelf")
        baseline = _median_recall_ms(mem)
        for i in range(24):  # 24 × 2 MiB of trajectory data
            mem.save_perception(
                f"grip force trajectory {i}", perception_type="procedural", data="x" * (2 << 20)
            )
        loaded = _median_recall_ms(mem)
        assert stored_bytes(mem) > 40 << 20
    # Generous bound: the machine may be busy; a payload read per recall would cost far more.
    assert loaded < 3 * baseline + 20, (baseline, loaded)
