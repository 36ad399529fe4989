"""Episode records for robot-learning integrations: what one episode stores, built without a simulator.

An integration collects an ``EpisodeTrace`` while the episode runs and turns it into an
``EpisodeRecord``: the insight text and the four-section context (params, spatial, robot, task)
that ``RobotMemory.learn`` stores, and the sampled trajectory that ``save_perception`` stores.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from robotmem.formats.validation import filterable_key

MAX_INSIGHT_CHARS = 300

PositionReader = Callable[[Any], Mapping[str, Sequence[float]]]


class MemoryBackend(Protocol):
    """The part of ``robotmem.RobotMemory`` the integrations use."""

    def start_session(self, context: Any = None, collection: str | None = None) -> dict[str, Any]: ...

    def learn(
        self, insight: str, context: Any = None, collection: str | None = None, session_id: str | None = None
    ) -> dict[str, Any]: ...

    def save_perception(
        self,
        description: str,
        perception_type: str = ...,
        data: Any = None,
        metadata: Any = None,
        collection: str | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]: ...

    def recall(self, query: str = ..., **kwargs: Any) -> dict[str, Any]: ...

    def end_session(self, session_id: str, outcome_score: float | None = None) -> dict[str, Any]: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class RecallConfig:
    """What to recall when an episode starts.

    ``spatial_sort`` follows SPEC §2 (``field``, ``target``, ``max_distance``). When ``target`` is
    left out and ``field`` is ``"spatial.<name>"``, the integration fills it with the new
    episode's own ``<name>`` position (for example ``object_initial`` or ``layout_initial``), so
    recall ranks past episodes by how close their start was to this one.

    The default empty ``query`` leaves text ranking out: every memory that passes the filters is
    ordered by distance (or newest first without ``spatial_sort``). With a text query and
    ``spatial_sort``, recall returns the nearest among the memories relevant to the query: those
    containing query words that carry ``bm25_min_coverage`` of its IDF, or whose cosine reaches the
    model's relevance floor (docs/filters.md); a query nothing is relevant to returns nothing.
    """

    query: str = ""
    n: int = 5
    context_filter: Mapping[str, Any] | None = None
    spatial_sort: Mapping[str, Any] | None = None
    min_confidence: float | None = None
    include_data: bool = False


@dataclass
class EpisodeRecord:
    """A finished episode: what was stored and what the memory calls answered."""

    index: int
    insight: str
    context: dict[str, Any]
    success: bool | None
    episode_return: float
    steps: int
    session_id: str | None
    learn_result: dict[str, Any] | None = None
    perception_result: dict[str, Any] | None = None


@dataclass
class EpisodeTrace:
    """What an integration collects while an episode runs."""

    index: int
    session_id: str | None
    initial_positions: dict[str, list[float]]
    params: dict[str, Any] = field(default_factory=dict)
    episode_return: float = 0.0
    steps: int = 0
    actions: list[Any] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    object_path: list[list[float]] = field(default_factory=list)
    last_obs: Any = None
    last_info: dict[str, Any] = field(default_factory=dict)
    finished: bool = False


def read_goal_positions(observation: Any) -> dict[str, list[float]]:
    """Return ``{"object": [...], "goal": [...]}`` from a goal observation, else ``{}``.

    Goal-conditioned environments (``gymnasium_robotics`` Fetch and others) report the object's
    position as ``achieved_goal`` and the target as ``desired_goal``.
    """
    if not isinstance(observation, Mapping):
        return {}
    positions: dict[str, list[float]] = {}
    for key, name in (("achieved_goal", "object"), ("desired_goal", "goal")):
        value = observation.get(key)
        if value is not None:
            positions[name] = [float(x) for x in np.asarray(value, dtype=float).ravel()]
    return positions


def to_json_value(value: Any) -> Any:
    """Return ``value`` with numpy scalars and arrays turned into plain JSON types (NaN becomes None)."""
    if isinstance(value, np.ndarray):
        return to_json_value(value.tolist())
    if isinstance(value, np.generic):
        return to_json_value(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    return value


def context_json_value(value: Any) -> Any:
    """Return ``to_json_value(value)`` with every object key made reachable by a filter path.

    For names read from data rather than chosen by the caller (``validation.filterable_key``):
    ``{"grip.force": 1}`` becomes ``{"grip_force": 1}``.
    """
    if isinstance(value, Mapping):
        return {filterable_key(str(k)): context_json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [context_json_value(v) for v in value]
    return to_json_value(value)


def param_entry(value: Any) -> Any:
    """Give a plain parameter value the SPEC §2 ``{"value", "type"}`` form; keep structured ones."""
    value = to_json_value(value)
    if isinstance(value, Mapping) and "value" in value:
        return dict(value)
    if isinstance(value, bool):
        return {"value": value, "type": "flag"}
    if value is None or isinstance(value, (int, float)):
        return {"value": value, "type": "scalar"}
    if isinstance(value, list):
        return {"value": value, "type": "vector"}
    return {"value": value, "type": "other"}


def sample_indices(length: int, samples: int) -> list[int]:
    """Return up to ``samples`` evenly spaced indices into a sequence of ``length``, first and last included."""
    if length <= samples:
        return list(range(length))
    return sorted({int(round(i)) for i in np.linspace(0, length - 1, samples)})


def spatial_section(
    initial: Mapping[str, list[float]], final: Mapping[str, list[float]]
) -> dict[str, list[float]]:
    """Return ``<name>_initial`` and ``<name>_final`` positions, and ``layout_initial``.

    ``layout_initial`` is the object's and the goal's initial positions in one list, so one
    ``spatial_sort`` can rank episodes by how similar their whole start was.
    """
    spatial = {f"{name}_initial": list(pos) for name, pos in initial.items()}
    spatial.update({f"{name}_final": list(pos) for name, pos in final.items()})
    if "object" in initial and "goal" in initial:
        spatial["layout_initial"] = list(initial["object"]) + list(initial["goal"])
    return spatial


def outcome_word(success: bool | None) -> str:
    """Return ``success``, ``failure`` or ``finished`` (success unknown)."""
    return {True: "success", False: "failure", None: "finished"}[success]


def describe_episode(task_name: str, context: Mapping[str, Any]) -> str:
    """Return the insight text of an episode (at most 300 characters).

    Only the caller's parameters are written as ``name=value``: robotmem reads such text as
    parameters, and the return or the step count is not one.
    """
    task = context["task"]
    text = (
        f"{task_name} episode {task['episode']}: {outcome_word(task.get('success'))}, "
        f"return {task['return']:.2f} in {task['steps']} steps"
    )
    if "final_distance" in task:
        text += f", object {task['final_distance']:.3f} m from goal"
    shown = [
        f"{name}={entry['value']:.4g}"
        if isinstance(entry.get("value"), float)
        else f"{name}={entry['value']}"
        for name, entry in context["params"].items()
    ]
    if shown:
        text += "; params " + ", ".join(shown)
    return text[:MAX_INSIGHT_CHARS]


def build_record(
    trace: EpisodeTrace,
    *,
    task_name: str,
    env_id: str,
    robot: Mapping[str, Any],
    params: Mapping[str, Any],
    success: bool | None,
    final_positions: Mapping[str, list[float]],
    terminated: bool,
    truncated: bool,
    ended_by: str | None = None,
) -> EpisodeRecord:
    """Return the record of a finished episode with its four-section context."""
    task: dict[str, Any] = {
        "name": task_name,
        "episode": trace.index,
        "return": trace.episode_return,
        "steps": trace.steps,
        "terminated": terminated,
        "truncated": truncated,
    }
    if success is not None:
        task["success"] = success
    if ended_by is not None:
        task["ended_by"] = ended_by
    if "object" in final_positions and "goal" in final_positions:
        gap = np.subtract(final_positions["object"], final_positions["goal"])
        task["final_distance"] = float(np.linalg.norm(gap))
    context: dict[str, Any] = to_json_value(
        {
            "params": {name: param_entry(value) for name, value in params.items()},
            "spatial": spatial_section(trace.initial_positions, final_positions),
            "robot": dict(robot),
            "task": task,
            "env": {"id": env_id, "sim_or_real": "sim"},
        }
    )
    return EpisodeRecord(
        index=trace.index,
        insight=describe_episode(task_name, context),
        context=context,
        success=success,
        episode_return=trace.episode_return,
        steps=trace.steps,
        session_id=trace.session_id,
    )


def trajectory_payload(trace: EpisodeTrace, samples: int) -> dict[str, Any]:
    """Return the sampled trajectory stored as a ``procedural`` perception's data."""
    indices = sample_indices(len(trace.actions), samples)
    data: dict[str, Any] = {
        "step_indices": indices,
        "sampled_actions": [trace.actions[i] for i in indices],
        "rewards": [trace.rewards[i] for i in indices],
    }
    if any(trace.object_path):
        data["object_positions"] = [trace.object_path[i] for i in indices]
    return to_json_value(data)  # type: ignore[no-any-return]
