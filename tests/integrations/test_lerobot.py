"""LeRobot v3.0 import and episode selection on a fixture written by LeRobot's own writer."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from robotmem import RobotMemory, ValidationError
from robotmem.config import Settings
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
    with pytest.raises(ValidationError, match="has no meta/episodes.jsonl"):
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


def rewritten(target: Path, *, episodes: int = 10, drop: tuple[str, ...] = ()) -> Path:
    """A copy of the fixture (by this test) holding its first ``episodes`` episodes, without the frame
    columns ``drop``; ``meta/info.json`` counts and features follow."""
    shutil.copytree(FIXTURE, target)
    info = json.loads((target / "meta" / "info.json").read_text())
    for column in drop:
        info["features"].pop(column)
    frames_file = target / "data" / "chunk-000" / "file-000.parquet"
    frames = pq.read_table(frames_file)
    kept = [r for r, e in enumerate(frames["episode_index"].to_pylist()) if e < episodes]
    frames = frames.take(kept).drop_columns(list(drop))
    pq.write_table(frames, frames_file)
    meta_file = target / "meta" / "episodes" / "chunk-000" / "file-000.parquet"
    meta = pq.read_table(meta_file)
    pq.write_table(meta.take(list(range(episodes))), meta_file)
    info.update(total_episodes=episodes, total_frames=len(kept), splits={"train": f"0:{episodes}"})
    (target / "meta" / "info.json").write_text(json.dumps(info, indent=4))
    return target


def test_without_a_success_column_success_comes_from_the_reward(memory: RobotMemory, tmp_path: Path) -> None:
    plain = rewritten(tmp_path / "no_success", drop=("next.success",))
    # The fixture's reward is minus the distance to the goal and success is being within 5 cm of it:
    # the reward reaching -0.05 gives the same episodes as the success column.
    result = import_lerobot(memory, plain, success_reward=-0.05, collection="reward")
    assert (result["imported"], result["success_from"], result["warnings"]) == (
        10,
        "next.reward >= -0.05",
        [],
    )
    known = truth()
    for memory_id in result["memory_ids"]:
        detail = memory.get_memory(memory_id)
        assert detail["task"]["success"] is known[detail["context"]["provenance"]["episode_index"]]["success"]
        assert detail["context"]["provenance"]["success_from"] == "next.reward >= -0.05"
    target = [0.1, -0.1, 0.2, 0.0]
    assert select_episodes(memory, state=target, n=4, collection="reward") == brute_force(target, 4)
    # The default threshold, 1.0, is never reached by this reward: said so, every episode failed.
    default = import_lerobot(memory, plain, collection="default_threshold")
    assert default["success_from"] == "next.reward >= 1"
    assert default["warnings"] == [
        "no episode's next.reward reaches 1: every episode counts as failed; set success_reward to the reward "
        "that marks success (None: success unknown)"
    ]
    unknown = import_lerobot(memory, plain, success_reward=None, collection="unknown")
    assert unknown["success_from"] is None
    assert all("success" not in memory.get_memory(m)["task"] for m in unknown["memory_ids"])


def test_select_episodes_on_a_dataset_without_success_information(
    memory: RobotMemory, tmp_path: Path
) -> None:
    plain = rewritten(tmp_path / "plain", drop=("next.success", "next.reward"))
    import_lerobot(memory, plain, collection="plain")
    target = [0.0, 0.0, 0.0, 0.0]
    everyone = sorted(truth().items(), key=lambda et: (math.dist(et[1]["first"], target), et[0]))
    # The default leaves out known failures; nothing is known here, so every episode competes.
    assert select_episodes(memory, state=target, n=5, collection="plain") == [e for e, _ in everyone[:5]]
    assert select_episodes(memory, state=target, n=5, success=None, collection="plain") == [
        e for e, _ in everyone[:5]
    ]
    for wanted in (True, False):
        with pytest.raises(ValidationError, match="success: no imported LeRobot episode has a success value"):
            select_episodes(memory, state=target, success=wanted, collection="plain")
    with pytest.raises(ValidationError, match=r"success: no imported LeRobot episode of .*plain has"):
        select_episodes(memory, state=target, success=True, dataset=plain, collection="plain")
    with pytest.raises(ValidationError, match="success: expected True, False, None or 'not_failed'"):
        select_episodes(memory, state=target, success="yes", collection="plain")  # type: ignore[arg-type]


def test_a_dataset_that_grew_imports_only_its_new_episodes(memory: RobotMemory, tmp_path: Path) -> None:
    early = rewritten(tmp_path / "early", episodes=6)
    assert import_lerobot(memory, early)["imported"] == 6
    grown = import_lerobot(memory, FIXTURE)  # meta/info.json differs: 10 episodes, 120 frames
    assert (grown["imported"], grown["skipped"]) == (4, 6)
    new = sorted(memory.get_memory(m)["context"]["provenance"]["episode_index"] for m in grown["memory_ids"])
    assert new == [6, 7, 8, 9]
    # A changed episode is another episode; its unchanged neighbours are still the same.
    edited = tmp_path / "edited"
    shutil.copytree(FIXTURE, edited)
    frames_file = edited / "data" / "chunk-000" / "file-000.parquet"
    frames = pq.read_table(frames_file)
    state = frames["observation.state"].to_pylist()
    first_of_2 = frames["episode_index"].to_pylist().index(2)
    state[first_of_2] = [x + 0.5 for x in state[first_of_2]]
    column = frames.schema.get_field_index("observation.state")
    pq.write_table(
        frames.set_column(column, "observation.state", pa.array(state, frames.schema.field(column).type)),
        frames_file,
    )
    again = import_lerobot(memory, edited)
    assert (again["imported"], again["skipped"]) == (1, 9)


def test_the_duplicate_lookup_is_not_bound_by_the_recall_limit(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", max_n=5)
    with RobotMemory(tmp_path / "small.db", embed_backend="none", settings=settings) as mem:
        assert import_lerobot(mem, FIXTURE)["imported"] == 10
        again = import_lerobot(mem, FIXTURE)
        assert (again["imported"], again["skipped"]) == (0, 10)


@pytest.mark.parametrize(
    ("info", "message"),
    [
        (b"\xff\xfe{", "meta/info.json is not UTF-8 text"),
        (b'{"codebase_version": "v3.0",', "meta/info.json is not valid JSON"),
        (b"[1, 2]", "meta/info.json must hold a JSON object, got list"),
        (b'{"codebase_version": 3}', "codebase_version must be text"),
        (b'{"codebase_version": "v3.0", "features": []}', "features must be an object of feature objects"),
        (
            b'{"codebase_version": "v3.0", "features": {"a": 1}}',
            "features must be an object of feature objects",
        ),
        (b'{"codebase_version": "v3.0", "fps": "ten"}', "fps must be a number above 0"),
        (b'{"codebase_version": "v3.0", "fps": NaN}', "NaN is not a number JSON allows"),
        (b'{"codebase_version": "v3.0", "robot_type": {"x": 1}}', "robot_type must be text"),
    ],
)
def test_a_malformed_info_json_is_refused_naming_the_file_and_the_key(
    memory: RobotMemory, tmp_path: Path, info: bytes, message: str
) -> None:
    dataset = tmp_path / "dataset"
    shutil.copytree(FIXTURE, dataset)
    (dataset / "meta" / "info.json").write_bytes(info)
    before = memory.stats()
    with pytest.raises(ValidationError, match=message):
        import_lerobot(memory, dataset)
    assert memory.stats() == before


def test_frame_columns_of_the_wrong_kind_are_refused_before_anything_is_written(
    memory: RobotMemory, tmp_path: Path
) -> None:
    dataset = tmp_path / "dataset"
    shutil.copytree(FIXTURE, dataset)
    data_file = dataset / "data" / "chunk-000" / "file-000.parquet"
    table = pq.read_table(data_file)
    ragged = pa.array([[0.0, 1.0], [0.0]] * (table.num_rows // 2))
    column = table.column_names.index("observation.state")
    pq.write_table(table.set_column(column, "observation.state", ragged), data_file)
    before = memory.stats()
    with pytest.raises(ValidationError, match="'observation.state' column of data/ must hold numbers"):
        import_lerobot(memory, dataset)
    pq.write_table(table.drop_columns(["index"]), data_file)
    with pytest.raises(ValidationError, match="the data/ files have no 'index' column"):
        import_lerobot(memory, dataset)
    (dataset / "data" / "chunk-000" / "file-000.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(ValidationError, match="is not a readable Parquet file"):
        import_lerobot(memory, dataset)
    assert memory.stats() == before


def test_an_episode_the_memory_refuses_stops_the_import_before_the_first_is_written(
    memory: RobotMemory, tmp_path: Path
) -> None:
    """The last episode's task text makes its context too large: no episode is stored."""
    dataset = tmp_path / "dataset"
    shutil.copytree(FIXTURE, dataset)
    meta_file = dataset / "meta" / "episodes" / "chunk-000" / "file-000.parquet"
    meta = pq.read_table(meta_file)
    tasks = meta["tasks"].to_pylist()
    tasks[-1] = ["push " + "x" * 2000]
    pq.write_table(meta.set_column(meta.column_names.index("tasks"), "tasks", pa.array(tasks)), meta_file)
    memory.settings = memory.settings.replace(max_context_bytes=1500)
    before = memory.stats()
    with pytest.raises(ValidationError, match="context: is .* bytes of JSON; the limit is 1500"):
        import_lerobot(memory, dataset)
    assert memory.stats() == before
