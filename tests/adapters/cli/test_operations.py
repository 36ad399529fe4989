"""The robotmem command, run as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# Spawns processes or servers; left out of `make test-fast`.
pytestmark = pytest.mark.slow


def run(tmp_path: Path, *args: str, backend: str = "hash") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROBOTMEM_HOME": str(tmp_path / "home"), "ROBOTMEM_EMBED_BACKEND": backend}
    return subprocess.run(
        [sys.executable, "-m", "robotmem", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_demo_prints_each_step_and_hybrid_mode(tmp_path: Path) -> None:
    result = run(tmp_path, "demo", backend="auto")
    assert result.returncode == 0, result.stderr
    for step in ("start_session", "learn", "recall", "save_perception", "end_session", "doctor"):
        assert f"# {step}" in result.stdout
    assert '"mode": "hybrid"' in result.stdout
    assert "grip_force=12.5N yields highest grasp success rate" in result.stdout
    assert not (tmp_path / "home" / "memory.db").exists()


def test_operations_round_trip_through_the_cli(tmp_path: Path) -> None:
    created = json.loads(
        run(tmp_path, "learn", "never exceed 20 N on glass", "--context", '{"robot": {"id": "a1"}}').stdout
    )
    assert created["status"] == "created" and created["auto_inferred"]["category"] == "constraint"
    found = json.loads(
        run(tmp_path, "recall", "glass force", "--filter", '{"robot.id": "a1"}', "-n", "3").stdout
    )
    assert [m["id"] for m in found["memories"]] == [created["memory_id"]]
    updated = json.loads(
        run(tmp_path, "update", str(created["memory_id"]), "never exceed 15 N on glass").stdout
    )
    assert updated["old_content"] == "never exceed 20 N on glass"
    forgotten = json.loads(
        run(tmp_path, "forget", str(created["memory_id"]), "--reason", "wrong limit").stdout
    )
    assert forgotten["status"] == "forgotten"
    doctor = json.loads(run(tmp_path, "doctor").stdout)
    assert doctor["ok"] and doctor["memories"] == {"total": 1, "active": 0}


def test_errors_go_to_stderr_with_nonzero_exit(tmp_path: Path) -> None:
    result = run(tmp_path, "recall", "cup", "--filter", '{"x": {"$less": 1}}')
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("Error: context_filter['x']: unknown operator '$less'")
    missing = run(tmp_path, "forget", "12345", "--reason", "x")
    assert missing.returncode == 2 and "memory_id 12345: no memory with this id" in missing.stderr


def test_learn_keeps_a_lesson_and_its_opposite_through_the_cli(tmp_path: Path) -> None:
    lessons = [
        "it is safe to move the arm while the safety door is open",
        "it is unsafe to move the arm while the safety door is open",
        "安全门打开时允许移动机械臂",
        "安全门打开时禁止移动机械臂",
    ]
    results = [json.loads(run(tmp_path, "learn", text, backend="auto").stdout) for text in lessons]
    assert [r["status"] for r in results] == ["created"] * 4
    repeat = json.loads(
        run(
            tmp_path, "learn", "It is UNSAFE to move the arm, while the safety door is open.", backend="auto"
        ).stdout
    )
    assert (repeat["status"], repeat["existing_id"]) == ("duplicate", results[1]["memory_id"])


def test_opposites_stay_two_lessons_and_filler_variants_merge_through_the_cli(tmp_path: Path) -> None:
    def call(*args: str) -> dict[str, Any]:
        result = run(tmp_path, *args)
        assert result.returncode == 0, result.stderr
        return dict(json.loads(result.stdout))

    session = call("start-session")["session_id"]
    opposites = [
        "Use a large gripper for the red box",
        "Use a small gripper for the red box",
        "The clutch is engaged during homing",
        "The clutch is released during homing",
        "门是开的",
        "门是关的",
        "开门时不要移动机械臂",
        "关门时不要移动机械臂",
    ]
    learned = [call("learn", text, "--session-id", session) for text in opposites]
    assert [r["status"] for r in learned] == ["created"] * len(opposites)
    for variant, original in [
        ("Most importantly, use a large gripper for the red box", 0),
        ("Right, the clutch is released during homing.", 3),
        ("如上所述，门是开的", 4),
        ("总之，关门时不要移动机械臂吧", 7),
    ]:
        repeat = call("learn", variant, "--session-id", session)
        assert (repeat["status"], repeat["existing_id"]) == ("duplicate", learned[original]["memory_id"])
    # One lesson with filler words: the repeats are duplicates at learn however much filler they add.
    first = call(
        "learn", "the cup slipped when the gripper closed too fast on the wet handle", "--session-id", session
    )
    for text in (
        "Basically, the cup really slipped when the gripper closed too fast on the wet handle, as expected, of course",
        "Note: the cup actually just slipped when the gripper closed too fast on the wet handle, as usual, honestly",
    ):
        repeat = call("learn", text, "--session-id", session)
        assert (repeat["status"], repeat["existing_id"]) == ("duplicate", first["memory_id"])

    ended = call("end-session", session)

    assert ended["consolidated"]["superseded_count"] == 0
    assert call("doctor")["memories"] == {"total": len(opposites) + 1, "active": len(opposites) + 1}
