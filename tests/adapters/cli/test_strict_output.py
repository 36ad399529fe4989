"""The CLI's output and export files are strict JSON, whatever the database holds."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROBOTMEM_HOME": str(tmp_path / "home"), "ROBOTMEM_EMBED_BACKEND": "hash"}
    return subprocess.run(
        [sys.executable, "-m", "robotmem", *args], env=env, capture_output=True, text=True, timeout=120
    )


def strict(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} in output")

    return json.loads(text, parse_constant=refuse)


def test_recall_and_export_never_write_nan_or_infinity(tmp_path: Path) -> None:
    far = run(tmp_path, "learn", "the far beacon blinks", "--context", '{"spatial": {"p": [1e200, 0]}}')
    odd = run(tmp_path, "learn", "the odd beacon blinks", "--context", '{"spatial": {"p": [1, 0]}}')
    assert far.returncode == 0 and odd.returncode == 0, far.stderr + odd.stderr
    # Another program wrote numbers beyond the float range (valid JSON; Python reads them as infinity).
    with sqlite3.connect(tmp_path / "home" / "memory.db") as conn:
        conn.execute(
            "UPDATE memories SET context = :c WHERE id = :id",
            {
                "c": '{"spatial": {"p": [1, 0]}, "reading": -1e999, "peak": 1e999}',
                "id": strict(odd.stdout)["memory_id"],
            },
        )
    conn.close()
    found = run(
        tmp_path, "recall", "beacon", "--spatial-sort", '{"field": "spatial.p", "target": [-1e200, 0]}'
    )
    assert found.returncode == 0, found.stderr
    by_text = {hit["content"]: hit for hit in strict(found.stdout)["memories"]}
    assert by_text["the far beacon blinks"]["spatial_distance"] == 2e200
    assert by_text["the odd beacon blinks"]["context"]["reading"] is None
    assert by_text["the odd beacon blinks"]["context"]["peak"] is None
    exported = run(tmp_path, "export", str(tmp_path / "out.jsonl"))
    assert exported.returncode == 0, exported.stderr
    lines = (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) >= 3 and all(strict(line) is not None for line in lines)
