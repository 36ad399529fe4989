"""Record Gymnasium episodes as robotmem memories and recall past ones on reset.

``RobotMemWrapper`` is an ordinary ``gymnasium.Wrapper``: the training loop keeps calling ``reset`` and
``step`` and the wrapper writes one memory per finished episode (success, return, steps, the
parameters the caller set, initial and final object/goal positions read from goal observations),
optionally a sampled trajectory as a ``procedural`` perception, and opens and ends sessions.

A failing memory call is logged on the ``robotmem.gymnasium`` logger and skipped: the environment
loop never sees a memory error.

Example::

    env = RobotMemWrapper(
        gym.make("FetchPush-v4"),
        db_path="fetch.db",
        collection="fetch_push",
        robot={"id": "fetch-sim", "type": "Fetch", "dof": 7},
        recall=RecallConfig(
            context_filter={"task.success": True},
            spatial_sort={"field": "spatial.object_initial"},  # target: this episode's position
        ),
    )
    obs, info = env.reset(seed=0)
    similar = info["robotmem_recall"]["memories"]
    env.set_params(push_speed=0.6)
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Literal, SupportsFloat

import gymnasium as gym

from robotmem.errors import RobotMemError
from robotmem.formats.validation import check_context_keys, filterable_key
from robotmem.integrations.episodes import (
    EpisodeRecord,
    EpisodeTrace,
    MemoryBackend,
    PositionReader,
    RecallConfig,
    build_record,
    outcome_word,
    read_goal_positions,
    spatial_section,
    to_json_value,
    trajectory_payload,
)

__all__ = [
    "RECALL_INFO_KEY",
    "EpisodeRecord",
    "MemoryBackend",
    "RecallConfig",
    "RobotMemWrapper",
    "read_goal_positions",
    "to_json_value",
]

logger = logging.getLogger("robotmem.gymnasium")

RECALL_INFO_KEY = "robotmem_recall"
"""Key of the reset ``info`` dict that carries the recall result when recall is configured."""

SessionScope = Literal["episode", "run"]


class RobotMemWrapper(gym.Wrapper[Any, Any, Any, Any]):  # type: ignore[misc,unused-ignore]
    """A ``gymnasium.Wrapper`` that stores each episode in robotmem.

    Args:
        env: the environment to wrap.
        memory: a ``RobotMemory`` (or anything with its methods). When omitted, one is created
            from ``db_path`` and ``embed_backend`` and closed by ``close()``.
        collection: collection for every write and recall (the memory's default when None).
        task_name: ``task.name`` of the stored context (default: the environment id).
        robot: the ``robot`` section of the stored context, e.g. ``{"id": "arm-01", "dof": 7}``.
        params: run-wide parameters stored with every episode; ``set_params`` adds per-episode ones.
            Keys of ``robot`` and names of ``params`` follow the context key rule (docs/filters.md):
            a name with ``.`` or ``"``, starting with ``$``, all digits or empty is a ``ValidationError``.
        session_per: ``"episode"`` opens and ends one session per episode (outcome score 1.0 or
            0.0 from success); ``"run"`` keeps one session until ``close()`` (outcome score = the
            success rate of the run).
        trajectory_samples: when > 0, also save a ``procedural`` perception with this many
            evenly spaced steps (action, reward, object position).
        recall: what to recall on reset, or None for no recall.
        success_key: the ``info`` key that reports success (Gymnasium-Robotics: ``is_success``).
        position_reader: maps an observation to named positions (default: goal observations); a name
            no filter could reach is stored filterable (``hand.tip`` as ``spatial.hand_tip_initial``).
        score_fn: maps a finished episode to its ``outcome_score`` (default: 1.0 / 0.0 / None).
        keep_episodes: how many recent ``EpisodeRecord`` objects ``episodes`` keeps in memory.
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        memory: MemoryBackend | None = None,
        *,
        db_path: str | None = None,
        collection: str | None = None,
        embed_backend: str | None = None,
        task_name: str | None = None,
        robot: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        session_per: SessionScope = "episode",
        trajectory_samples: int = 0,
        recall: RecallConfig | None = None,
        success_key: str = "is_success",
        position_reader: PositionReader = read_goal_positions,
        score_fn: Callable[[EpisodeRecord], float | None] | None = None,
        keep_episodes: int = 1000,
    ) -> None:
        super().__init__(env)
        if session_per not in ("episode", "run"):
            raise ValueError(f'session_per must be "episode" or "run", got {session_per!r}')
        if trajectory_samples < 0:
            raise ValueError(f"trajectory_samples must be >= 0, got {trajectory_samples}")
        self._owns_memory = memory is None
        self.memory: MemoryBackend | None = (
            memory if memory is not None else self._open_memory(db_path, collection, embed_backend)
        )
        self.collection = collection
        spec_id = env.spec.id if env.spec is not None else type(env.unwrapped).__name__
        self.env_id: str = spec_id
        self.task_name = task_name or spec_id
        self.robot: dict[str, Any] = to_json_value(dict(robot)) if robot else {"type": spec_id}
        self.run_params: dict[str, Any] = dict(params or {})
        check_context_keys("robot", self.robot)
        check_context_keys("params", to_json_value(self.run_params))
        self.session_per: SessionScope = session_per
        self.trajectory_samples = trajectory_samples
        self.recall_config = recall
        self.success_key = success_key
        self.position_reader = position_reader
        self.score_fn = score_fn
        self.episodes: deque[EpisodeRecord] = deque(maxlen=keep_episodes)
        self.episode_count = 0
        self._run_scores: list[float] = []
        self.last_recall: dict[str, Any] | None = None
        self._episode: EpisodeTrace | None = None
        self._run_session_id: str | None = None
        self._closed = False

    # ----------------------------------------------------------------- gymnasium API

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset the environment, open the episode's session and recall into ``info`` if configured.

        An episode still running when ``reset`` is called is recorded first (``task.ended_by`` is
        ``"reset"``).
        """
        self._abandon_or_finish(ended_by="reset")
        obs, info = self.env.reset(seed=seed, options=options)
        index = self.episode_count
        session_id = self._session_for_episode(index)
        self._episode = EpisodeTrace(
            index=index,
            session_id=session_id,
            initial_positions=self._read_positions(obs),
            last_obs=obs,
        )
        if self.recall_config is not None:
            info = dict(info)
            info[RECALL_INFO_KEY] = self._recall(self.recall_config)
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Step the environment and record the episode when it terminates or is truncated."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        episode = self._episode
        if episode is not None and not episode.finished:
            episode.steps += 1
            episode.episode_return += float(reward)
            episode.last_obs = obs
            episode.last_info = dict(info)
            if self.trajectory_samples:
                episode.actions.append(to_json_value(action))
                episode.rewards.append(float(reward))
                episode.object_path.append(self._read_positions(obs).get("object", []))
            if terminated or truncated:
                self._finish_episode(terminated=bool(terminated), truncated=bool(truncated))
        return obs, reward, terminated, truncated, info

    def close(self) -> None:
        """Record a running episode, end the run session, close an owned memory, close the env."""
        if not self._closed:
            self._closed = True
            self._abandon_or_finish(ended_by="close")
            if self._run_session_id is not None:
                self._end_session(self._run_session_id, self._run_score())
                self._run_session_id = None
            if self._owns_memory and self.memory is not None:
                self._call("close", self.memory.close)
        super().close()

    # ----------------------------------------------------------------- caller-facing helpers

    def set_params(self, params: Mapping[str, Any] | None = None, **named: Any) -> None:
        """Set parameters of the current episode; they are stored in its ``params`` section.

        Call after ``reset`` (for example once the policy chose them from the recalled memories).
        They override run-wide ``params`` of the same name and are cleared by the next ``reset``.
        Raises ``ValidationError`` for a name no filter could reach (``grip.force``, ``$x``, ``""``).
        """
        if self._episode is None:
            raise RuntimeError("set_params() needs a running episode: call reset() first")
        given = {**(params or {}), **named}
        check_context_keys("params", to_json_value(given))
        self._episode.params.update(given)

    @property
    def session_id(self) -> str | None:
        """The session the current episode writes to (None when no session could be opened)."""
        if self._episode is not None:
            return self._episode.session_id
        return self._run_session_id

    # ----------------------------------------------------------------- internals

    @staticmethod
    def _open_memory(db_path: str | None, collection: str | None, embed_backend: str | None) -> Any:
        try:
            from robotmem import RobotMemory

            kwargs: dict[str, Any] = {"db_path": db_path, "embed_backend": embed_backend}
            if collection is not None:
                kwargs["collection"] = collection
            return RobotMemory(**kwargs)
        except RobotMemError as exc:
            logger.warning("robotmem: could not open the memory store, running without it: %s", exc)
        except Exception:  # a missing directory or a broken file must not stop the environment
            logger.exception("robotmem: could not open the memory store, running without it")
        return None

    def _call(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run one memory call; log and return None when it fails, so the env loop continues."""
        try:
            return fn(*args, **kwargs)
        except RobotMemError as exc:
            logger.warning("robotmem %s failed (%s): %s", what, exc.code, exc.message)
        except Exception:  # the environment loop must survive any memory failure
            logger.exception("robotmem %s failed unexpectedly", what)
        return None

    def _collection_kwargs(self) -> dict[str, Any]:
        return {"collection": self.collection} if self.collection is not None else {}

    def _session_context(self, index: int | None) -> dict[str, Any]:
        context: dict[str, Any] = {
            "task": {"name": self.task_name},
            "robot": self.robot,
            "env": {"id": self.env_id, "sim_or_real": "sim"},
        }
        if index is not None:
            context["task"]["episode"] = index
        return context

    def _start_session(self, index: int | None) -> str | None:
        if self.memory is None:
            return None
        result = self._call(
            "start_session",
            self.memory.start_session,
            context=self._session_context(index),
            **self._collection_kwargs(),
        )
        return str(result["session_id"]) if result else None

    def _end_session(self, session_id: str, score: float | None) -> None:
        if self.memory is not None:
            self._call("end_session", self.memory.end_session, session_id, outcome_score=score)

    def _session_for_episode(self, index: int) -> str | None:
        if self.session_per == "episode":
            return self._start_session(index)
        if self._run_session_id is None:
            self._run_session_id = self._start_session(None)
        return self._run_session_id

    def _read_positions(self, obs: Any) -> dict[str, list[float]]:
        try:
            return {
                filterable_key(str(name)): [float(x) for x in pos]
                for name, pos in self.position_reader(obs).items()
            }
        except Exception:  # a reader that cannot parse this observation only loses the spatial section
            logger.exception("robotmem: position_reader failed")
            return {}

    def _recall(self, config: RecallConfig) -> dict[str, Any]:
        empty: dict[str, Any] = {"memories": [], "total": 0}
        if self.memory is None or self._episode is None:
            return {**empty, "error": "no memory store"}
        spatial_sort = dict(config.spatial_sort) if config.spatial_sort else None
        if spatial_sort is not None and "target" not in spatial_sort:
            path = str(spatial_sort.get("field", ""))
            current = spatial_section(self._episode.initial_positions, {})
            name = path.removeprefix("spatial.")
            if not path.startswith("spatial.") or name not in current:
                logger.warning("robotmem recall: no position %r in this episode to sort by", path)
                return {**empty, "error": f"no position {path!r} in this episode"}
            spatial_sort["target"] = current[name]
        kwargs: dict[str, Any] = {
            "n": config.n,
            "context_filter": dict(config.context_filter) if config.context_filter else None,
            "spatial_sort": spatial_sort,
            "include_data": config.include_data,
            **self._collection_kwargs(),
        }
        if config.min_confidence is not None:
            kwargs["min_confidence"] = config.min_confidence
        result = self._call("recall", self.memory.recall, config.query, **kwargs)
        self.last_recall = result
        return result if result is not None else {**empty, "error": "recall failed (see log)"}

    def _abandon_or_finish(self, ended_by: str) -> None:
        """Record an episode cut short by reset/close; end the session of one that never stepped."""
        episode = self._episode
        if episode is None or episode.finished:
            return
        if episode.steps > 0:
            self._finish_episode(terminated=False, truncated=True, ended_by=ended_by)
            return
        episode.finished = True
        if self.session_per == "episode" and episode.session_id is not None:
            self._end_session(episode.session_id, None)

    def _success(self, info: Mapping[str, Any]) -> bool | None:
        value = info.get(self.success_key)
        if value is None:
            return None
        return bool(float(value) >= 0.5)

    def _finish_episode(self, *, terminated: bool, truncated: bool, ended_by: str | None = None) -> None:
        episode = self._episode
        assert episode is not None
        episode.finished = True
        record = build_record(
            episode,
            task_name=self.task_name,
            env_id=self.env_id,
            robot=self.robot,
            params={**self.run_params, **episode.params},
            success=self._success(episode.last_info),
            final_positions=self._read_positions(episode.last_obs),
            terminated=terminated,
            truncated=truncated,
            ended_by=ended_by,
        )
        self.episodes.append(record)
        self.episode_count += 1
        score = self._score(record)
        if score is not None:
            self._run_scores.append(score)
        if self.memory is None:
            return
        session_kwargs = {"session_id": episode.session_id} if episode.session_id else {}
        record.learn_result = self._call(
            "learn",
            self.memory.learn,
            record.insight,
            context=record.context,
            **self._collection_kwargs(),
            **session_kwargs,
        )
        if self.trajectory_samples and episode.actions:
            description = (
                f"{self.task_name} episode {record.index} trajectory: "
                f"{min(self.trajectory_samples, record.steps)} of {record.steps} steps, {outcome_word(record.success)}"
            )
            record.perception_result = self._call(
                "save_perception",
                self.memory.save_perception,
                description,
                perception_type="procedural",
                data=trajectory_payload(episode, self.trajectory_samples),
                metadata={"episode": record.index, "success": record.success, "env_id": self.env_id},
                **self._collection_kwargs(),
                **session_kwargs,
            )
        if self.session_per == "episode" and episode.session_id is not None:
            self._end_session(episode.session_id, score)

    def _score(self, record: EpisodeRecord) -> float | None:
        if self.score_fn is not None:
            return self.score_fn(record)
        return None if record.success is None else float(record.success)

    def _run_score(self) -> float | None:
        return sum(self._run_scores) / len(self._run_scores) if self._run_scores else None
