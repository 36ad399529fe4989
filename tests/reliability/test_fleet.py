"""A fleet store under load (a SQLite file, or a PostgreSQL database): four robot processes write 1,000
memories each into it, and two SQLite robots syncing with it while the others still write lose nothing
and converge."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.service.test_sync import snapshot, sync_until_quiet

from robotmem import RobotMemory
from robotmem.config import Settings

# Spawns processes or servers; left out of `make test-fast`.
pytestmark = pytest.mark.slow

WRITERS = 4
PER_WRITER = 1000
WORKER = """
import sys
from robotmem import RobotMemory
robot, path, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
created = 0
with RobotMemory(path) as mem:
    for i in range(count):
        result = mem.learn(f"{robot} episode {i}: reward={i * 7 + 1} after {i % 50 + 10} steps")
        created += result["status"] == "created"
print(created)
"""


def test_four_robot_processes_into_one_fleet_store_lose_nothing(
    tmp_path: Path, locate: Callable[[str], Any]
) -> None:
    fleet = locate("fleet.db")
    env_base = {**os.environ, "ROBOTMEM_HOME": str(tmp_path / "home"), "ROBOTMEM_EMBED_BACKEND": "hash"}
    RobotMemory(fleet, settings=Settings(home=tmp_path / "home"), embed_backend="hash").close()
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, f"robot-{k}", str(fleet), str(PER_WRITER)],
            env={**env_base, "ROBOTMEM_ROBOT_ID": f"robot-{k}"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(WRITERS)
    ]
    base = Settings(home=tmp_path / "home")
    a = RobotMemory(tmp_path / "a.db", embed_backend="hash", settings=base.replace(robot_id="arm-a"))
    b = RobotMemory(tmp_path / "b.db", embed_backend="hash", settings=base.replace(robot_id="arm-b"))
    try:
        for i in range(20):
            a.learn(f"arm-a trial {i}: grip_force={i}.5N")
            b.learn(f"arm-b trial {i}: approach speed {i}.25 m/s")
        a.sync(fleet)  # while the four writers are still writing
        for proc in writers:
            out, err = proc.communicate(timeout=900)
            assert proc.returncode == 0, err
            assert int(out.strip()) == PER_WRITER
        sync_until_quiet(fleet, a, b)
        total = WRITERS * PER_WRITER + 40
        for mem in (a, b):
            assert mem.recall("", n=100, min_confidence=0.0, robots="robot-3")["total"] == 100
            found = mem.recall("episode 999 reward", n=100, min_confidence=0.0)
            assert {m["robot_id"] for m in found["memories"] if "episode 999:" in m["content"]} == {
                f"robot-{k}" for k in range(WRITERS)
            }
        views = [snapshot(mem, tmp_path / f"{i}.jsonl") for i, mem in enumerate((a, b))]
        with RobotMemory(fleet, embed_backend="hash", settings=base) as hub:
            views.append(snapshot(hub, tmp_path / "fleet.jsonl"))
            assert hub.integrity_report()["ok"]
        assert views[0] == views[1] == views[2]
        assert len(views[0]["memories"]) == total
        per_robot: dict[str, int] = {}
        for record in views[0]["memories"].values():
            robot = record["memory"]["robot_id"]
            per_robot[robot] = per_robot.get(robot, 0) + 1
        assert per_robot == {**{f"robot-{k}": PER_WRITER for k in range(WRITERS)}, "arm-a": 20, "arm-b": 20}
        again = a.sync(fleet)
        assert again["pulled"]["memories"] == {
            "created": 0,
            "updated": 0,
            "unchanged": 0,
            "kept": 0,
            "refused": 0,
        }
        assert again["pushed"]["memories"]["created"] == again["pushed"]["memories"]["updated"] == 0
    finally:
        a.close()
        b.close()
