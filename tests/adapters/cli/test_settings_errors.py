"""A bad setting stops every command with exactly one ``Error:`` line naming it, and no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.test_config import BAD_VALUES

pytestmark = pytest.mark.slow


def run_with(
    tmp_path: Path, variable: str, value: str, command: list[str]
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROBOTMEM_HOME": str(tmp_path), "ROBOTMEM_EMBED_BACKEND": "none", variable: value}
    return subprocess.run(
        [sys.executable, "-m", "robotmem", *command],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def assert_one_error_line(done: subprocess.CompletedProcess[str], setting: str, tmp_path: Path) -> None:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("Error: ") and setting in lines[0], done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert not (tmp_path / "memory.db").exists()


@pytest.mark.parametrize(("variable", "value", "setting"), BAD_VALUES)
def test_the_cli_prints_one_error_line_for_a_bad_setting(
    tmp_path: Path, variable: str, value: str, setting: str
) -> None:
    assert_one_error_line(run_with(tmp_path, variable, value, ["recall", "grip"]), setting, tmp_path)


@pytest.mark.parametrize("command", [["web", "--port", "0"], ["mcp"], ["learn", "a lesson"]])
def test_servers_refuse_to_start_with_a_bad_setting(tmp_path: Path, command: list[str]) -> None:
    done = run_with(tmp_path, "ROBOTMEM_WEB_TOKEN", " spaced ", command)
    assert_one_error_line(done, "web_token", tmp_path)
    done = run_with(tmp_path, "ROBOTMEM_WEB_TOKEN", "jeton-ロボット", command)
    assert_one_error_line(done, "web_token", tmp_path)
    assert "Latin-1" in done.stderr and "ロボット" not in done.stderr
    done = run_with(tmp_path, "ROBOTMEM_DEDUP_JACCARD", "nan", command)
    assert_one_error_line(done, "dedup_jaccard", tmp_path)
