"""``robotmem import-bag`` (and the other data commands): flags, map files, progress and errors."""

from __future__ import annotations

import fcntl
import json
import math
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any

import pytest
from tests.integrations.bags import events, plan_episodes, write_detections, write_rosbags, write_stream
from tests.integrations.test_bag_objects import MUG_AFTER, patrol

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


LEROBOT_FIXTURE = Path(__file__).parents[2] / "integrations" / "data" / "lerobot_push" / "dataset"
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


def test_import_bag_reads_detections_into_objects_last_seen_finds(cli: Any, tmp_path: Path) -> None:
    bag = write_detections(tmp_path / "patrol", patrol(), "sqlite3")
    map_file = tmp_path / "map.toml"
    map_file.write_text('[objects]\ntopic = "/old"\nlabels = {"47" = "red mug"}\n', encoding="utf-8")
    code, out, err = cli(
        "import-bag", str(bag), "--map", str(map_file), "--objects", "/detections", "--window", "0:60"
    )
    assert code == 0, err
    assert out["imported"] == 1 and out["sightings"] > 0
    code, found, err = cli("last-seen", "red mug")  # the flag kept the map file's labels
    assert code == 0, err
    assert [(o["object_id"], o["position"]) for o in found["objects"]] == [("mug-3", list(MUG_AFTER))]


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


def test_imports_are_not_bound_by_the_recall_limit(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROBOTMEM_MAX_N", "5")
    bag = write_rosbags(tmp_path / "run", plan_episodes(12), "sqlite3")
    for expected in ((12, 0), (0, 12)):
        code, out, err = cli("import-bag", str(bag), *FLAGS, "--no-progress")
        assert code == 0, err
        assert (out["imported"], out["skipped"]) == expected
    for expected in ((10, 0), (0, 10)):
        code, out, err = cli("import-lerobot", str(LEROBOT_FIXTURE), "--no-progress")
        assert code == 0, err
        assert (out["imported"], out["skipped"]) == expected


def test_import_bag_refuses_a_window_outside_the_bag(cli: Any, tmp_path: Path) -> None:
    bag = write_rosbags(tmp_path / "run", plan_episodes(4), "mcap")
    code, out, err = cli("import-bag", str(bag), "--pose", "object=/object_pose", "--window", "500:600")
    assert (code, out) == (2, "")
    assert err.strip() == (
        "Error: episodes.windows: [500, 600] s holds no message of /object_pose; "
        "the bag spans [0, 11.000] s from its start"
    )
    code, found, _ = cli("recall", "", "-n", "5")
    assert (code, found["memories"]) == (0, [])


def test_import_bag_marker_mistakes_are_errors_or_warnings(cli: Any, tmp_path: Path) -> None:
    plans = plan_episodes(2)
    ints = [
        (t, at, "int", 1 if value == "start" else 0) if t == "/episode" else (t, at, kind, value)
        for t, at, kind, value in events(plans)
    ]
    bag = write_stream(tmp_path / "ints", ints, "ros1")
    code, _, err = cli("import-bag", str(bag), *FLAGS, "--no-progress")
    assert code == 2
    assert err.strip() == (
        "Error: episodes.marker: no episode on /episode (field 'data'): expected the start value 'start' "
        "and end value 'end'; its values are '1' (2×), '0' (2×)"
    )
    unclosed = [e for e in events(plans) if not (e[0] == "/episode" and e[1] == plans[1].end_ns)]
    bag = write_stream(tmp_path / "unclosed", unclosed, "sqlite3")
    code, out, err = cli("import-bag", str(bag), *FLAGS, "--no-progress")
    assert code == 0, err
    assert (out["episodes"], out["imported"], out["unclosed"]) == (2, 2, 1)
    assert err.strip() == (
        f"Warning: {bag.resolve()}: 1 episode(s) on /episode had no end marker 'end' (opened at 3.000 s); "
        "each ends at the next start or at the bag's end"
    )


def test_import_lerobot_takes_a_success_reward(cli: Any, tmp_path: Path) -> None:
    from tests.integrations.test_lerobot import rewritten

    plain = rewritten(tmp_path / "plain", drop=("next.success",))
    code, out, err = cli("import-lerobot", str(plain), "--success-reward", "-0.05", "--no-progress")
    assert code == 0, err
    assert (out["imported"], out["success_from"], out["warnings"]) == (10, "next.reward >= -0.05", [])
    code, out, err = cli("import-lerobot", str(plain), "--success-reward", "none", "--collection", "b")
    assert code == 0, err
    assert out["success_from"] is None
    code, out, err = cli("import-lerobot", str(plain), "--collection", "c", "--no-progress")
    assert code == 0 and out["success_from"] == "next.reward >= 1"
    assert err.startswith(f"Warning: {plain.resolve()}: no episode's next.reward reaches 1")
    code, _, err = cli("import-lerobot", str(plain), "--success-reward", "high")
    assert (code, err.strip()) == (2, "Error: --success-reward: expected a number or 'none', got 'high'")


def _run_with_stderr(args: list[str], home: Path, *, terminal: bool) -> tuple[int, str]:
    """Run ``robotmem`` in a subprocess with stderr on a pseudo-terminal or a pipe; return code, stderr."""
    env = {**os.environ, "ROBOTMEM_HOME": str(home)}
    command = [sys.executable, "-m", "robotmem", *args]
    if not terminal:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        return done.returncode, done.stderr
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 160, 0, 0))  # a 160-column terminal
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closes when the process ends
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return process.wait(timeout=120), b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.slow
def test_reading_a_bag_shows_progress_on_a_terminal_only(tmp_path: Path) -> None:
    bag = write_rosbags(tmp_path / "run", plan_episodes(3), "mcap")
    messages = 3 * (2 * 2 + 3 + 1 + 6 + 1)  # markers read twice, poses, goal, joint states, outcome
    for terminal, db in ((True, "tty.db"), (False, "pipe.db")):
        args = ["import-bag", str(bag), *FLAGS, "--embed-backend", "none", "--db", str(tmp_path / db)]
        code, err = _run_with_stderr(args, tmp_path / "home", terminal=terminal)
        assert code == 0, err
        assert "episodes" in err and "3/3" in err
        assert (f"{messages}/{messages}" in err and "message" in err) is terminal
        code, err = _run_with_stderr([*args, "--no-progress"], tmp_path / "home", terminal=terminal)
        assert (code, err) == (0, "")
