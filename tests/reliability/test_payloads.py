"""Large perception payloads live in ``perception_payloads`` and do not slow recall of small memories."""

from __future__ import annotations

import sqlite3
import statistics
import time
from pathlib import Path

from robotmem import RobotMemory
from robotmem.config import Settings


def _median_recall_ms(mem: RobotMemory, repeats: int = 15) -> float:
    timings = []
    for i in range(repeats):
        started = time.perf_counter()
        mem.recall(f"grip force trial {i}", n=10)
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


def test_payloads_are_stored_apart_and_only_returned_on_request(tmp_path: Path) -> None:
    with RobotMemory(tmp_path / "m.db", embed_backend="hash", settings=Settings(home=tmp_path)) as mem:
        saved = mem.save_perception("wrist camera trajectory", data={"frames": list(range(1000))})
        conn = sqlite3.connect(mem.path)
        row = conn.execute("SELECT context FROM memories WHERE id = ?", (saved["memory_id"],)).fetchone()
        assert "frames" not in row[0]
        assert conn.execute("SELECT COUNT(*) FROM perception_payloads").fetchone()[0] == 1
        conn.close()
        plain = mem.recall("wrist camera trajectory")["memories"][0]
        assert plain.get("data") is None
        full = mem.recall("wrist camera trajectory", include_data=True)["memories"][0]
        assert full["data"] == {"frames": list(range(1000))}


def test_large_payloads_do_not_slow_recall_of_small_memories(tmp_path: Path) -> None:
    with RobotMemory(tmp_path / "m.db", embed_backend="hash", settings=Settings(home=tmp_path)) as mem:
        for i in range(200):
            mem.learn(f"trial {i}: grip_force={i / 10:.1f}N on the oak shelf")
        baseline = _median_recall_ms(mem)
        for i in range(24):  # 24 × 2 MiB of trajectory data
            mem.save_perception(
                f"grip force trajectory {i}", perception_type="procedural", data="x" * (2 << 20)
            )
        loaded = _median_recall_ms(mem)
        assert mem.path.stat().st_size > 40 << 20
    # Generous bound: the machine may be busy; a payload read per recall would cost far more.
    assert loaded < 3 * baseline + 20, (baseline, loaded)
