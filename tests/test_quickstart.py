"""The README quick start runs as written, offline, with the default model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

QUICK_START = """
from robotmem import learn, recall, save_perception, start_session, end_session
session = start_session(context='{"robot_id": "arm-01", "task": {"name": "push"}}')
learn(insight="grip_force=12.5N yields highest grasp success rate",
      context='{"params": {"grip_force": {"value": 12.5, "unit": "N"}}, "task": {"success": true}}')
memories = recall(query="grip force parameters", context_filter='{"task.success": true}',
                  spatial_sort='{"field": "spatial.position", "target": [1.3, 0.7, 0.42]}')
save_perception(description="Grasp trajectory: 30 steps, success", perception_type="procedural",
                data='{"sampled_actions": [[0.1, -0.3, 0.05, 0.8]]}')
end_session(session_id=session["session_id"])
"""

CHECKS = """
import json
assert memories["mode"] == "hybrid", memories
assert [m["content"] for m in memories["memories"]] == ["grip_force=12.5N yields highest grasp success rate"]
assert memories["memories"][0]["score"] == 1.0
ended = end_session
print(json.dumps({"ok": True}))
"""


@pytest.mark.slow
def test_readme_quick_start_runs_as_written_offline(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    assert QUICK_START.strip() in readme
    env = {
        **os.environ,
        "ROBOTMEM_HOME": str(tmp_path / "home"),
        "HF_HUB_OFFLINE": "1",
        "NO_PROXY": "*",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
    }
    result = subprocess.run(
        [sys.executable, "-c", QUICK_START + CHECKS], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert '"ok": true' in result.stdout
    assert (tmp_path / "home" / "memory.db").is_file()


def test_quick_start_with_dict_arguments(memory) -> None:  # type: ignore[no-untyped-def]
    session = memory.start_session(context={"robot_id": "arm-01", "task": {"name": "push"}})
    created = memory.learn(
        insight="grip_force=12.5N yields highest grasp success rate",
        context={"params": {"grip_force": {"value": 12.5, "unit": "N"}}, "task": {"success": True}},
    )
    assert created["status"] == "created"
    found = memory.recall(
        query="grip force parameters",
        context_filter={"task.success": True},
        spatial_sort={"field": "spatial.position", "target": [1.3, 0.7, 0.42]},
    )
    assert [m["id"] for m in found["memories"]] == [created["memory_id"]]
    perception = memory.save_perception(
        description="Grasp trajectory: 30 steps, success",
        perception_type="procedural",
        data={"sampled_actions": [[0.1, -0.3, 0.05, 0.8]]},
    )
    assert perception["has_embedding"] is True
    ended = memory.end_session(session_id=session["session_id"])
    assert ended["summary"] == {
        "memory_count": 2,
        "by_type": {"fact": 1, "perception": 1},
        "by_category": {"parameter": 1, "perception": 1},
    }
