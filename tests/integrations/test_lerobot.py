"""LeRobot v3.0 import and episode selection on a fixture written by LeRobot's own writer."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from robotmem import RobotMemory, ValidationError
from robotmem.integrations.lerobot import import_lerobot, select_episodes

FIXTURE = Path(__file__).parent / "data" / "lerobot_push" / "dataset"


def truth() -> dict[int, dict]:
    """Each episode's first state, success and task, read straight from the parquet files."""
    frames = pq.read_table(FIXTURE / "data" / "chunk-000" / "file-000.parquet").to_pydict()
    meta = pq.read_table(FIXTURE / "meta" / "episodes" / "chunk-000" / "file-000.parquet").to_pydict()
    out: dict[int, dict] = {}
    for i, episode in enumerate(meta["episode_index"]):
        rows = [r for r, e in enumerate(frames["episode_index"]) if e == episode]
        rows.sort(key=lambda r: frames["frame_index"][r])
        out[episode] = {
            "first": frames["observation.state"][rows[0]],
            "last": frames["observation.state"][rows[-1]],
            "success": any(frames["next.success"][r] for r in rows),
            "return": sum(frames["next.reward"][r] for r in rows),
            "task": meta["tasks"][i][0],
        }
    return out


def brute_force(target: list[float], n: int, task: str | None = None) -> list[int]:
    rows = [(e, t) for e, t in truth().items() if t["success"] and (task is None or t["task"] == task)]
    return [e for e, _ in sorted(rows, key=lambda et: (math.dist(et[1]["first"], target), et[0]))[:n]]


def test_the_fixture_is_small_and_made_by_lerobot() -> None:
    info = json.loads((FIXTURE / "meta" / "info.json").read_text())
    assert info["codebase_version"] == "v3.0" and info["total_episodes"] == 10
    assert sum(f.stat().st_size for f in FIXTURE.rglob("*") if f.is_file()) < 1_000_000


def test_import_gives_one_memory_per_episode_with_state_and_success(memory: RobotMemory) -> None:
    result = import_lerobot(memory, FIXTURE)
    assert (result["episodes"], result["imported"], result["skipped"]) == (10, 10, 0)
    known = truth()
    for memory_id in result["memory_ids"]:
        detail = memory.get_memory(memory_id)
        episode = detail["context"]["provenance"]["episode_index"]
        expected = known[episode]
        assert detail["content"].startswith(expected["task"])
        assert detail["spatial"]["state_initial"] == pytest.approx(expected["first"])
        assert detail["spatial"]["state_final"] == pytest.approx(expected["last"])
        assert detail["task"]["success"] is expected["success"]
        assert detail["task"]["return"] == pytest.approx(expected["return"], rel=1e-5)
        assert detail["robot"] == {"type": "planar_pusher"}
    assert import_lerobot(memory, FIXTURE)["skipped"] == 10


@pytest.mark.parametrize("target", [[0.0, 0.0, 0.0, 0.0], [0.3, -0.2, -0.1, 0.4], [-0.5, 0.5, 0.5, -0.5]])
def test_select_episodes_matches_brute_force(memory: RobotMemory, target: list[float]) -> None:
    import_lerobot(memory, FIXTURE)
    assert select_episodes(memory, state=target, n=4) == brute_force(target, 4)
    task = "slide the cube onto the marker"
    assert select_episodes(memory, task=task, state=target, n=3) == brute_force(target, 3, task)
    failures = select_episodes(memory, state=target, n=10, success=False)
    assert sorted(failures) == sorted(e for e, t in truth().items() if not t["success"])
    assert select_episodes(memory, state=target, n=4, dataset=FIXTURE) == brute_force(target, 4)


def test_a_directory_that_is_not_a_v3_dataset_is_refused(memory: RobotMemory, tmp_path: Path) -> None:
    before = memory.stats()
    with pytest.raises(ValidationError, match="no meta/info.json"):
        import_lerobot(memory, tmp_path)
    old = tmp_path / "old"
    shutil.copytree(FIXTURE, old)
    info = json.loads((old / "meta" / "info.json").read_text())
    (old / "meta" / "info.json").write_text(json.dumps({**info, "codebase_version": "v1.6"}))
    with pytest.raises(ValidationError, match="LeRobot v1.6; robotmem reads v3.x and v2.x"):
        import_lerobot(memory, old)
    (old / "meta" / "info.json").write_text(json.dumps({**info, "codebase_version": "v2.1"}))
    with pytest.raises(ValidationError, match="cannot read the episode metadata"):
        import_lerobot(memory, old)  # a v3 directory that says v2.1 has no meta/episodes.jsonl
    assert memory.stats() == before


def v21_copy(target: Path) -> Path:
    """The fixture rewritten in the documented v2.1 layout (by this test, not by LeRobot's writer):
    meta/episodes.jsonl and meta/tasks.jsonl, one frame file per episode."""
    (target / "meta").mkdir(parents=True)
    info = json.loads((FIXTURE / "meta" / "info.json").read_text())
    info.update(
        codebase_version="v2.1",
        data_path="data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
    )
    (target / "meta" / "info.json").write_text(json.dumps(info))
    meta = pq.read_table(FIXTURE / "meta" / "episodes" / "chunk-000" / "file-000.parquet").to_pydict()
    lines = [
        json.dumps({"episode_index": e, "tasks": t, "length": n})
        for e, t, n in zip(meta["episode_index"], meta["tasks"], meta["length"], strict=True)
    ]
    (target / "meta" / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    frames = pq.read_table(FIXTURE / "data" / "chunk-000" / "file-000.parquet")
    (target / "data" / "chunk-000").mkdir(parents=True)
    episode_of = frames["episode_index"].to_pylist()
    for e in meta["episode_index"]:
        rows = [r for r, x in enumerate(episode_of) if x == e]
        pq.write_table(frames.take(rows), target / "data" / "chunk-000" / f"episode_{e:06d}.parquet")
    return target


def test_a_v21_dataset_imports_like_its_v30_original(memory: RobotMemory, tmp_path: Path) -> None:
    v30 = import_lerobot(memory, FIXTURE, collection="v30")
    v21 = import_lerobot(memory, v21_copy(tmp_path / "v21"), collection="v21")
    assert v21["imported"] == v30["imported"] == 10
    for a, b in zip(v30["memory_ids"], v21["memory_ids"], strict=True):
        old, new = memory.get_memory(a), memory.get_memory(b)
        assert (old["content"], old["spatial"], old["task"]) == (new["content"], new["spatial"], new["task"])
    target = [0.1, 0.1, -0.2, 0.2]
    assert select_episodes(memory, state=target, n=4, collection="v21") == brute_force(target, 4)
