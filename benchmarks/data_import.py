"""Import speed of robot data: episodes per second for a 200-episode bag and the LeRobot fixture.

Writes one bag per format (rosbag2 sqlite3 and MCAP, ROS 1, with the test suite's generator: poses,
goal, joint states, Bool outcome and start/end markers per episode), then imports each into a fresh
database, formats alternating round by round so a busy machine slows them alike. Reports the median
and spread of episodes/s over the rounds (and per CPU second of the process, which a busy machine
changes less), and the same for the LeRobot fixture (ten episodes, so its
rate includes the fixed cost of reading the dataset's metadata).

    .venv/bin/python -m benchmarks.data_import [--episodes 200] [--rounds 5] [--backend none]

Prints one JSON object; exits 1 when a bag format's median stays under ``--target`` episodes/s (100).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.integrations.bags import plan_episodes, write_rosbags

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.integrations.lerobot import import_lerobot
from robotmem.integrations.rosbag import BagMap, Boundaries, PoseTopic, import_bag

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "integrations" / "data" / "lerobot_push" / "dataset"
BAG_MAP = BagMap(
    poses=(PoseTopic("object", "/object_pose"), PoseTopic("goal", "/goal")),
    joints="/joint_states",
    outcome="/outcome",
    robot={"id": "arm-01"},
    task={"name": "push"},
)


def timed_import(work: Path, backend: str, run: Any) -> tuple[float, float, int]:
    """Return wall seconds, CPU seconds of this process, and the episodes imported."""
    db = work / f"bench-{time.monotonic_ns()}.db"
    with RobotMemory(db, embed_backend=backend, settings=Settings(home=work / "home")) as mem:
        started, cpu = time.perf_counter(), time.process_time()
        result = run(mem)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    return elapsed, cpu, int(result["imported"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--backend", default="none", help="embedder (none: BM25 only)")
    parser.add_argument("--target", type=float, default=100.0, help="episodes/s a bag import must reach")
    args = parser.parse_args()
    names = ("sqlite3", "mcap", "ros1", "lerobot fixture")
    rates: dict[str, list[float]] = {name: [] for name in names}
    cpu_rates: dict[str, list[float]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        plans = plan_episodes(args.episodes)
        bags = {s: write_rosbags(work / f"bag_{s}", plans, s) for s in ("sqlite3", "mcap", "ros1")}
        for _ in range(args.rounds):
            for storage, bag in bags.items():
                seconds, cpu, count = timed_import(
                    work,
                    args.backend,
                    lambda mem, b=bag: import_bag(mem, b, BAG_MAP, Boundaries(marker="/episode")),
                )
                assert count == args.episodes, (storage, count)
                rates[storage].append(count / seconds)
                cpu_rates[storage].append(count / cpu)
            seconds, cpu, count = timed_import(work, args.backend, lambda mem: import_lerobot(mem, FIXTURE))
            rates["lerobot fixture"].append(count / seconds)
            cpu_rates["lerobot fixture"].append(count / cpu)
    report = {
        "episodes_per_bag": args.episodes,
        "rounds": args.rounds,
        "backend": args.backend,
        "episodes_per_s": {
            name: {"median": round(statistics.median(r), 1), "min": round(min(r), 1), "max": round(max(r), 1)}
            for name, r in rates.items()
        },
        "episodes_per_cpu_s": {name: round(statistics.median(r), 1) for name, r in cpu_rates.items()},
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(report, indent=2))
    slow = [s for s in ("sqlite3", "mcap", "ros1") if statistics.median(rates[s]) < args.target]
    if slow:
        print(f"below {args.target} episodes/s: {', '.join(slow)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
