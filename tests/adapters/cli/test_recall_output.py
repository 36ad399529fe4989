"""``robotmem recall`` for people and scripts: a table on a terminal, JSON with ``--json`` or into a pipe;
the collection searched is the one chosen, ``--all-collections`` searches every one, and the output says
where it looked. Real subprocesses on a real SQLite file; the terminal is a real pseudo terminal."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from robotmem.adapters.cli.tables import context_items, recall_table

# Spawns processes; left out of `make test-fast`.
pytestmark = pytest.mark.slow


def env_for(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "ROBOTMEM_HOME": str(tmp_path / "home"), "ROBOTMEM_EMBED_BACKEND": "hash"}


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "robotmem", *args],
        env=env_for(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done


def on_terminal(tmp_path: Path, *args: str) -> str:
    """Run the command with stdout on a pseudo terminal; return what the terminal showed."""
    controller, terminal = pty.openpty()
    errors = tmp_path / "stderr.txt"
    with errors.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "robotmem", *args],
            env=env_for(tmp_path),
            stdin=subprocess.DEVNULL,
            stdout=terminal,
            stderr=stderr,
        )
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # the other side closed: the process exited
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(controller)
    assert process.wait(timeout=120) == 0, errors.read_text()
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.fixture
def two_collections(tmp_path: Path) -> Path:
    run(tmp_path, "learn", "grip the cup at 12 N", "--context", '{"task": {"name": "pick", "success": true}}')
    run(tmp_path, "learn", "the cup slipped at 4 N grip", "--collection", "arm-01")
    return tmp_path


def test_a_terminal_gets_a_table_and_a_pipe_gets_json(two_collections: Path) -> None:
    shown = on_terminal(two_collections, "recall", "cup grip")
    lines = shown.splitlines()
    assert lines[0].startswith("1 found (") and lines[0].endswith("in collection default")
    assert lines[1].split() == ["id", "score", "relevance", "category", "content", "context"]
    assert "grip the cup at 12 N" in lines[2] and 'task.name="pick"' in lines[2] and "source" not in lines[2]
    assert "{" not in shown  # no JSON
    piped = json.loads(run(two_collections, "recall", "cup grip").stdout)
    assert piped["collections"] == ["default"] and piped["total"] == 1
    forced = json.loads(on_terminal(two_collections, "recall", "cup grip", "--json"))
    assert [m["content"] for m in forced["memories"]] == ["grip the cup at 12 N"]
    table = run(two_collections, "recall", "cup grip", "--table").stdout
    assert table.splitlines()[0].endswith("in collection default")


def test_collection_scope_is_the_chosen_one_or_all(two_collections: Path) -> None:
    arm = json.loads(run(two_collections, "recall", "cup", "--collection", "arm-01").stdout)
    assert arm["collections"] == ["arm-01"]
    assert [m["content"] for m in arm["memories"]] == ["the cup slipped at 4 N grip"]
    every = json.loads(run(two_collections, "recall", "cup", "--all-collections", "-n", "5").stdout)
    assert every["collections"] == ["arm-01", "default"]
    assert sorted(m["collection"] for m in every["memories"]) == ["arm-01", "default"]
    assert max(m["score"] for m in every["memories"]) == 1.0
    newest = json.loads(run(two_collections, "recall", "--all-collections").stdout)
    assert [m["collection"] for m in newest["memories"]] == ["arm-01", "default"]  # newest first
    oldest = json.loads(run(two_collections, "recall", "--all-collections", "--order", "time").stdout)
    assert [m["collection"] for m in oldest["memories"]] == ["default", "arm-01"]
    shown = run(two_collections, "recall", "cup", "--all-collections", "--table").stdout
    assert shown.splitlines()[0].endswith("in collections arm-01, default")


def test_the_table_shortens_content_and_context() -> None:
    result = {
        "memories": [
            {
                "id": 7,
                "score": 1.0,
                "category": "observation",
                "content": "x" * 100,
                "context": {"params": {"force": {"value": 12.5}}, "path": [1, 2, 3, 4, 5], "a": 1, "b": 2},
            }
        ],
        "total": 1,
        "mode": "hybrid",
        "query_ms": 1.0,
        "collections": ["default"],
        "warnings": ["no memory in scope carries task.sucess; did you mean task.success?"],
    }
    lines = recall_table(result).splitlines()
    assert lines[2].split()[:3] == ["7", "1.000", "observation"]
    assert "x" * 59 + "…" in lines[2] and "x" * 60 not in lines[2]
    assert lines[-1] == "warning: no memory in scope carries task.sucess; did you mean task.success?"
    assert context_items(result["memories"][0]["context"]) == [  # type: ignore[index]
        "params.force.value=12.5",
        "path=[5 items]",
        "a=1",
        "b=2",
    ]


def test_filter_warnings_and_the_session_robot_through_the_cli(tmp_path: Path) -> None:
    started = json.loads(
        run(tmp_path, "start-session", "--context", '{"robot_id": "arm-07", "task": {"name": "pick"}}').stdout
    )
    run(tmp_path, "learn", "the mug slips above 3 m/s", "--session-id", started["session_id"])
    mine = json.loads(
        run(tmp_path, "recall", "mug", "--robots", "arm-07", "--filter", '{"task.name": "pick"}').stdout
    )
    assert [m["robot_id"] for m in mine["memories"]] == ["arm-07"]
    typo = run(tmp_path, "recall", "mug", "--filter", '{"task.nme": "pick"}', "--table").stdout.splitlines()
    assert typo == [
        typo[0],
        "warning: context_filter: no memory in collection 'default' carries `task.nme`; did you mean `task.name`?",
        typo[2],
    ]
    assert typo[0].startswith("0 found")
    assert typo[2].startswith("note: no memory is in this scope")  # why nothing came back, in the table too
    as_json = json.loads(run(tmp_path, "recall", "mug", "--filter", '{"task.nme": "pick"}', "--json").stdout)
    assert as_json["warnings"] == [typo[1].removeprefix("warning: ")]
