"""RobotMemWrapper on real Gymnasium environments and a real robotmem database."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")

from gymnasium import spaces  # noqa: E402

from robotmem import RobotMemory  # noqa: E402
from robotmem.config import Settings  # noqa: E402
from robotmem.gymnasium import RecallConfig, RobotMemWrapper  # noqa: E402
from robotmem.integrations.gymnasium import (  # noqa: E402
    RECALL_INFO_KEY,
    read_goal_positions,
    to_json_value,
)

POINT_ENV_ID = "robotmem-test/PointGoal-v0"


class PointGoalEnv(gym.Env):
    """A point moved toward a goal, observed the way Gymnasium-Robotics goal environments are.

    ``achieved_goal`` is the point, ``desired_goal`` the goal; success within 0.1 ends the episode.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self) -> None:
        box = spaces.Box(-2.0, 2.0, shape=(3,), dtype=np.float64)
        self.observation_space = spaces.Dict({"observation": box, "achieved_goal": box, "desired_goal": box})
        self.action_space = spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float64)
        self._point = np.zeros(3)
        self._goal = np.zeros(3)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):  # type: ignore[override]
        super().reset(seed=seed)
        self._point = self.np_random.uniform(-1.0, 1.0, size=3)
        self._goal = self.np_random.uniform(-1.0, 1.0, size=3)
        return self._obs(), {}

    def step(self, action):  # type: ignore[override]
        self._point = np.clip(self._point + 0.25 * np.clip(action, -1.0, 1.0), -2.0, 2.0)
        distance = float(np.linalg.norm(self._point - self._goal))
        success = distance < 0.1
        return self._obs(), -distance, success, False, {"is_success": float(success)}

    def _obs(self) -> dict[str, np.ndarray]:
        return {
            "observation": self._point.copy(),
            "achieved_goal": self._point.copy(),
            "desired_goal": self._goal.copy(),
        }


if POINT_ENV_ID not in gym.registry:
    gym.register(id=POINT_ENV_ID, entry_point=PointGoalEnv, max_episode_steps=12)


def toward_goal(obs: dict[str, np.ndarray]) -> np.ndarray:
    """The action that reaches the goal (success)."""
    return np.clip((obs["desired_goal"] - obs["achieved_goal"]) / 0.25, -1.0, 1.0)


def run_episode(env: Any, seed: int, succeed: bool, params: dict[str, Any] | None = None) -> dict[str, Any]:
    obs, info = env.reset(seed=seed)
    if params:
        env.set_params(params)
    done = False
    while not done:
        action = toward_goal(obs) if succeed else np.zeros(3)
        obs, _, terminated, truncated, _ = env.step(action)
        done = terminated or truncated
    return info


@pytest.fixture
def point_env() -> Any:
    return gym.make(POINT_ENV_ID)


def test_wrapper_is_a_gymnasium_wrapper_and_keeps_the_spaces(memory: RobotMemory, point_env: Any) -> None:
    env = RobotMemWrapper(point_env, memory)
    assert isinstance(env, gym.Wrapper)
    assert env.observation_space == point_env.observation_space
    assert env.action_space == point_env.action_space
    assert env.unwrapped is point_env.unwrapped


def test_each_episode_becomes_a_memory_with_the_four_sections(memory: RobotMemory, point_env: Any) -> None:
    env = RobotMemWrapper(
        point_env, memory, task_name="reach_point", robot={"id": "point-1", "dof": 3}, params={"gain": 0.25}
    )
    run_episode(env, seed=1, succeed=True, params={"speed": np.float32(0.5), "offset": np.array([0.1, 0.2])})
    run_episode(env, seed=2, succeed=False)

    assert [r.success for r in env.episodes] == [True, False]
    first, second = (memory.get_memory(r.learn_result["memory_id"]) for r in env.episodes)
    assert first["params"] == {
        "gain": {"value": 0.25, "type": "scalar"},
        "speed": {"value": 0.5, "type": "scalar"},
        "offset": {"value": [0.1, 0.2], "type": "vector"},
    }
    assert second["params"] == {"gain": {"value": 0.25, "type": "scalar"}}, (
        "episode params reset with the episode"
    )
    assert first["robot"] == {"id": "point-1", "dof": 3}
    assert first["task"]["name"] == "reach_point"
    assert first["task"]["success"] is True and second["task"]["success"] is False
    assert second["task"]["steps"] == 12 and second["task"]["truncated"] is True
    assert first["task"]["return"] == pytest.approx(env.episodes[0].episode_return)
    spatial = first["spatial"]
    assert set(spatial) == {"object_initial", "goal_initial", "object_final", "goal_final", "layout_initial"}
    assert spatial["layout_initial"] == spatial["object_initial"] + spatial["goal_initial"]
    assert np.linalg.norm(np.subtract(spatial["object_final"], spatial["goal_final"])) < 0.1
    assert first["content"].startswith("reach_point episode 0: success")


def test_one_session_per_episode_holds_that_episode(memory: RobotMemory, point_env: Any) -> None:
    env = RobotMemWrapper(point_env, memory, trajectory_samples=4)
    for seed in range(3):
        run_episode(env, seed=seed, succeed=seed != 1)
    sessions = [r.session_id for r in env.episodes]
    assert len(set(sessions)) == 3 and None not in sessions
    ended = [memory.get_session(session_id) for session_id in sessions]
    assert [s["status"] for s in ended] == ["ended"] * 3
    assert [s["outcome_score"] for s in ended] == [1.0, 0.0, 1.0]
    replay = memory.recall("episode", session_id=sessions[1], order="time", n=10)["memories"]
    assert {m["id"] for m in replay} == {
        env.episodes[1].learn_result["memory_id"],
        env.episodes[1].perception_result["memory_id"],
    }


def test_one_session_per_run_is_ended_on_close(memory: RobotMemory, point_env: Any) -> None:
    env = RobotMemWrapper(point_env, memory, session_per="run")
    for seed in range(3):
        run_episode(env, seed=seed, succeed=True)
    assert len({r.session_id for r in env.episodes}) == 1
    run_episode(env, seed=9, succeed=False)
    session_id = env.episodes[0].session_id
    assert memory.get_session(session_id)["status"] != "ended"
    env.close()
    session = memory.get_session(session_id)
    assert session["status"] == "ended" and session["outcome_score"] == pytest.approx(0.75)
    replay = memory.recall("episode", session_id=session_id, order="time", n=10)["memories"]
    assert [m["id"] for m in replay] == [r.learn_result["memory_id"] for r in env.episodes]


def test_trajectory_is_a_sampled_procedural_perception(memory: RobotMemory, point_env: Any) -> None:
    env = RobotMemWrapper(point_env, memory, trajectory_samples=5)
    run_episode(env, seed=3, succeed=False)
    result = env.episodes[0].perception_result
    assert result["perception_type"] == "procedural"
    stored = memory.get_memory(result["memory_id"])
    data = stored["data"]
    assert data["step_indices"] == [0, 3, 6, 8, 11]
    assert len(data["sampled_actions"]) == 5 and data["sampled_actions"][0] == [0.0, 0.0, 0.0]
    assert len(data["object_positions"]) == 5


def test_recall_on_reset_returns_nearest_successes_in_info(memory: RobotMemory, point_env: Any) -> None:
    writer = RobotMemWrapper(point_env, memory)
    for seed in range(12):
        run_episode(writer, seed=seed, succeed=seed % 3 != 0)
    stored = {r.learn_result["memory_id"]: r for r in writer.episodes}

    reader = RobotMemWrapper(
        gym.make(POINT_ENV_ID),
        memory,
        recall=RecallConfig(
            query="episode",
            n=3,
            context_filter={"task.success": True},
            spatial_sort={"field": "spatial.layout_initial"},
        ),
    )
    obs, info = reader.reset(seed=100)
    memories = info[RECALL_INFO_KEY]["memories"]
    target = np.concatenate([obs["achieved_goal"], obs["desired_goal"]])
    expected = sorted(
        (float(np.linalg.norm(np.subtract(r.context["spatial"]["layout_initial"], target))), memory_id)
        for memory_id, r in stored.items()
        if r.success
    )[:3]
    assert [m["id"] for m in memories] == [memory_id for _, memory_id in expected]
    assert [m["spatial_distance"] for m in memories] == pytest.approx([d for d, _ in expected])
    assert all(m["task"]["success"] is True for m in memories)


def test_default_recall_orders_every_stored_success_by_distance(memory: RobotMemory, point_env: Any) -> None:
    writer = RobotMemWrapper(point_env, memory)
    for seed in range(70):
        run_episode(writer, seed=seed, succeed=seed % 4 != 0)
    layouts = {
        r.learn_result["memory_id"]: r.context["spatial"]["layout_initial"]
        for r in writer.episodes
        if r.success
    }
    reader = RobotMemWrapper(
        gym.make(POINT_ENV_ID),
        memory,
        recall=RecallConfig(
            n=5, context_filter={"task.success": True}, spatial_sort={"field": "spatial.layout_initial"}
        ),
    )
    for seed in (200, 201, 202):
        obs, info = reader.reset(seed=seed)
        target = np.concatenate([obs["achieved_goal"], obs["desired_goal"]])
        nearest = sorted(layouts, key=lambda m: float(np.linalg.norm(np.subtract(layouts[m], target))))[:5]
        assert [m["id"] for m in info[RECALL_INFO_KEY]["memories"]] == nearest


def test_recall_with_an_explicit_target_and_max_distance(memory: RobotMemory, point_env: Any) -> None:
    writer = RobotMemWrapper(point_env, memory)
    run_episode(writer, seed=5, succeed=True)
    start = writer.episodes[0].context["spatial"]["object_initial"]
    spatial_sort = {"field": "spatial.object_initial", "target": start, "max_distance": 0.01}
    reader = RobotMemWrapper(
        gym.make(POINT_ENV_ID), memory, recall=RecallConfig(query="episode", spatial_sort=spatial_sort)
    )
    _, info = reader.reset(seed=77)
    assert [m["id"] for m in info[RECALL_INFO_KEY]["memories"]] == [
        writer.episodes[0].learn_result["memory_id"]
    ]


def test_recall_on_a_position_the_env_does_not_report_goes_to_info_not_raise(
    memory: RobotMemory, caplog: pytest.LogCaptureFixture
) -> None:
    env = RobotMemWrapper(
        gym.make("CartPole-v1"), memory, recall=RecallConfig(spatial_sort={"field": "spatial.object_initial"})
    )
    with caplog.at_level(logging.WARNING, logger="robotmem.gymnasium"):
        _, info = env.reset(seed=0)
    assert info[RECALL_INFO_KEY]["memories"] == []
    assert "object_initial" in info[RECALL_INFO_KEY]["error"]


def test_invalid_filter_is_logged_and_the_loop_goes_on(
    memory: RobotMemory, point_env: Any, caplog: pytest.LogCaptureFixture
) -> None:
    env = RobotMemWrapper(
        point_env, memory, recall=RecallConfig(context_filter={"task.success": {"$less": 1}})
    )
    with caplog.at_level(logging.WARNING, logger="robotmem.gymnasium"):
        info = run_episode(env, seed=0, succeed=True)
    assert info[RECALL_INFO_KEY]["memories"] == []
    assert "$less" in caplog.text
    assert env.episodes[0].learn_result["status"] == "created"


def test_memory_errors_never_break_the_environment_loop(
    tmp_path: Path, settings: Settings, point_env: Any, caplog: pytest.LogCaptureFixture
) -> None:
    memory = RobotMemory(tmp_path / "closing.db", embed_backend="none", settings=settings)
    env = RobotMemWrapper(point_env, memory, trajectory_samples=3)
    with caplog.at_level(logging.WARNING, logger="robotmem.gymnasium"):
        run_episode(env, seed=0, succeed=True, params={"notes": "x" * 70_000})  # context over 64 KiB
        memory.close()  # every later call fails on a closed store
        run_episode(env, seed=1, succeed=True)
        _, info = env.reset(seed=2)
        env.step(np.zeros(3))
        env.close()
    assert env.episodes[0].learn_result is None
    assert env.episodes[1].learn_result is None
    assert [r.success for r in env.episodes] == [True, True, False]
    assert "robotmem learn failed" in caplog.text


def test_unopenable_database_runs_without_memory(
    tmp_path: Path, point_env: Any, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not_a_directory"
    blocker.write_text("a file where the database directory should be")
    with caplog.at_level(logging.WARNING, logger="robotmem.gymnasium"):
        env = RobotMemWrapper(point_env, db_path=str(blocker / "memory.db"), embed_backend="none")
        run_episode(env, seed=0, succeed=True)
        env.close()
    assert env.memory is None
    assert env.episodes[0].success is True and env.episodes[0].learn_result is None


def test_wrapper_opens_and_closes_its_own_database(
    tmp_path: Path, point_env: Any, settings: Settings
) -> None:
    db_path = tmp_path / "gym.db"
    env = RobotMemWrapper(point_env, db_path=str(db_path), collection="arm", embed_backend="none")
    run_episode(env, seed=4, succeed=True)
    env.close()
    with RobotMemory(db_path, embed_backend="none", settings=settings) as mem:
        found = mem.recall("episode", collection="arm", context_filter={"task.success": True})["memories"]
    assert [m["id"] for m in found] == [env.episodes[0].learn_result["memory_id"]]


def test_reset_in_the_middle_records_the_cut_episode(memory: RobotMemory, point_env: Any) -> None:
    env = RobotMemWrapper(point_env, memory)
    env.reset(seed=0)
    env.step(np.zeros(3))
    env.step(np.zeros(3))
    env.reset(seed=1)
    env.reset(seed=2)  # an episode without steps is not recorded
    assert len(env.episodes) == 1
    stored = memory.get_memory(env.episodes[0].learn_result["memory_id"])
    assert stored["task"]["ended_by"] == "reset" and stored["task"]["steps"] == 2


def test_environment_without_goal_observations_and_success(memory: RobotMemory) -> None:
    env = RobotMemWrapper(gym.make("CartPole-v1"), memory, robot={"type": "cart"})
    env.reset(seed=0)
    done = False
    while not done:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        done = terminated or truncated
    stored = memory.get_memory(env.episodes[0].learn_result["memory_id"])
    assert stored["spatial"] == {}
    assert "success" not in stored["task"] and stored["task"]["name"] == "CartPole-v1"
    assert stored["content"].startswith("CartPole-v1 episode 0: finished")


def test_set_params_before_reset_is_an_error(memory: RobotMemory, point_env: Any) -> None:
    env = RobotMemWrapper(point_env, memory)
    with pytest.raises(RuntimeError, match="reset"):
        env.set_params(speed=1.0)


def test_numpy_values_become_plain_json() -> None:
    value = {"a": np.float32(1.5), "b": np.arange(3), "c": (np.int64(2), float("nan")), 4: np.bool_(True)}
    assert to_json_value(value) == {"a": 1.5, "b": [0, 1, 2], "c": [2, None], "4": True}


def test_read_goal_positions_ignores_plain_observations() -> None:
    assert read_goal_positions(np.zeros(4)) == {}
    assert read_goal_positions({"achieved_goal": np.ones(3)}) == {"object": [1.0, 1.0, 1.0]}


def test_fetch_push_episode_is_recorded(memory: RobotMemory) -> None:
    robotics = pytest.importorskip("gymnasium_robotics")
    gym.register_envs(robotics)
    env = RobotMemWrapper(gym.make("FetchPush-v4"), memory, robot={"type": "Fetch"}, trajectory_samples=5)
    env.reset(seed=0)
    done = False
    while not done:
        _, _, terminated, truncated, _ = env.step(np.zeros(4, dtype=np.float32))
        done = terminated or truncated
    stored = memory.get_memory(env.episodes[0].learn_result["memory_id"])
    assert stored["task"]["success"] is False and stored["task"]["steps"] == 50
    assert len(stored["spatial"]["object_initial"]) == 3
    assert stored["spatial"]["object_final"] == pytest.approx(stored["spatial"]["object_initial"], abs=1e-6)


def test_only_recent_records_are_kept_but_indices_keep_counting(memory: RobotMemory, point_env: Any) -> None:
    env = RobotMemWrapper(point_env, memory, keep_episodes=2)
    for seed in range(3):
        run_episode(env, seed=seed, succeed=True)
    assert env.episode_count == 3
    assert [r.index for r in env.episodes] == [1, 2]
    assert memory.get_memory(env.episodes[-1].learn_result["memory_id"])["task"]["episode"] == 2


def test_score_fn_sets_the_outcome_score(memory: RobotMemory, point_env: Any) -> None:
    env = RobotMemWrapper(point_env, memory, session_per="run", score_fn=lambda r: 1.0 / r.steps)
    run_episode(env, seed=0, succeed=False)
    run_episode(env, seed=1, succeed=False)
    env.close()
    assert memory.get_session(env.episodes[0].session_id)["outcome_score"] == pytest.approx(1.0 / 12)


def test_unknown_session_scope_is_rejected(memory: RobotMemory, point_env: Any) -> None:
    with pytest.raises(ValueError, match="session_per"):
        RobotMemWrapper(point_env, memory, session_per="day")  # type: ignore[arg-type]


def test_names_no_filter_could_reach_are_refused_or_stored_filterable(
    memory: RobotMemory, point_env: Any
) -> None:
    """Caller-chosen names are checked when given; position names read from observations are renamed."""
    from robotmem import ValidationError

    with pytest.raises(ValidationError, match=r"params: key 'arm\.gain'"):
        RobotMemWrapper(point_env, memory, params={"arm.gain": 1.0})
    with pytest.raises(ValidationError, match=r"robot: key '\$id'"):
        RobotMemWrapper(point_env, memory, robot={"$id": "a"})

    def dotted_reader(obs: Any) -> dict[str, Any]:
        return {"hand.tip": obs["achieved_goal"], "goal": obs["desired_goal"]}

    env = RobotMemWrapper(point_env, memory, position_reader=dotted_reader)
    env.reset(seed=0)
    with pytest.raises(ValidationError, match=r"params: key 'grip\.force'"):
        env.set_params({"grip.force": 3.0})
    env.set_params({"grip_force": 3.0})
    done = False
    while not done:
        _, _, terminated, truncated, _ = env.step(np.zeros(3))
        done = terminated or truncated
    memory_id = env.episodes[0].learn_result["memory_id"]
    assert "hand_tip_initial" in memory.get_memory(memory_id)["spatial"]
    for path in ("spatial.hand_tip_initial", "params.grip_force"):
        found = memory.recall("", context_filter={path: {"$exists": True}})["memories"]
        assert [m["id"] for m in found] == [memory_id], path
