"""Event time on every door: the CLI, the MCP stdio server and the REST API, each as a real process or server.

Each writes memories observed at given times, asks for a window and the newest first, and gets a
``ValidationError`` naming the field for a bad time, with nothing written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from robotmem import RobotMemory

pytestmark = pytest.mark.slow

TIMES = {
    "the dock was clear at dawn": "2026-03-02T05:00:00Z",
    "the dock was blocked by a pallet at noon": "2026-03-02T12:00:00+00:00",
    "the dock was clear again in the evening": "2026-03-02T19:00:00Z",
}


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROBOTMEM_HOME": str(tmp_path / "home"), "ROBOTMEM_EMBED_BACKEND": "hash"}
    return subprocess.run(
        [sys.executable, "-m", "robotmem", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_cli_takes_observed_at_and_windows_with_relative_times(tmp_path: Path) -> None:
    for text, moment in TIMES.items():
        assert cli(tmp_path, "learn", text, "--observed-at", moment).returncode == 0
    seen = cli(
        tmp_path,
        "save-perception",
        "camera saw the pallet by the dock",
        "--context",
        '{"object": {"id": "pallet-2"}}',
        "--observed-at",
        "1772470800",  # 2026-03-02T17:00:00Z as epoch seconds
    )
    assert seen.returncode == 0, seen.stderr
    found = json.loads(
        cli(tmp_path, "recall", "dock", "--since", "2026-03-02T10:00:00Z", "--order", "recent").stdout
    )
    assert [m["content"] for m in found["memories"]] == [
        "the dock was clear again in the evening",
        "camera saw the pallet by the dock",
        "the dock was blocked by a pallet at noon",
    ]
    assert found["memories"][1]["observed_at"] == "2026-03-02T17:00:00.000000+00:00"
    # Relative to now: a memory observed now is inside -2h, and nothing was observed after now.
    assert cli(tmp_path, "learn", "the charger light is green now").returncode == 0
    recent = json.loads(cli(tmp_path, "recall", "", "--since", "-2h", "-n", "10").stdout)
    assert "the charger light is green now" in [m["content"] for m in recent["memories"]]
    later = json.loads(cli(tmp_path, "recall", "", "--since", "now", "-n", "10").stdout)
    assert later["memories"] == []
    kept = json.loads(cli(tmp_path, "recall", "", "--filter", '{"object.id": "pallet-2"}').stdout)
    assert [m["content"] for m in kept["memories"]] == ["camera saw the pallet by the dock"]

    bad = cli(tmp_path, "recall", "dock", "--since", "yesterday")
    assert bad.returncode == 2 and bad.stderr.startswith("Error: since: must be")
    before = json.loads(cli(tmp_path, "doctor").stdout)["memories"]
    naive = cli(tmp_path, "learn", "the dock light flickers", "--observed-at", "2026-03-02T05:00:00")
    assert (
        naive.returncode == 2
        and naive.stderr.startswith("Error: observed_at: ")
        and "no zone" in naive.stderr
    )
    assert json.loads(cli(tmp_path, "doctor").stdout)["memories"] == before


def test_mcp_tools_take_observed_at_since_until_and_order(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from tests.adapters.test_mcp import call, connect, fail, run

    async def scenario() -> None:
        async with connect(tmp_path, tmp_path / "m.db") as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            recall_schema = tools["recall"].input_schema["properties"]
            assert {"since", "until"} <= set(recall_schema)
            assert "recent" in json.dumps(recall_schema["order"])
            assert {"observed_at", "context"} <= set(tools["save_perception"].input_schema["properties"])
            assert "observed_at" in tools["learn"].input_schema["properties"]
            assert "observed_at" in tools["update"].input_schema["properties"]
            assert "-2h" in (tools["recall"].description or "")
            for text, moment in TIMES.items():
                await call(session, "learn", insight=text, observed_at=moment)
            await call(
                session,
                "save_perception",
                description="camera saw the pallet by the dock",
                context={"object": {"id": "pallet-2"}},
                observed_at=1772470800,
            )
            window = await call(
                session, "recall", query="dock", since="2026-03-02T10:00:00Z", until="2026-03-02T18:00:00Z"
            )
            assert {m["content"] for m in window["memories"]} == {
                "the dock was blocked by a pallet at noon",
                "camera saw the pallet by the dock",
            }
            newest = await call(session, "recall", query="", order="recent", n=2)
            assert [m["observed_at"] for m in newest["memories"]] == [
                "2026-03-02T19:00:00.000000+00:00",
                "2026-03-02T17:00:00.000000+00:00",
            ]
            error = await fail(session, "recall", {"query": "dock", "since": "now", "until": "-1h"})
            assert "since: " in error and "after until" in error
            error = await fail(
                session, "learn", {"insight": "the dock light flickers", "observed_at": "noon"}
            )
            assert "observed_at: must be" in error
            assert len((await call(session, "recall", query="", n=20))["memories"]) == 4

    run(scenario)


def test_rest_takes_observed_at_and_windows(memory: RobotMemory) -> None:
    pytest.importorskip("flask_openapi3")
    from tests.adapters.test_web_api import error_of, ok, running

    from robotmem.adapters.web import create_app

    with running(create_app(memory)) as client:
        for text, moment in TIMES.items():
            ok(client.post("/api/learn", json={"insight": text, "observed_at": moment}))
        perceived = ok(
            client.post(
                "/api/save_perception",
                json={
                    "description": "camera saw the pallet by the dock",
                    "context": {"object": {"id": "pallet-2"}},
                    "observed_at": 1772470800,
                },
            )
        )
        found = ok(
            client.post(
                "/api/recall", json={"query": "dock", "since": "2026-03-02T10:00:00Z", "order": "recent"}
            )
        )
        assert [m["content"] for m in found["memories"]] == [
            "the dock was clear again in the evening",
            "camera saw the pallet by the dock",
            "the dock was blocked by a pallet at noon",
        ]
        # The browse search takes the same parameters as query strings (epoch seconds as text too).
        searched: dict[str, Any] = ok(
            client.get("/api/search", params={"query": "dock", "until": "1772445600", "n": "10"})
        )
        assert [m["content"] for m in searched["memories"]] == ["the dock was clear at dawn"]
        ok(
            client.put(
                f"/api/memory/{perceived['memory_id']}",
                json={
                    "new_content": "camera saw the pallet by the dock door",
                    "observed_at": "2026-03-01T00:00:00Z",
                },
            )
        )
        assert ok(client.get(f"/api/memory/{perceived['memory_id']}"))["observed_at"] == (
            "2026-03-01T00:00:00.000000+00:00"
        )
        message = error_of(
            client.post("/api/recall", json={"query": "dock", "until": "2026-03-02"}), 400, "invalid_input"
        )
        assert message.startswith("until: ") and "no zone" in message
        message = error_of(
            client.post("/api/learn", json={"insight": "the dock light flickers", "observed_at": True}),
            400,
            "invalid_input",
        )
        assert message.startswith("observed_at")
        assert len(ok(client.post("/api/recall", json={"query": "", "n": 20}))["memories"]) == 4
