"""``robotmem import-bag`` (and the other data commands): flags, map files, progress and errors."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from tests.integrations.bags import plan_episodes, write_rosbags

from robotmem.adapters.cli import main


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Any:
    """Run ``robotmem`` in this process; return ``(exit code, parsed stdout or text, stderr)``."""
    monkeypatch.setenv("ROBOTMEM_HOME", str(tmp_path / "home"))

    def run(*args: str) -> tuple[int, Any, str]:
        code = main([*args, "--embed-backend", "none", "--db", str(tmp_path / "m.db")])
        captured = capsys.readouterr()
        try:
            out: Any = json.loads(captured.out)
        except ValueError:
            out = captured.out
        return code, out, captured.err

    return run


FLAGS = [
    "--pose", "object=/object_pose", "--pose", "goal=/goal:point", "--outcome", "/outcome",
    "--joints", "/joint_states", "--task", '{"name": "push"}', "--robot", '{"id": "arm-01"}',
    "--marker", "/episode",
]  # fmt: skip


def test_import_bag_with_flags_is_idempotent_and_shows_progress(cli: Any, tmp_path: Path) -> None:
    plans = plan_episodes(10)
    bag = write_rosbags(tmp_path / "run", plans, "mcap")
    code, out, err = cli("import-bag", str(bag), *FLAGS)
    assert code == 0, err
    assert (out["storage"], out["episodes"], out["imported"]) == ("mcap", 10, 10)
    assert "episodes" in err and "10/10" in err  # the progress bar on stderr
    code, out, _ = cli("import-bag", str(bag), *FLAGS, "--no-progress")
    assert (code, out["imported"], out["skipped"]) == (0, 0, 10)
    code, found, _ = cli(
        "recall", "", "-n", "3", "--filter", '{"task.success": true}',
        "--spatial-sort", json.dumps({"field": "spatial.layout_initial", "target": plans[0].layout}),
    )  # fmt: skip
    wins = sorted((p for p in plans if p.success), key=lambda p: math.dist(p.layout, plans[0].layout))
    assert [m["task"]["episode"] for m in found["memories"]] == [p.index for p in wins[:3]]


def test_import_bag_reads_a_map_file_and_windows(cli: Any, tmp_path: Path) -> None:
    bag = write_rosbags(tmp_path / "run", plan_episodes(4), "ros1")
    map_file = tmp_path / "map.json"
    map_file.write_text(
        json.dumps({"poses": {"object": "/object_pose"}, "outcome": "/outcome"}), encoding="utf-8"
    )
    code, out, err = cli("import-bag", str(bag), "--map", str(map_file), "--window", "0:2", "--window", "3:5")
    assert code == 0, err
    assert (out["storage"], out["imported"]) == ("ros1", 2)


def test_import_bag_errors_name_the_topic_and_list_the_bag(cli: Any, tmp_path: Path) -> None:
    bag = write_rosbags(tmp_path / "run", plan_episodes(2), "sqlite3")
    code, _, err = cli("import-bag", str(bag), "--pose", "object=/nope", "--marker", "/episode")
    assert code == 2
    assert "no topic /nope; it has /episode (std_msgs/msg/String)" in err
    code, _, err = cli("import-bag", str(bag), "--pose", "object", "--marker", "/episode")
    assert (code, err.strip()) == (2, "Error: --pose: expected …=…, got 'object'")
    code, _, err = cli("import-bag", str(bag), "--marker", "/episode", "--window", "1:x")
    assert code == 2 and "--window: expected START:END seconds" in err


def test_export_mcap_writes_the_recalled_episodes(cli: Any, tmp_path: Path) -> None:
    from rosbags.highlevel import AnyReader

    bag = write_rosbags(tmp_path / "run", plan_episodes(6), "sqlite3")
    code, imported, err = cli("import-bag", str(bag), *FLAGS, "--no-progress")
    assert code == 0, err
    out = tmp_path / "episode.mcap"
    code, summary, err = cli("export-mcap", str(out), "--session-id", imported["session_ids"][2])
    assert code == 0, err
    assert summary["memories"] == 2 and "/robotmem/joint_states" in summary["topics"]
    with AnyReader([out]) as reader:
        assert sum(1 for _ in reader.messages()) == summary["messages"]
    code, _, err = cli("export-mcap", str(out))
    assert code == 2 and "exists" in err


def test_import_lerobot_imports_the_fixture_once(cli: Any) -> None:
    fixture = Path(__file__).parents[2] / "integrations" / "data" / "lerobot_push" / "dataset"
    code, out, err = cli("import-lerobot", str(fixture))
    assert code == 0, err
    assert (out["episodes"], out["imported"]) == (10, 10) and "10/10" in err
    code, out, _ = cli("import-lerobot", str(fixture), "--no-progress", "--state-key", "observation.state")
    assert (code, out["skipped"]) == (0, 10)
    code, _, err = cli("import-lerobot", str(fixture.parent))
    assert code == 2 and "no meta/info.json" in err
