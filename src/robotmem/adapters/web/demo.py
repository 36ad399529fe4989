"""A demo database for the web UI: ``python -m robotmem.adapters.web.demo --db PATH [--port 7878]``.

Fills an empty database with a week of push-and-grasp episodes (parameters, positions, outcomes,
perceptions, failures and lessons, English and Chinese), then serves it like ``robotmem web``.
An existing non-empty database is served unchanged.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

from robotmem import RobotMemError, RobotMemory
from robotmem.adapters.web import serve
from robotmem.config import load_settings


class _StepClock:
    """A clock the seeder moves forward, so episodes spread over past days."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


def seed_demo(memory: RobotMemory, clock: _StepClock, episodes: int = 12) -> None:
    """Write ``episodes`` episodes of a simulated arm into ``memory``, advancing ``clock``."""
    rng = random.Random(7)
    for episode in range(1, episodes + 1):
        force = round(rng.uniform(8.0, 16.0), 1)
        success = abs(force - 12.5) < 2.2
        position = [round(rng.uniform(0.8, 1.6), 3), round(rng.uniform(0.3, 1.0), 3), 0.42]
        session = memory.start_session(
            context={"robot": {"id": "arm-01", "type": "UR5"}, "task": {"name": "push_to_target"}}
        )["session_id"]
        clock.now += timedelta(minutes=3)
        memory.learn(
            f"Episode {episode}: grip_force={force}N, {'success' if success else 'failed'}, "
            f"{rng.randint(20, 60)} steps",
            context={
                "params": {"grip_force": {"value": force, "unit": "N", "type": "scalar"}},
                "spatial": {"object_position": position, "target_position": [1.25, 0.6, 0.42]},
                "robot": {"id": "arm-01", "type": "UR5", "dof": 6},
                "task": {"name": "push_to_target", "success": success},
                "env": {"sim_or_real": "sim" if episode % 3 else "real"},
            },
        )
        clock.now += timedelta(minutes=2)
        memory.save_perception(
            f"Grasp trajectory of episode {episode}: {'success' if success else 'slip'}",
            perception_type="procedural",
            data={"sampled_actions": [[round(rng.uniform(-1, 1), 3) for _ in range(4)] for _ in range(5)]},
            metadata={"hz": 10, "episode": episode},
        )
        if not success:
            memory.learn(
                f"Episode {episode} failed because grip_force={force}N "
                f"{'crushed' if force > 12.5 else 'could not hold'} the cup",
                context={"task": {"success": False}, "params": {"grip_force": {"value": force, "unit": "N"}}},
            )
        memory.end_session(session, outcome_score=round(0.85 if success else rng.uniform(0.05, 0.4), 2))
        clock.now += timedelta(hours=13)
    memory.learn("never exceed 20 N on glass objects", context={"task": {"name": "grasp"}})
    memory.learn(
        "机械臂抓取玻璃杯时夹持力不能超过20牛",
        context={"robot": {"id": "arm-02"}, "spatial": {"object_position": [1.1, 0.5, 0.42]}},
    )
    memory.save_perception("tactile spike on the left finger during the slip", perception_type="tactile")


def main(argv: Sequence[str] | None = None) -> int:
    """Seed ``--db`` when empty, then serve it; return the exit status."""
    parser = argparse.ArgumentParser(prog="python -m robotmem.adapters.web.demo", description=__doc__)
    parser.add_argument("--db", required=True, help="database file to create or reuse")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=7878)
    parser.add_argument("--embed-backend", dest="embed_backend")
    args = parser.parse_args(argv)
    try:
        clock = _StepClock(datetime.now(timezone.utc) - timedelta(days=7))
        with RobotMemory(
            Path(args.db), embed_backend=args.embed_backend, settings=load_settings(os.environ), clock=clock
        ) as memory:
            if memory.stats()["memories"]["total"] == 0:
                seed_demo(memory, clock)
        serve(host=args.host, port=args.port, db=args.db, embed_backend=args.embed_backend)
    except RobotMemError as exc:
        print(f"Error: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
