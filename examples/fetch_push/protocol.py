"""The three-phase experience-recall protocol on FetchPush, for one seed.

Phases (``episodes`` each, one fresh set of databases per seed):

* ``A_baseline`` - the push policy with nominal parameters plus per-episode noise; no memory.
* ``B_write`` - the same policy on other layouts, each episode stored through
  ``RobotMemWrapper`` (success, parameters, initial and final object/goal positions).
* ``C_memory`` - on the layouts of phase A, with the same noise draws: on reset the wrapper
  recalls the ``k`` successful past episodes whose initial object and goal positions lie closest
  to this episode's (``spatial_sort`` on ``spatial.layout_initial``, ``context_filter`` on
  ``task.success``); the policy's parameter centre moves to the mean of their parameters.
  The episode is stored too, so later episodes can recall it.
* ``C_random`` - the control arm: the same recall, but the centre moves by a random vector of the
  same size (measured in noise standard deviations) as the memory arm's move would have been.

Both phase C arms start from a copy of the phase B database and write only to their own copy,
so no arm ever recalls another arm's episodes.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import gymnasium_robotics
import numpy as np
from policy import PARAMETER_NAMES, PARAMETER_SCALES, PushParameters, PushPolicy

from robotmem.integrations.gymnasium import RECALL_INFO_KEY, RecallConfig, RobotMemWrapper

gym.register_envs(gymnasium_robotics)

ENV_ID = "FetchPush-v4"
COLLECTION = "fetch_push"
# No text query: recall ranks the episodes that pass the filter by distance alone, over all of them.
RECALL_QUERY = ""
NOMINAL = PushParameters()
ROBOT = {"id": "fetch-sim", "type": "Fetch", "dof": 7}

# Stream ids for numpy's seed sequences: each (seed, stream, episode) triple has its own generator.
_EVAL_LAYOUT, _TRAIN_LAYOUT, _EVAL_NOISE, _TRAIN_NOISE, _CONTROL_DIRECTION = range(5)


@dataclass(frozen=True)
class ProtocolConfig:
    """Settings of one seed's run."""

    seed: int
    episodes: int
    workdir: Path
    k: int = 5
    max_distance: float | None = None
    embed_backend: str | None = "none"
    trajectory_samples: int = 10


def layout_seed(seed: int, stream: int, episode: int) -> int:
    """Return the environment reset seed of one episode (same for phases A and C)."""
    return int(np.random.SeedSequence([seed, stream, episode]).generate_state(1)[0])


def episode_noise(seed: int, stream: int, episode: int) -> np.ndarray:
    """Return the policy's parameter noise for one episode, in metres."""
    rng = np.random.default_rng([seed, stream, episode])
    return rng.normal(0.0, PARAMETER_SCALES)


def random_direction(seed: int, episode: int) -> np.ndarray:
    """Return a unit vector in noise-scaled parameter space for the control arm."""
    rng = np.random.default_rng([seed, _CONTROL_DIRECTION, episode])
    vector = rng.normal(size=len(PARAMETER_NAMES))
    return vector / np.linalg.norm(vector)


def recalled_parameters(memories: Sequence[dict[str, Any]]) -> np.ndarray:
    """Return the parameter rows of recalled memories that carry both parameters."""
    rows = []
    for memory in memories:
        params = memory.get("params") or {}
        try:
            rows.append([float(params[name]["value"]) for name in PARAMETER_NAMES])
        except (KeyError, TypeError, ValueError):
            continue
    return np.array(rows, dtype=float).reshape(-1, len(PARAMETER_NAMES))


def memory_shift(memories: Sequence[dict[str, Any]]) -> np.ndarray:
    """Return how far the recalled successes' mean parameters lie from the nominal ones."""
    rows = recalled_parameters(memories)
    if len(rows) == 0:
        return np.zeros(len(PARAMETER_NAMES))
    return rows.mean(axis=0) - NOMINAL.as_array()


def control_shift(memory_move: np.ndarray, seed: int, episode: int) -> np.ndarray:
    """Return a random shift whose size in noise units equals that of ``memory_move``."""
    size = float(np.linalg.norm(memory_move / PARAMETER_SCALES))
    return random_direction(seed, episode) * size * PARAMETER_SCALES


def run_episode(env: gym.Env, obs: dict[str, np.ndarray], parameters: PushParameters) -> dict[str, Any]:
    """Run one episode from the reset observation ``obs``; return the result row fields."""
    if isinstance(env, RobotMemWrapper):
        env.set_params(parameters.as_dict())
    policy = PushPolicy(obs, parameters)
    episode_return, steps, info = 0.0, 0, {}
    terminated = truncated = False
    while not (terminated or truncated):
        obs, reward, terminated, truncated, info = env.step(policy.act(obs))
        episode_return += float(reward)
        steps += 1
    distance = float(np.linalg.norm(obs["achieved_goal"] - obs["desired_goal"]))
    row = {
        "success": int(bool(info.get("is_success", 0.0))),
        "final_distance": round(distance, 5),
        "episode_return": episode_return,
        "steps": steps,
        "lateral_offset": round(parameters.lateral_offset, 6),
        "stop_offset": round(parameters.stop_offset, 6),
    }
    return row


def copy_database(source: Path, target: Path) -> None:
    """Copy a closed SQLite database with SQLite's online backup (safe with WAL files)."""
    src = sqlite3.connect(source)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def make_wrapper(env: gym.Env, db_path: Path, config: ProtocolConfig, recall: bool) -> RobotMemWrapper:
    """Wrap ``env`` so that every episode is stored in ``db_path`` (and recalled from it)."""
    recall_config = None
    if recall:
        spatial_sort: dict[str, Any] = {"field": "spatial.layout_initial"}
        if config.max_distance is not None:
            spatial_sort["max_distance"] = config.max_distance
        recall_config = RecallConfig(
            query=RECALL_QUERY,
            n=config.k,
            context_filter={"task.success": True},
            spatial_sort=spatial_sort,
        )
    wrapper = RobotMemWrapper(
        env,
        db_path=str(db_path),
        collection=COLLECTION,
        embed_backend=config.embed_backend,
        task_name="FetchPush",
        robot=ROBOT,
        session_per="episode",
        trajectory_samples=config.trajectory_samples,
        recall=recall_config,
    )
    if wrapper.memory is None:  # the wrapper would carry on without memory; the experiment must not
        raise RuntimeError(f"could not open the robotmem database {db_path} (see the log above)")
    return wrapper


def exact_neighbour_distances(
    stored: Sequence[tuple[list[float], bool]], target: list[float], k: int
) -> list[float]:
    """Return the k smallest distances from ``target`` to stored successful layouts (a recall check)."""
    distances = sorted(
        float(np.linalg.norm(np.subtract(layout, target))) for layout, success in stored if success
    )
    return distances[:k]


class RowLog:
    """Collects the result rows of one seed."""

    def __init__(self, config: ProtocolConfig) -> None:
        self.base = {"seed": config.seed, "k": config.k}
        self.rows: list[dict[str, Any]] = []

    def add(self, phase: str, episode: int, reset_seed: int, fields: dict[str, Any], started: float) -> None:
        """Append one episode's row; ``started`` is its ``time.perf_counter()`` start."""
        seconds = round(time.perf_counter() - started, 4)
        row = {**self.base, "phase": phase, "episode": episode, "layout_seed": reset_seed}
        self.rows.append({**row, **fields, "seconds": seconds})


def run_seed(config: ProtocolConfig) -> list[dict[str, Any]]:
    """Run all four phases for one seed; return one row per episode."""
    config.workdir.mkdir(parents=True, exist_ok=True)
    log = RowLog(config)
    run_baseline(config, log)
    phase_b_db = config.workdir / "phase_b.db"
    stored = run_writing_baseline(config, phase_b_db, log)
    for arm in ("C_memory", "C_random"):
        arm_db = config.workdir / f"{arm}.db"
        copy_database(phase_b_db, arm_db)
        run_recall_arm(config, arm, arm_db, list(stored), log)
    return log.rows


def run_baseline(config: ProtocolConfig, log: RowLog) -> None:
    """Phase A: nominal parameters plus noise on the evaluation layouts, no memory."""
    env = gym.make(ENV_ID)
    for i in range(config.episodes):
        started = time.perf_counter()
        reset_seed = layout_seed(config.seed, _EVAL_LAYOUT, i)
        params = PushParameters.from_array(NOMINAL.as_array() + episode_noise(config.seed, _EVAL_NOISE, i))
        obs, _ = env.reset(seed=reset_seed)
        log.add("A_baseline", i, reset_seed, run_episode(env, obs, params), started)
    env.close()


def run_writing_baseline(
    config: ProtocolConfig, db_path: Path, log: RowLog
) -> list[tuple[list[float], bool]]:
    """Phase B: the baseline on the training layouts, every episode written; return (layout, success)."""
    wrapper = make_wrapper(gym.make(ENV_ID), db_path, config, recall=False)
    stored: list[tuple[list[float], bool]] = []
    for i in range(config.episodes):
        started = time.perf_counter()
        reset_seed = layout_seed(config.seed, _TRAIN_LAYOUT, i)
        params = PushParameters.from_array(NOMINAL.as_array() + episode_noise(config.seed, _TRAIN_NOISE, i))
        obs, _ = wrapper.reset(seed=reset_seed)
        fields = run_episode(wrapper, obs, params)
        fields["memory_status"] = _learn_status(wrapper)
        stored.append(_layout_of(wrapper))
        log.add("B_write", i, reset_seed, fields, started)
    wrapper.close()
    return stored


def run_recall_arm(
    config: ProtocolConfig, arm: str, db_path: Path, stored: list[tuple[list[float], bool]], log: RowLog
) -> None:
    """Phase C, one arm: recall on reset, shift the parameter centre, run and write each episode."""
    wrapper = make_wrapper(gym.make(ENV_ID), db_path, config, recall=True)
    for i in range(config.episodes):
        started = time.perf_counter()
        reset_seed = layout_seed(config.seed, _EVAL_LAYOUT, i)
        fields = _run_recall_episode(wrapper, config, arm, i, reset_seed, stored)
        stored.append(_layout_of(wrapper))
        log.add(arm, i, reset_seed, fields, started)
    wrapper.close()


def _run_recall_episode(
    wrapper: RobotMemWrapper,
    config: ProtocolConfig,
    arm: str,
    episode: int,
    reset_seed: int,
    stored: list[tuple[list[float], bool]],
) -> dict[str, Any]:
    """Recall, adjust the parameter centre, run and store one phase C episode."""
    obs, reset_info = wrapper.reset(seed=reset_seed)
    recall = reset_info.get(RECALL_INFO_KEY) or {}
    memories = recall.get("memories", [])
    move = memory_shift(memories)
    if arm == "C_random":
        move = control_shift(move, config.seed, episode)
    noise = episode_noise(config.seed, _EVAL_NOISE, episode)
    params = PushParameters.from_array(NOMINAL.as_array() + move + noise)
    target = list(obs["achieved_goal"]) + list(obs["desired_goal"])
    expected = exact_neighbour_distances(stored, [float(x) for x in target], config.k)
    got = [m.get("spatial_distance") for m in memories]
    fields = run_episode(wrapper, obs, params)
    fields.update(
        {
            "recalled": len(memories),
            "recall_ms": recall.get("query_ms"),
            "recall_matches_exact": int(
                len(got) == len(expected)
                and all(g is not None and abs(g - e) < 1e-6 for g, e in zip(got, expected, strict=True))
            ),
            "shift_lateral": round(float(move[0]), 6),
            "shift_stop": round(float(move[1]), 6),
            "shift_sigma": round(float(np.linalg.norm(move / PARAMETER_SCALES)), 4),
            "memory_status": _learn_status(wrapper),
        }
    )
    return fields


def _learn_status(wrapper: RobotMemWrapper) -> str:
    record = wrapper.episodes[-1] if wrapper.episodes else None
    if record is None or record.learn_result is None:
        return "error"
    return str(record.learn_result.get("status", "unknown"))


def _layout_of(wrapper: RobotMemWrapper) -> tuple[list[float], bool]:
    record = wrapper.episodes[-1]
    return record.context["spatial"]["layout_initial"], bool(record.success)
