"""LeRobot datasets (v3.0 and v2.x layouts) as episodes, and episode selection for retrieval-based fine-tuning.

Needs the extra ``robotmem[lerobot]`` (pyarrow; no torch, no hub access)::

    from robotmem import RobotMemory
    from robotmem.integrations.lerobot import import_lerobot, select_episodes

    with RobotMemory("memory.db") as mem:
        import_lerobot(mem, "~/.cache/huggingface/lerobot/me/push")
        picked = select_episodes(mem, task="push the red block", state=[0.1, -0.2, 0.3, 0.0], n=50)
    # LeRobotDataset("me/push", episodes=picked): the 50 successful demonstrations most like this
    # task and start state.

The v3.0 layout: ``meta/info.json`` (features, fps, robot type), ``meta/episodes/chunk-*/file-*.parquet``
(one row per episode: ``episode_index``, ``tasks``, ``length``, ``dataset_from_index`` /
``dataset_to_index``), ``meta/tasks.parquet``, ``data/chunk-*/file-*.parquet`` (one row per frame). The v2.x layout has
``meta/episodes.jsonl`` instead and one frame file per episode (``data/chunk-*/episode_*.parquet``).
Each episode becomes one memory: the task text as its insight; ``spatial.state_initial`` /
``state_final`` (the first and last ``observation.state``); ``task.success`` from a success column
(``next.success``, ``success`` or ``is_success``: true when any frame succeeds), else from the reward
(``next.reward`` or ``reward``: true when some frame's reward reaches ``success_reward``, 1.0 unless
given; None leaves success unknown), else unknown; ``task.return`` (the sum of the reward) when present;
``provenance`` with the dataset path, ``episode_index`` and where success came from (``success_from``).

``provenance.key`` names an episode by the dataset's identity (its robot type, fps and features — not
the counts ``meta/info.json`` also holds), the episode index and the episode's content (task, length
and a digest of its frames' state, action, timestamp, success and reward columns). Importing a
dataset again adds nothing, from any path; a dataset that gained episodes imports only the new ones.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from robotmem.errors import ValidationError
from robotmem.formats.validation import parse_json_object
from robotmem.integrations.episodes import outcome_word, to_json_value
from robotmem.integrations.lerobot_files import (
    episode_files,
    index_column,
    number_column,
    read_info,
    read_table,
)
from robotmem.service.recall import context_values

Progress = Callable[[str, int, int], None]
SUCCESS_COLUMNS = ("next.success", "success", "is_success")
REWARD_COLUMNS = ("next.reward", "reward")
DIGEST_COLUMNS = ("action", "timestamp")  # read for the content digest beside state, success and reward
SUCCESS_REWARD = 1.0  # a frame reward reaching this marks success when the dataset has no success column
# select_episodes' default: leave out the episodes known to have failed (successes and unknowns stay).
NOT_FAILED: Literal["not_failed"] = "not_failed"


@dataclass(frozen=True)
class LeRobotEpisode:
    """One episode of a dataset, as the memory needs it."""

    index: int
    tasks: tuple[str, ...]
    length: int
    state_initial: list[float] | None
    state_final: list[float] | None
    success: bool | None
    episode_return: float | None
    content: str = ""  # digest of the episode's task, length and frames (see ``read_episodes``)


def read_episodes(
    path: str | Path,
    state_key: str = "observation.state",
    *,
    success_reward: float | None = SUCCESS_REWARD,
    progress: Progress | None = None,
) -> tuple[dict[str, Any], list[LeRobotEpisode]]:
    """Return ``(info, episodes)`` of the dataset at ``path``, read with pyarrow; raises ``ValidationError``.

    An episode's success: any frame of the success column when there is one, else whether some frame's
    reward reaches ``success_reward`` (None: unknown), else unknown.
    """
    root = Path(path).expanduser()
    info = read_info(root)
    try:
        meta, data_files = episode_files(root, info["codebase_version"])
    except (OSError, ValueError) as exc:
        raise ValidationError(f"dataset: {root}: cannot read the episode metadata: {exc}") from exc
    if not meta.get("episode_index") or not data_files:
        raise ValidationError(f"dataset: {root} lacks its episode metadata or data/*/*.parquet frame files")
    features = info.get("features", {})
    success_col = next((c for c in SUCCESS_COLUMNS if c in features), None)
    reward_col = next((c for c in REWARD_COLUMNS if c in features), None)
    state_col = state_key if state_key in features else None
    extra = [c for c in DIGEST_COLUMNS if c in features and c != state_col]
    read = [c for c in (state_col, success_col, reward_col) if c]
    frames = read_table(data_files, ["episode_index", "index", *read, *extra], progress)
    episode_of, frame_of = (index_column(frames, name, root) for name in ("episode_index", "index"))
    order = np.lexsort((frame_of, episode_of))
    by_episode = episode_of[order]
    if missing := [c for c in read if c not in frames.column_names]:
        raise ValidationError(f"dataset: meta/info.json lists {missing[0]!r} but the data/ files lack it")
    columns = {c: number_column(frames, c, root)[order] for c in [*read, *extra] if c in frames.column_names}
    state = columns.get(state_col) if state_col else None
    success = np.asarray(columns[success_col].any(axis=1)) if success_col else None
    reward = columns[reward_col].sum(axis=1) if reward_col else None
    if success is None and reward is not None and success_reward is not None:
        success = np.asarray(reward >= success_reward)
    episodes = []
    for i, index in enumerate(meta["episode_index"]):
        lo, hi = np.searchsorted(by_episode, index, "left"), np.searchsorted(by_episode, index, "right")
        if lo == hi:
            raise ValidationError(f"dataset: episode {index} has no frames in data/")
        tasks = tuple((meta.get("tasks") or [None] * (i + 1))[i] or ())
        content = hashlib.sha256(json.dumps([list(tasks), int(meta["length"][i])]).encode())
        for name in sorted(columns):
            content.update(name.encode() + b"\0")
            content.update(np.ascontiguousarray(columns[name][lo:hi]).tobytes())
        episodes.append(
            LeRobotEpisode(
                index=int(index),
                tasks=tasks,
                length=int(meta["length"][i]),
                state_initial=None if state is None else state[lo].tolist(),
                state_final=None if state is None else state[hi - 1].tolist(),
                success=None if success is None else bool(success[lo:hi].any()),
                episode_return=None if reward is None else float(reward[lo:hi].sum()),
                content=content.hexdigest(),
            )
        )
    return info, episodes


def success_source(info: Mapping[str, Any], success_reward: float | None) -> str | None:
    """Return where ``read_episodes`` takes success from (``"next.success"``, ``"next.reward >= 1.0"``),
    or None when the dataset cannot tell."""
    features = info.get("features", {})
    success_col = next((c for c in SUCCESS_COLUMNS if c in features), None)
    reward_col = next((c for c in REWARD_COLUMNS if c in features), None)
    if success_col:
        return success_col
    if reward_col and success_reward is not None:
        return f"{reward_col} >= {success_reward:g}"
    return None


def episode_context(
    episode: LeRobotEpisode, info: dict[str, Any], root: Path, key: str, success_from: str | None = None
) -> dict[str, Any]:
    """Return the context of one episode's memory."""
    task: dict[str, Any] = {
        "name": episode.tasks[0] if episode.tasks else "",
        "episode": episode.index,
        "frames": episode.length,
        "fps": info.get("fps"),
    }
    if len(episode.tasks) > 1:
        task["tasks"] = list(episode.tasks)
    if episode.success is not None:
        task["success"] = episode.success
    if episode.episode_return is not None:
        task["return"] = episode.episode_return
    spatial = {}
    if episode.state_initial is not None and episode.state_final is not None:
        spatial = {"state_initial": episode.state_initial, "state_final": episode.state_final}
    context: dict[str, Any] = to_json_value(
        {
            "spatial": spatial,
            "robot": {"type": info.get("robot_type")} if info.get("robot_type") else {},
            "task": task,
            "provenance": {
                "kind": "lerobot",
                "dataset": str(root),
                "codebase_version": info.get("codebase_version"),
                "episode_index": episode.index,
                "key": key,
                **({"success_from": success_from} if success_from else {}),
            },
        }
    )
    return context


def describe(episode: LeRobotEpisode) -> str:
    """Return the insight: the task text, then the outcome, episode index and length."""
    task = episode.tasks[0] if episode.tasks else "LeRobot episode"
    text = f"{task} — episode {episode.index}: {outcome_word(episode.success)} in {episode.length} frames"
    if episode.episode_return is not None:
        text += f", return {episode.episode_return:.2f}"
    return text[:300]


def dataset_identity(info: Mapping[str, Any]) -> str:
    """Return a digest of what names a dataset in ``meta/info.json``: robot type, fps and features.

    Not its path, and not the counts (episodes, frames, splits) that change as the dataset grows.
    """
    basis = {k: info.get(k) for k in ("robot_type", "fps", "features")}
    return hashlib.sha256(json.dumps(basis, sort_keys=True, default=str).encode()).hexdigest()[:32]


def episode_key(identity: str, episode: LeRobotEpisode) -> str:
    """Return the stable key of one episode: dataset identity, episode index and content digest."""
    return hashlib.sha256(f"{identity}:{episode.index}:{episode.content}".encode()).hexdigest()[:32]


def import_lerobot(
    memory: Any,
    path: str | Path,
    *,
    state_key: str = "observation.state",
    success_reward: float | None = SUCCESS_REWARD,
    collection: str | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Import every episode of a LeRobot dataset; return ``{"dataset", "episodes", "imported", "skipped",
    "success_from", "warnings", "memory_ids"}``.

    Success comes from a success column, else from the reward reaching ``success_reward`` (None: left
    unknown); ``success_from`` says which (None: unknown). Episodes already imported (same
    ``provenance.key``) are skipped. Raises ``ValidationError`` for a directory that is not a v3.x or
    v2.x dataset, before anything is written.
    """
    root = Path(path).expanduser().resolve()
    if success_reward is not None and not math.isfinite(success_reward):
        raise ValidationError(f"success_reward: expected a finite number or None, got {success_reward}")
    info, episodes = read_episodes(root, state_key, success_reward=success_reward, progress=progress)
    success_from = success_source(info, success_reward)
    identity = dataset_identity(info)
    keys = [episode_key(identity, e) for e in episodes]
    done = {str(k) for k in context_values(memory.engine, "provenance.key", keys, collection)}
    warnings = []
    if success_from and success_from not in SUCCESS_COLUMNS and not any(e.success for e in episodes):
        warnings.append(
            f"no episode's {success_from.split(' ')[0]} reaches {success_reward:g}: every episode counts as "
            "failed; set success_reward to the reward that marks success (None: success unknown)"
        )
    result: dict[str, Any] = {
        "dataset": str(root),
        "episodes": len(episodes),
        "imported": 0,
        "skipped": 0,
        "success_from": success_from,
        "warnings": warnings,
        "memory_ids": [],
    }
    # Every episode's context is built and checked before the first is written.
    max_bytes = memory.settings.max_context_bytes
    contexts = {
        key: parse_json_object("context", episode_context(episode, info, root, key, success_from), max_bytes)
        for episode, key in zip(episodes, keys, strict=True)
        if key not in done
    }
    for episode, key in zip(episodes, keys, strict=True):
        if key in done:
            result["skipped"] += 1
        else:
            context = contexts[key]
            learned = memory.learn(describe(episode), context=context, collection=collection)
            result["memory_ids"].append(learned.get("memory_id", learned.get("existing_id")))
            result["imported"] += 1
            done.add(key)
        if progress is not None:
            progress("episodes", 1, len(episodes))
    return result


def select_episodes(
    memory: Any,
    *,
    task: str = "",
    state: Sequence[float] | None = None,
    n: int = 50,
    success: bool | Literal["not_failed"] | None = NOT_FAILED,
    dataset: str | Path | None = None,
    collection: str | None = None,
) -> list[int]:
    """Return the ``episode_index`` of up to ``n`` imported episodes most like ``task`` and ``state``.

    With ``state``, the episodes whose initial state is nearest (among those relevant to ``task`` when
    it is given); without it, the best matches of ``task``. ``success``: ``"not_failed"`` (the default)
    leaves out the episodes known to have failed — on a dataset with success information that is the
    successes, on one without it every episode; True / False keeps only known successes / failures
    (``ValidationError`` when no episode in scope has a success value); None: no condition.
    ``dataset`` restricts to one imported dataset. The list goes straight into
    ``LeRobotDataset(repo_id, episodes=[...])``.
    """
    if not (success is None or success is True or success is False or success == NOT_FAILED):
        raise ValidationError(f"success: expected True, False, None or {NOT_FAILED!r}, got {success!r}")
    where: dict[str, Any] = {"provenance.kind": "lerobot"}
    if dataset is not None:
        where["provenance.dataset"] = str(Path(dataset).expanduser().resolve())
    if success is True or success is False:
        known = context_values(memory.engine, "task.success", [True, False], collection, where=where)
        if not known:
            scope = f"of {where['provenance.dataset']} " if dataset is not None else ""
            raise ValidationError(
                f"success: no imported LeRobot episode {scope}has a success value (no success column, "
                f"no reward reaching success_reward); pass success=None or {NOT_FAILED!r} to select among all"
            )
        where["task.success"] = success
    elif success == NOT_FAILED:
        where["task.success"] = {"$ne": False}
    sort = None if state is None else {"field": "spatial.state_initial", "target": [float(x) for x in state]}
    found = memory.recall(
        task, n=n, min_confidence=0.0, context_filter=where, spatial_sort=sort, collection=collection
    )
    return [int(m["context"]["provenance"]["episode_index"]) for m in found["memories"]]
