"""A command whose optional extra is missing says which extra to install, in one line, exit 2.

Each test runs the real command in a subprocess where the extra's modules cannot be imported: a
``sitecustomize`` put first on ``PYTHONPATH`` installs a meta-path finder that refuses the named modules,
as a core-only install would. ``robotmem`` with no command prints the help on a terminal (a real pseudo
terminal) and serves MCP when stdin is a pipe.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

# Spawns processes; left out of `make test-fast`.
pytestmark = pytest.mark.slow

BLOCKER = """
import os, sys
from importlib.abc import MetaPathFinder

BLOCKED = set(filter(None, os.environ.get("BLOCK_MODULES", "").split(",")))


class Blocker(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Blocker())
"""


def run_without(
    tmp_path: Path, blocked: str, *args: str, stdin: int | None = subprocess.DEVNULL
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m robotmem ARGS`` with the modules ``blocked`` (comma-separated) not importable."""
    site = tmp_path / "blocker"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "BLOCK_MODULES": blocked,
        "ROBOTMEM_HOME": str(tmp_path / "home"),
        "ROBOTMEM_EMBED_BACKEND": "hash",
    }
    return subprocess.run(
        [sys.executable, "-m", "robotmem", *args],
        env=env,
        stdin=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_names_extra(done: subprocess.CompletedProcess[str], extra: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("Error: ") and f"pip install 'robotmem[{extra}]'" in lines[0]
    assert "Traceback" not in done.stderr


def test_the_blocker_really_blocks(tmp_path: Path) -> None:
    run_without(tmp_path, "", "--help")  # writes the blocker
    direct = subprocess.run(
        [sys.executable, "-c", "import flask"],
        env={**os.environ, "PYTHONPATH": str(tmp_path / "blocker"), "BLOCK_MODULES": "flask"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert direct.returncode == 1 and "No module named 'flask'" in direct.stderr


@pytest.mark.parametrize(
    ("blocked", "extra", "args"),
    [
        ("flask,flask_openapi3,waitress", "web", ["web", "--port", "0"]),
        ("mcp", "mcp", ["mcp"]),
        ("mcp", "mcp", []),  # no command, stdin not a terminal: the MCP server
        ("rosbags,mcap", "ros", ["import-bag", "missing.bag"]),
        ("rosbags,mcap", "ros", ["export-mcap", "out.mcap"]),
        ("pyarrow", "lerobot", ["import-lerobot", "missing-dataset"]),
    ],
)
def test_a_missing_extra_is_one_error_line(tmp_path: Path, blocked: str, extra: str, args: list[str]) -> None:
    assert_names_extra(run_without(tmp_path, blocked, *args), extra)


def test_core_commands_run_without_any_extra(tmp_path: Path) -> None:
    everything = "mcp,flask,flask_openapi3,waitress,rosbags,mcap,pyarrow,psycopg,gymnasium,fastembed"
    learned = run_without(tmp_path, everything, "learn", "grip the cup at 12 N")
    assert learned.returncode == 0, learned.stderr
    found = run_without(tmp_path, everything, "recall", "cup", "--json")
    assert found.returncode == 0 and '"total": 1' in found.stdout


def test_no_command_on_a_terminal_prints_help(tmp_path: Path) -> None:
    controller, terminal = pty.openpty()
    try:
        done = run_without(tmp_path, "", stdin=terminal)
    finally:
        os.close(terminal)
        os.close(controller)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: robotmem")
    assert "recall" in done.stdout and "mcp" in done.stdout


CORE_PYTHON = os.environ.get("ROBOTMEM_CORE_PYTHON")


@pytest.mark.skipif(
    not CORE_PYTHON, reason="ROBOTMEM_CORE_PYTHON names no Python of a venv with only the core installed"
)
def test_a_core_only_install_names_each_extra(tmp_path: Path) -> None:
    """The same in a real venv where only ``pip install robotmem`` ran (``python -m venv v && v/bin/pip
    install .``, then ``ROBOTMEM_CORE_PYTHON=v/bin/python``)."""
    env = {**os.environ, "ROBOTMEM_HOME": str(tmp_path / "home"), "ROBOTMEM_EMBED_BACKEND": "hash"}
    for extra, args in (("web", ["web"]), ("mcp", ["mcp"]), ("mcp", []), ("ros", ["import-bag", "x.bag"])):
        done = subprocess.run(
            [str(CORE_PYTHON), "-m", "robotmem", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert_names_extra(done, extra)
    demo = subprocess.run(
        [str(CORE_PYTHON), "-m", "robotmem", "demo"], env=env, capture_output=True, text=True, timeout=300
    )
    assert demo.returncode == 0 and "Traceback" not in demo.stderr, demo.stderr
