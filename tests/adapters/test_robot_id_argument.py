"""A write's own ``robot_id`` on every door: the CLI, the MCP stdio server and the REST API, each a real
process or server. The memory carries the robot named; an id that is not one is refused naming
``robot_id``, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.adapters.test_event_time import cli

from robotmem import RobotMemory

pytestmark = pytest.mark.slow


def test_cli_learn_and_save_perception_take_robot_id(tmp_path: Path) -> None:
    assert cli(tmp_path, "learn", "arm-02 saw the mug slip", "--robot-id", "arm-02").returncode == 0
    saved = cli(tmp_path, "save-perception", "arm-03 camera: mug on the shelf", "--robot-id", "arm-03")
    assert saved.returncode == 0, saved.stderr
    found = json.loads(cli(tmp_path, "recall", "", "--json", "-n", "10").stdout)
    assert {m["content"]: m["robot_id"] for m in found["memories"]} == {
        "arm-02 saw the mug slip": "arm-02",
        "arm-03 camera: mug on the shelf": "arm-03",
    }
    refused = cli(tmp_path, "learn", "never stored", "--robot-id", "arm 02")
    assert refused.returncode != 0 and refused.stderr.startswith("Error: robot_id: ")
    assert len(json.loads(cli(tmp_path, "recall", "", "--json", "-n", "10").stdout)["memories"]) == 2


def test_mcp_learn_and_save_perception_take_robot_id(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from tests.adapters.test_mcp import call, connect, fail, run

    async def scenario() -> None:
        async with connect(tmp_path, tmp_path / "m.db") as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            for name in ("learn", "save_perception"):
                assert "robot_id" in tools[name].input_schema["properties"]
            await call(session, "learn", insight="arm-02 saw the mug slip", robot_id="arm-02")
            await call(session, "save_perception", description="arm-03 camera: mug", robot_id="arm-03")
            error = await fail(session, "learn", {"insight": "never stored", "robot_id": "a,b"})
            assert "robot_id: " in error
            found = await call(session, "recall", query="", n=10)
            assert sorted(m["robot_id"] for m in found["memories"]) == ["arm-02", "arm-03"]

    run(scenario)


def test_rest_learn_and_save_perception_take_robot_id(memory: RobotMemory) -> None:
    pytest.importorskip("flask_openapi3")
    from tests.adapters.test_web_api import error_of, ok, running

    from robotmem.adapters.web import create_app

    with running(create_app(memory)) as client:
        ok(client.post("/api/learn", json={"insight": "arm-02 saw the mug slip", "robot_id": "arm-02"}))
        ok(
            client.post(
                "/api/save_perception", json={"description": "arm-03 camera: mug", "robot_id": "arm-03"}
            )
        )
        message = error_of(
            client.post("/api/learn", json={"insight": "never stored", "robot_id": ""}), 400, "invalid_input"
        )
        assert message.startswith("robot_id: ")
        found = ok(client.post("/api/recall", json={"query": "", "n": 10}))
        assert sorted(m["robot_id"] for m in found["memories"]) == ["arm-02", "arm-03"]
