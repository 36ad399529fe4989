"""A scripted push policy for FetchPush with two parameters that experience can correct.

The policy lifts the gripper, moves it behind the block on the line from the block to the goal,
lowers it to the table and pushes along that line to a fixed stop point. Two parameters decide
where the gripper touches the block and where it stops:

* ``lateral_offset`` (m): sideways shift of the contact point from the block's centre line
  (positive = to the left of the push direction). Off-centre contact turns the block.
* ``stop_offset`` (m): shift of the stop point along the push direction (positive = further).

The nominal stop point is where the gripper's centre reaches the block's rear face with the block
on the goal. That simple model ignores the finger thickness and the block sliding on after the
gripper stops, so the block ends up past the goal by an amount that depends on the push direction
and length. Nothing in the policy corrects that: the correction has to come from experience.

The baseline draws its parameters each episode from a normal distribution around a centre
(``PARAMETER_SCALES`` are the standard deviations): this is the run-to-run variation of a
hand-tuned controller and the exploration that gives stored episodes different parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PARAMETER_NAMES = ("lateral_offset", "stop_offset")
PARAMETER_SCALES = np.array([0.013, 0.03])
"""Standard deviation of the per-episode parameter noise, in metres, per parameter."""

BLOCK_HALF_WIDTH = 0.025
APPROACH_DISTANCE = 0.06
HOVER_HEIGHT = 0.06
PUSH_HEIGHT_BELOW_CENTRE = 0.01
POSITION_GAIN = 2.0
MAX_ACTION = 1.0
ACTION_SCALE = 0.05
"""FetchPush moves the mocap by 0.05 m per unit of action."""


@dataclass(frozen=True)
class PushParameters:
    """The two policy parameters, in metres."""

    lateral_offset: float = 0.0
    stop_offset: float = 0.0

    def as_array(self) -> np.ndarray:
        """Return ``[lateral_offset, stop_offset]``."""
        return np.array([self.lateral_offset, self.stop_offset], dtype=float)

    @classmethod
    def from_array(cls, values: np.ndarray) -> PushParameters:
        """Build parameters from ``[lateral_offset, stop_offset]``."""
        return cls(lateral_offset=float(values[0]), stop_offset=float(values[1]))

    def as_dict(self) -> dict[str, float]:
        """Return the parameters by name, as stored in a memory's ``params`` section."""
        return {"lateral_offset": self.lateral_offset, "stop_offset": self.stop_offset}


class PushPolicy:
    """Closed-form four-stage push controller for one episode.

    Create one per episode with the episode's initial observation and parameters, then call
    ``act`` with every observation.
    """

    def __init__(self, observation: dict[str, np.ndarray], parameters: PushParameters) -> None:
        block = np.asarray(observation["achieved_goal"], dtype=float)
        goal = np.asarray(observation["desired_goal"], dtype=float)
        line = goal[:2] - block[:2]
        length = float(np.linalg.norm(line))
        direction = line / length if length > 1e-6 else np.array([1.0, 0.0])
        left = np.array([-direction[1], direction[0]])
        sideways = left * parameters.lateral_offset
        self.start_xy = block[:2] - direction * APPROACH_DISTANCE + sideways
        stop_distance = BLOCK_HALF_WIDTH - parameters.stop_offset
        self.stop_xy = goal[:2] - direction * stop_distance + sideways
        self.low_z = block[2] - PUSH_HEIGHT_BELOW_CENTRE
        self.high_z = block[2] + HOVER_HEIGHT
        self.stage = "lift"

    def act(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        """Return the action for this observation (gripper command 0: FetchPush keeps it closed)."""
        gripper = np.asarray(observation["observation"][:3], dtype=float)
        if self.stage == "lift" and gripper[2] > self.high_z - 0.01:
            self.stage = "move"
        if self.stage == "move" and np.linalg.norm(gripper[:2] - self.start_xy) < 0.01:
            self.stage = "lower"
        if self.stage == "lower" and abs(gripper[2] - self.low_z) < 0.01:
            self.stage = "push"
        target = {
            "lift": np.array([gripper[0], gripper[1], self.high_z]),
            "move": np.array([*self.start_xy, self.high_z]),
            "lower": np.array([*self.start_xy, self.low_z]),
            "push": np.array([*self.stop_xy, self.low_z]),
        }[self.stage]
        move = (target - gripper) / ACTION_SCALE * POSITION_GAIN
        norm = float(np.linalg.norm(move))
        if norm > MAX_ACTION:
            move *= MAX_ACTION / norm
        return np.array([*move, 0.0], dtype=np.float32)
