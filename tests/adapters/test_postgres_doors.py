"""The CLI, the web server and the MCP server open a PostgreSQL store by ``--db postgresql://...`` or
``ROBOTMEM_DATABASE_URL``: each a real process against a database of the test cluster."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from tests.conftest import ENGINES

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif("postgres" not in ENGINES, reason="ROBOTMEM_TEST_ENGINES leaves PostgreSQL out"),
]
# Differ between two stores fed the same calls: times, random ids, the robot derived per store, timings.
VOLATILE = {"created_at", "updated_at", "last_accessed", "ended_at", "session_id", "query_ms",
            "access_count", "robot_id", "uid", "since", "last_at", "duration_s", "observed_at"}  # fmt: skip


@pytest.fixture
def dsn(postgres_server: Any) -> Iterator[str]:
    """A new database on the test cluster."""
    address = str(postgres_server.create())
    yield address
    postgres_server.drop(address)


def environment(home: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "ROBOTMEM_HOME": str(home), "ROBOTMEM_EMBED_BACKEND": "hash", **extra}
    if "ROBOTMEM_DATABASE_URL" not in extra:
        env.pop("ROBOTMEM_DATABASE_URL", None)
    return env


def robotmem(*args: str, env: dict[str, str]) -> Any:
    """Run the CLI; return its parsed JSON output (it must succeed)."""
    result = subprocess.run(
        [sys.executable, "-m", "robotmem", *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def normalized(value: Any) -> Any:
    if isinstance(value, dict):
        # An episode's robot, without one in its context, is its memories' robot_id: derived per store.
        return {
            k: normalized(v)
            for k, v in value.items()
            if k not in VOLATILE and not (k == "robot" and isinstance(v, str))
        }
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


def test_cli_learns_recalls_and_exports_on_a_server_store(tmp_path: Path, dsn: str) -> None:
    env = environment(tmp_path / "home")
    context = json.dumps({"task": {"success": True}, "params": {"grip_force": {"value": 12.5, "unit": "N"}}})
    first = robotmem("learn", "grip_force=12.5N held the wet mug", "--context", context, "--db", dsn, env=env)
    robotmem("learn", "lidar misses glass doors in the hallway", "--db", dsn, env=env)
    again = robotmem("learn", "grip_force=12.5N held the wet mug", "--db", dsn, env=env)
    assert first["status"] == "created" and again["status"] == "duplicate"
    assert again["existing_id"] == first["memory_id"]
    found = robotmem(
        "recall", "grip force mug", "--filter", '{"params.grip_force": {"$gt": 12}}', "--db", dsn, env=env
    )
    assert [m["id"] for m in found["memories"]] == [first["memory_id"]] and found["mode"] == "hybrid"
    # The setting instead of --db: the same store.
    by_setting = environment(tmp_path / "home", ROBOTMEM_DATABASE_URL=dsn)
    assert robotmem("recall", "", "-n", "10", env=by_setting)["total"] == 2
    exported = robotmem(
        "export", str(tmp_path / "fleet.jsonl"), "--vectors", "--no-progress", "--db", dsn, env=env
    )
    assert exported["memories"] == 2 and exported["vectors"] == 2
    # The export imports into a SQLite file and exports again line for line.
    copy = str(tmp_path / "copy.db")
    robotmem("import", str(tmp_path / "fleet.jsonl"), "--no-progress", "--db", copy, env=env)
    robotmem("export", str(tmp_path / "copy.jsonl"), "--vectors", "--no-progress", "--db", copy, env=env)
    lines = [
        (tmp_path / name).read_text(encoding="utf-8").splitlines()[1:]
        for name in ("fleet.jsonl", "copy.jsonl")
    ]
    assert lines[0] == lines[1] and len(lines[0]) == 2
    assert not (tmp_path / "home" / "memory.db").exists()  # nothing went to the default file


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def web_server(store: str, home: Path) -> Iterator[httpx.Client]:
    """``robotmem web --db <store>`` in a subprocess; yield a client of it."""
    port = _free_port()
    env = environment(home)
    env.pop("ROBOTMEM_WEB_TOKEN", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "robotmem", "web", "--port", str(port), "--db", store],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            deadline = time.monotonic() + 60
            while True:
                try:
                    client.get("/api/stats")
                    break
                except httpx.TransportError:
                    assert process.poll() is None, process.communicate()[1]
                    assert time.monotonic() < deadline, "the web server did not start"
                    time.sleep(0.2)
            yield client
    finally:
        process.terminate()
        process.communicate(timeout=30)


def feed(client: httpx.Client) -> dict[str, Any]:
    """The same calls on each server: an episode with an outcome, places, a perception, a forget."""

    def post(name: str, **body: Any) -> Any:
        response = client.post(f"/api/{name}", json=body)
        assert response.status_code == 200, response.text
        return response.json()

    good = post("start_session", context={"task": "grasp"})["session_id"]
    first = post(
        "learn",
        insight="grip_force=12.5N lifted the mug",
        context={"task": {"success": True}, "spatial": {"object_position": [0.4, 0.1, 0.2]}},
        session_id=good,
    )["memory_id"]
    post("save_perception", description="wrist camera frame of the mug", data={"w": 64}, session_id=good)
    post("end_session", session_id=good, outcome_score=0.9)
    bad = post("start_session", context={"task": "grasp"})["session_id"]
    failed = post(
        "learn",
        insight="grip_force=3N dropped the glass",
        context={"task": {"success": False}, "spatial": {"object_position": [0.5, 0.1, 0.2]}},
        session_id=bad,
    )["memory_id"]
    post("learn", insight="never exceed 20 N on glass because it cracks", session_id=bad)
    post("end_session", session_id=bad, outcome_score=0.1)
    gone = post("learn", insight="the charger is behind the red door")["memory_id"]
    post("forget", memory_id=gone, reason="moved")
    return {"first": first, "failed": failed}


BROWSE = [
    ("/api/stats", {}),
    ("/api/memories", {}),
    ("/api/memories", {"status": "any", "limit": 2, "offset": 1}),
    ("/api/search", {"query": "grip force", "n": 5}),
    ("/api/search", {"query": "", "context_filter": '{"task.success": false}'}),
    ("/api/sessions", {}),
    ("/api/collections", {}),
    ("/api/categories", {}),
    ("/api/recent-failures", {}),
    ("/api/spatial", {"field": "spatial.object_position"}),
    ("/api/memory/1", {}),
    ("/api/memory/2", {}),
]


def test_the_web_server_browses_a_server_store_as_it_browses_a_file(tmp_path: Path, dsn: str) -> None:
    views = []
    for store in (str(tmp_path / "memory.db"), dsn):
        with web_server(store, tmp_path / "home") as client:
            ids = feed(client)
            view = {}
            for path, params in BROWSE:
                response = client.get(path, params=params)
                assert response.status_code == 200, (store, path, response.text)
                view[f"{path} {params}"] = normalized(response.json())
            doctor = client.get("/api/doctor").json()
            assert doctor["ok"] and doctor["search_mode"] == "hybrid", doctor
            page = client.get("/")
            assert page.status_code == 200 and "robotmem" in page.text.lower()
            views.append((ids, view))
    (file_ids, file_view), (server_ids, server_view) = views
    assert server_ids == file_ids
    for key, expected in file_view.items():
        assert server_view[key] == expected, json.dumps([key, server_view[key], expected])
    assert server_view["/api/spatial {'field': 'spatial.object_position'}"]["points"]


def test_mcp_learns_and_recalls_on_a_server_store(tmp_path: Path, dsn: str) -> None:
    answers: list[Any] = []

    async def session_run(args: list[str], env: dict[str, str]) -> None:
        params = StdioServerParameters(command=sys.executable, args=["-m", "robotmem", "mcp", *args], env=env)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for name, arguments in (
                ("learn", {"insight": "the lidar misses glass doors in hallway B", "context": {"floor": 2}}),
                ("learn", {"insight": "grip_force=12.5N lifted the mug"}),
                ("recall", {"query": "glass doors lidar", "context_filter": {"floor": 2}}),
            ):
                result = await session.call_tool(name, arguments)
                assert not result.is_error, result.content
                answers.append(result.structured_content)

    home = {"ROBOTMEM_HOME": str(tmp_path / "home"), "ROBOTMEM_EMBED_BACKEND": "hash"}
    if "PYTHONPATH" in os.environ:  # the server runs this checkout's code, however the tests were started
        home["PYTHONPATH"] = os.environ["PYTHONPATH"]
    anyio.run(session_run, ["--db", dsn], home)
    learned, _, recalled = answers
    assert learned["status"] == "created"
    assert [m["id"] for m in recalled["memories"]] == [learned["memory_id"]]
    # A second server given the store by the setting sees what the first wrote.
    answers.clear()
    anyio.run(session_run, [], {**home, "ROBOTMEM_DATABASE_URL": dsn})
    assert [a["status"] for a in answers[:2]] == ["duplicate", "duplicate"]
    assert answers[2]["memories"][0]["id"] == learned["memory_id"]
    assert not (tmp_path / "home" / "memory.db").exists()
