"""Write the LeRobot v3.0 fixture beside this file with LeRobot's own dataset writer.

Run by hand, never in CI (it needs lerobot and torch, which robotmem does not depend on):

    python3 -m venv /tmp/lerobot-venv
    /tmp/lerobot-venv/bin/pip install torch==2.13.0 && /tmp/lerobot-venv/bin/pip install lerobot
    /tmp/lerobot-venv/bin/python tests/integrations/data/lerobot_push/make_fixture.py

Ten episodes of a planar push: ``observation.state`` is the object's (x, y) and the goal's (x, y),
``action`` a 2-d push, ``next.reward`` the negative distance to the goal and ``next.success`` whether
the object is within 5 cm of it. Two tasks alternate. The draw is seeded, so a rerun writes the same
numbers.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from lerobot.datasets.lerobot_dataset import LeRobotDataset

HERE = Path(__file__).resolve().parent
ROOT = HERE / "dataset"
TASKS = ["push the red block to the green square", "slide the cube onto the marker"]
FEATURES = {
    "observation.state": {"dtype": "float32", "shape": (4,), "names": ["obj_x", "obj_y", "goal_x", "goal_y"]},
    "action": {"dtype": "float32", "shape": (2,), "names": ["dx", "dy"]},
    "next.reward": {"dtype": "float32", "shape": (1,), "names": None},
    "next.success": {"dtype": "bool", "shape": (1,), "names": None},
}


def main() -> None:
    if ROOT.exists():
        shutil.rmtree(ROOT)
    rng = np.random.default_rng(14)
    dataset = LeRobotDataset.create(
        repo_id="robotmem/push_fixture",
        fps=10,
        features=FEATURES,
        root=ROOT,
        robot_type="planar_pusher",
        use_videos=False,
    )
    for episode in range(10):
        obj = rng.uniform(-0.5, 0.5, 2)
        goal = rng.uniform(-0.5, 0.5, 2)
        gain = rng.uniform(0.05, 0.35)  # a weak push may not reach the goal in time
        for _ in range(int(rng.integers(8, 16))):
            push = gain * (goal - obj) + rng.normal(0, 0.01, 2)
            obj = obj + push
            distance = float(np.linalg.norm(goal - obj))
            dataset.add_frame(
                {
                    "observation.state": np.concatenate([obj, goal]).astype(np.float32),
                    "action": push.astype(np.float32),
                    "next.reward": np.array([-distance], dtype=np.float32),
                    "next.success": np.array([distance < 0.05]),
                    "task": TASKS[episode % 2],
                }
            )
        dataset.save_episode()
    dataset.finalize()
    total = sum(f.stat().st_size for f in ROOT.rglob("*") if f.is_file())
    print(f"wrote {ROOT} ({total} bytes)")


if __name__ == "__main__":
    main()
