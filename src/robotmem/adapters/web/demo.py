"""A demo database for the web UI: ``python -m robotmem.adapters.web.demo --db PATH [--port 7878]``.

Fills an empty database with a week of grasp episodes of three arms (parameters with units,
positions, outcomes, trajectories and tactile readings, failures and lessons, English and Chinese)
and a mobile base's patrol sightings of objects (ids and labels, some moved, in the frames ``map`` and
``odom``), then serves it like ``robotmem web``. ``--episodes 1900`` gives about 10,000 memories. An existing
non-empty database is served unchanged.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from robotmem import RobotMemError, RobotMemory
from robotmem.adapters.web import serve
from robotmem.config import load_settings


class _StepClock:
    """A clock the seeder moves forward, so episodes spread over past days."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


ROBOTS = (("arm-01", "UR5"), ("arm-02", "UR5"), ("arm-03", "Franka"))
TASKS = ("push_to_target", "pick_cup", "stack_blocks")
# Objects a patrolling base sees: (id or None, label, frame, where it stands in turn over the days).
PATROL = (
    ("mug-1", "red mug", "map", ([3.0, 2.5, 0.9], [5.5, 3.0, 0.9])),
    ("pallet-1", "pallet", "map", ([7.0, -1.0, 0.0], [8.0, 1.5, 0.0], [6.5, 2.5, 0.0])),
    ("dock-1", "charging dock", "map", ([0.0, -1.5, 0.0],)),
    ("cup-2", "红色杯子", "map", ([4.2, -0.8, 0.9], [4.6, 0.4, 0.9])),
    (None, "traffic cone", "map", ([6.0, 4.0, 0.0],)),
    (None, "traffic cone", "map", ([2.0, 4.5, 0.0],)),
    ("box-7", "parcel box", "odom", ([1.0, 0.0, 0.2], [1.6, 0.3, 0.2])),
    ("cart-2", "tool cart", "odom", ([-0.5, 1.2, 0.0],)),
)


def _trial(rng: random.Random, robot: str, task: str) -> tuple[dict[str, Any], bool, float, float]:
    """One attempt: its context, whether it worked, the grip force and the approach speed."""
    force = round(rng.uniform(6.0, 18.0), 1)
    speed = round(rng.uniform(0.05, 0.45), 3)
    # Grasps hold best near 12.5 N and fail more often when the arm comes in fast.
    chance = math.exp(-(((force - 12.5) / 2.6) ** 2)) * (1.05 - speed)
    success = rng.random() < chance
    position = [
        round(rng.gauss(1.2, 0.22), 3),
        round(rng.gauss(0.6, 0.14), 3),
        round(0.42 + rng.gauss(0, 0.01), 3),
    ]
    params: dict[str, Any] = {
        "grip_force": {"value": force, "unit": "N", "type": "scalar"},
        "approach_speed": {"value": speed, "unit": "m/s"},
    }
    if task == "pick_cup":
        params["object_mass"] = {"value": round(rng.uniform(0.1, 0.6), 2), "unit": "kg"}
    context = {
        "params": params,
        "spatial": {"object_position": position, "target_position": [1.25, 0.6, 0.42]},
        "robot": {"id": robot},
        "task": {"name": task, "success": success},
        "env": {"sim_or_real": "real" if rng.random() < 0.3 else "sim"},
    }
    return context, success, force, speed


def _episode(memory: RobotMemory, clock: _StepClock, rng: random.Random, number: int) -> None:
    robot, model = ROBOTS[number % len(ROBOTS)]
    task = TASKS[rng.randrange(len(TASKS))]
    session = memory.start_session(context={"robot": {"id": robot, "type": model}, "task": {"name": task}})[
        "session_id"
    ]
    results = []
    for attempt in range(1, rng.randint(1, 4) + 1):
        clock.now += timedelta(seconds=rng.randint(20, 90))
        context, success, force, speed = _trial(rng, robot, task)
        results.append(success)
        memory.learn(
            f"Episode {number} attempt {attempt}: grip_force={force}N approach_speed={speed}m/s, "
            f"{'success' if success else 'failed'}, {rng.randint(20, 60)} steps",
            context=context,
            session_id=session,
        )
        clock.now += timedelta(seconds=rng.randint(5, 30))
        memory.save_perception(
            f"Grasp trajectory of episode {number} attempt {attempt}: {'success' if success else 'slip'}",
            perception_type="procedural",
            data={"sampled_actions": [[round(rng.uniform(-1, 1), 3) for _ in range(4)] for _ in range(5)]},
            metadata={"hz": 10, "episode": number, "attempt": attempt},
            session_id=session,
        )
        if not success and rng.random() < 0.3:
            memory.save_perception(
                f"Tactile spike on the left finger, episode {number} attempt {attempt}",
                perception_type="tactile",
                data={"pressure_kpa": [round(rng.uniform(5, 60), 1) for _ in range(8)]},
                session_id=session,
            )
    if not all(results) and rng.random() < 0.2:
        memory.learn(
            f"Episode {number} failed because the cup slipped at {rng.randint(2, 9)} cm from the edge",
            session_id=session,
        )
    clock.now += timedelta(seconds=rng.randint(10, 60))
    rate = sum(results) / len(results)
    # A fifth of the episodes end without a score: their outcome comes from their judged memories.
    score = None if rng.random() < 0.2 else round(min(1.0, max(0.0, rate + rng.uniform(-0.1, 0.1))), 2)
    memory.end_session(session, outcome_score=score)


def _patrol(memory: RobotMemory, clock: _StepClock, start: datetime, days: float) -> None:
    """Twelve sightings of each ``PATROL`` object over ``days`` from ``start``, with 3 cm of noise; an object
    with several places stands at each in turn. Each is observed a minute before it is stored."""
    rng = random.Random(29)
    for object_id, label, frame, places in PATROL:
        for sighting in range(12):
            at = start + timedelta(days=days) * (sighting + rng.random()) / 12
            place = places[sighting * len(places) // 12]
            position = [round(v + rng.gauss(0, 0.03), 3) for v in place[:2]] + place[2:]
            named = {"label": label} if object_id is None else {"id": object_id, "label": label}
            clock.now = at + timedelta(minutes=1)
            memory.save_perception(
                f"patrol camera saw the {label} ({frame})",
                context={"object": named, "spatial": {"position": position, "frame": frame}},
                observed_at=at.timestamp(),
            )


def seed_demo(memory: RobotMemory, clock: _StepClock, episodes: int = 300, days: float = 7.0) -> None:
    """Write ``episodes`` episodes of three simulated arms spread over ``days`` into ``memory``.

    Each episode has one to four grasp attempts (a fact with grip force, approach speed, positions and
    ``task.success``, and a trajectory), tactile readings on some slips, now and then a lesson, and an
    outcome score (none for a fifth of them). About 5.6 memories per episode. Then a patrol's object
    sightings (``_patrol``, 96 memories).
    """
    rng = random.Random(7)
    gap = timedelta(days=days) / max(episodes, 1)
    start = clock.now
    for number in range(1, episodes + 1):
        clock.now = start + gap * (number - 1)
        _episode(memory, clock, rng, number)
    _patrol(memory, clock, start, days)
    clock.now = start + timedelta(days=days)
    memory.learn("never exceed 20 N on glass objects", context={"task": {"name": "grasp"}})
    memory.learn(
        "机械臂抓取玻璃杯时夹持力不能超过20牛",
        context={
            "robot": {"id": "arm-02"},
            "spatial": {"object_position": [1.1, 0.5, 0.42], "charging_dock": [0.0, -1.5, 0.0]},
            "params": {"grip_force": {"value": 20, "unit": "N"}},
            "task": {"name": "pick_cup", "success": False},
        },
    )
    for number, dock in enumerate(([0.0, -1.5, 0.0], [0.02, -1.49, 0.0], [3.5, 2.0, 0.0]), start=1):
        memory.learn(f"charging dock {number} seen at the wall", context={"spatial": {"charging_dock": dock}})
    memory.save_perception("tactile spike on the left finger during the slip", perception_type="tactile")


def main(argv: Sequence[str] | None = None) -> int:
    """Seed ``--db`` when empty, then serve it; return the exit status."""
    parser = argparse.ArgumentParser(prog="python -m robotmem.adapters.web.demo", description=__doc__)
    parser.add_argument("--db", required=True, help="database file to create or reuse")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=7878)
    parser.add_argument("--embed-backend", dest="embed_backend")
    parser.add_argument("--episodes", type=int, default=300, help="episodes to write (about 5 memories each)")
    parser.add_argument("--days", type=float, default=7.0, help="days the episodes spread over, ending now")
    parser.add_argument("--no-serve", action="store_true", help="fill the database and exit")
    args = parser.parse_args(argv)
    try:
        clock = _StepClock(datetime.now(timezone.utc) - timedelta(days=args.days))
        with RobotMemory(
            Path(args.db), embed_backend=args.embed_backend, settings=load_settings(os.environ), clock=clock
        ) as memory:
            if memory.stats()["memories"]["total"] == 0:
                seed_demo(memory, clock, args.episodes, args.days)
        if args.no_serve:
            return 0
        serve(host=args.host, port=args.port, db=args.db, embed_backend=args.embed_backend)
    except RobotMemError as exc:
        print(f"Error: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
