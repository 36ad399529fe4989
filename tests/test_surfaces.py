"""The same calls through Python, MCP, REST and CLI give the same JSON and the same errors, on either engine
(the processes are given the store by ``--db``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from benchmarks.web_render import served

import robotmem
from robotmem import RobotMemError, RobotMemory
from robotmem.config import Settings

# Spawns processes or servers; left out of `make test-fast`.
pytestmark = pytest.mark.slow

# robot_id is derived per database file; uid is random per memory.
VOLATILE = {
    "created_at",
    "observed_at",
    "updated_at",
    "last_accessed",
    "session_id",
    "query_ms",
    "access_count",
    "robot_id",
    "uid",
}
SCRIPT: list[tuple[str, dict[str, Any]]] = [
    (
        "learn",
        {
            "insight": "grip_force=12.5N yields highest grasp success rate",
            "context": {
                "params": {"grip_force": {"value": 12.5, "unit": "N"}},
                "task": {"success": True},
                "spatial": {"position": [1.3, 0.7, 0.42]},
            },
        },
    ),
    (
        "learn",
        {"insight": "机器人抓取杯子时夹爪力度设为12.5牛最好", "context": '{"task": {"success": false}}'},
    ),
    ("learn", {"insight": "grip_force=12.5N yields highest grasp success rate"}),
    ("save_perception", {"description": "wrist camera frame of the mug", "data": {"w": 64, "h": 48}}),
    (
        "recall",
        {
            "query": "grip force",
            "context_filter": {"task.success": True},
            "spatial_sort": {"field": "spatial.position", "target": [1.3, 0.7, 0.4]},
        },
    ),
    ("recall", {"query": "杯子", "n": 3}),
    ("update", {"memory_id": 2, "new_content": "机器人抓取杯子时夹爪力度设为10牛最好"}),
    ("forget", {"memory_id": 1, "reason": "measured with a broken sensor"}),
    ("recall", {"query": "grip force", "include_data": True}),
    ("recall", {"query": "杯子", "robots": "self"}),
    (
        "learn",
        {
            "insight": "saw the red mug on the kitchen counter",
            "context": {
                "object": {"id": "mug-3", "label": "red mug"},
                "spatial": {"position": [2.0, 1.0, 0.9]},
            },
        },
    ),
    (
        "learn",
        {
            "insight": "saw the pallet by the odom dock",
            "context": {
                "object": {"id": "pallet-1"},
                "spatial": {"position": [2.0, 1.0, 0.0], "frame": "odom"},
            },
        },
    ),
    ("recall", {"query": "", "region": {"center": [2.0, 1.0], "radius": 0.5, "frame": "map"}}),
    ("recall", {"query": "", "region": {"min": [1, 0, -1], "max": [3, 2, 1], "frame": "odom"}}),
    ("last_seen", {"object_id": "mug-3"}),
    ("last_seen", {"query": "the red mug"}),
    ("last_seen", {"query": "a purple giraffe"}),
    ("around", {"position": [2.0, 1.0, 0.5], "radius": 1.0}),
    # Times before now count back from each door's clock: the sightings above are minutes old.
    ("last_seen", {"object_id": "mug-3", "since": "-1d", "until": "now"}),
    ("last_seen", {"object_id": "mug-3", "as_of": "-2h"}),
    ("around", {"position": [2.0, 1.0, 0.5], "radius": 1.0, "since": "-1.5h"}),
    # A repeat that differs only in function words is a duplicate on every door.
    ("learn", {"insight": "Grip mug with 12 N force"}),
    ("learn", {"insight": "Grip the mug with 12 N of force"}),
    ("recall", {"query": "wrist camera frame", "min_relevance": 0.5}),
    ("recall", {"query": "zebra quantum xylophone", "min_relevance": 0.5}),  # nothing relevant: a note
]
BAD: list[tuple[str, dict[str, Any], str]] = [
    ("recall", {"query": "cup", "context_filter": {"task.success": {"$less": 1}}}, "invalid_input"),
    ("learn", {"insight": "x" * 301}, "invalid_input"),
    ("recall", {"query": "cup", "robots": "arm 1"}, "invalid_input"),
    ("recall", {"query": "cup", "min_relevance": 1.5}, "invalid_input"),
    ("forget", {"memory_id": 999, "reason": "gone"}, "not_found"),
    ("recall", {"query": "", "region": {"center": [1, 2], "radius": -1}}, "invalid_input"),
    ("recall", {"query": "", "region": {"min": [0, 0], "max": [1, 1, 1]}}, "invalid_input"),
    ("last_seen", {"query": "mug", "since": "yesterday"}, "invalid_input"),
    (
        "last_seen",
        {"query": "mug", "since": "2026-03-02T00:00:00Z", "until": "2026-03-01T00:00:00Z"},
        "invalid_input",
    ),
    ("around", {"position": [1.0, 2.0], "radius": 1.0, "frame": ""}, "invalid_input"),
    ("last_seen", {"object_id": "mug-3", "as_of": "-2x"}, "invalid_input"),
    ("around", {"position": [1.0, 2.0], "radius": 1.0, "since": "soon"}, "invalid_input"),
]


def normalized(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


Outcome = tuple[str, Any]  # ("ok", result) or ("error", (code, message))


def through_python(path: Any, settings: Settings) -> list[Outcome]:
    out: list[Outcome] = []
    with RobotMemory(path, embed_backend="hash", settings=settings) as mem:
        for name, args in [*SCRIPT, *((n, a) for n, a, _ in BAD)]:
            try:
                out.append(("ok", getattr(mem, name)(**args)))
            except RobotMemError as exc:
                out.append(("error", (exc.code, exc.message)))
    return out


def through_mcp(path: Any, home: Path) -> list[Outcome]:
    out: list[Outcome] = []

    from mcp import ClientSession, StdioServerParameters, stdio_client  # here: a fast run does not load it

    async def session_run() -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "robotmem", "mcp", "--db", str(path)],
            env={
                "PYTHONPATH": str(Path(robotmem.__file__).resolve().parents[1]),  # the robotmem under test
                "ROBOTMEM_HOME": str(home),
                "ROBOTMEM_EMBED_BACKEND": "hash",
            },
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for name, args in [*SCRIPT, *((n, a) for n, a, _ in BAD)]:
                result = await session.call_tool(name, args)
                text = result.content[0].text  # type: ignore[union-attr]
                out.append(("error", text) if result.is_error else ("ok", result.structured_content))

    anyio.run(session_run)
    return out


@contextmanager
def rest_server(path: Any, settings: Settings) -> Iterator[httpx.Client]:
    with (
        RobotMemory(path, embed_backend="hash", settings=settings) as mem,
        served(mem) as base,
        httpx.Client(base_url=base, timeout=60) as client,
    ):
        yield client


def through_rest(path: Any, settings: Settings) -> list[Outcome]:
    out: list[Outcome] = []
    with rest_server(path, settings) as client:
        for name, args in [*SCRIPT, *((n, a) for n, a, _ in BAD)]:
            response = client.post(f"/api/{name}", json=args)
            body = response.json()
            out.append(
                ("error", (body["error"]["code"], body["error"]["message"], response.status_code))
                if response.status_code >= 400
                else ("ok", body)
            )
    return out


CLI_ARGS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "learn": lambda a: [
        "learn",
        a["insight"],
        *(
            ["--context", json.dumps(a["context"]) if isinstance(a["context"], dict) else a["context"]]
            if "context" in a
            else []
        ),
    ],
    "save_perception": lambda a: ["save-perception", a["description"], "--data", json.dumps(a["data"])],
    "recall": lambda a: [
        "recall",
        a["query"],
        *(["-n", str(a["n"])] if "n" in a else []),
        *(["--filter", json.dumps(a["context_filter"])] if "context_filter" in a else []),
        *(["--spatial-sort", json.dumps(a["spatial_sort"])] if "spatial_sort" in a else []),
        *(["--region", json.dumps(a["region"])] if "region" in a else []),
        *(["--include-data"] if a.get("include_data") else []),
        *(["--robots", a["robots"]] if "robots" in a else []),
        *(["--min-relevance", str(a["min_relevance"])] if "min_relevance" in a else []),
    ],
    "last_seen": lambda a: [
        "last-seen",
        a.get("query", ""),
        *(["--object-id", a["object_id"]] if "object_id" in a else []),
        *(["--since", a["since"]] if "since" in a else []),
        *(["--until", a["until"]] if "until" in a else []),
        *(["--as-of", a["as_of"]] if "as_of" in a else []),
    ],
    "around": lambda a: [
        "around",
        *(str(v) for v in a["position"]),
        "--radius",
        str(a["radius"]),
        *(["--frame", a["frame"]] if "frame" in a else []),
        *(["--since", a["since"]] if "since" in a else []),
    ],
    "update": lambda a: ["update", str(a["memory_id"]), a["new_content"]],
    "forget": lambda a: ["forget", str(a["memory_id"]), "--reason", a["reason"]],
}


def through_cli(path: Any, home: Path) -> list[Outcome]:
    out: list[Outcome] = []
    env = {**os.environ, "ROBOTMEM_HOME": str(home), "ROBOTMEM_EMBED_BACKEND": "hash"}
    for name, args in [*SCRIPT, *((n, a) for n, a, _ in BAD)]:
        command = [sys.executable, "-m", "robotmem", *CLI_ARGS[name](args), "--db", str(path)]
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        if result.returncode == 0:
            out.append(("ok", json.loads(result.stdout)))
        else:
            assert result.stderr.startswith("Error: "), result.stderr
            out.append(("error", result.stderr.strip()))
    return out


def test_every_door_returns_the_same_json_and_errors(tmp_path: Path, locate: Callable[[str], Any]) -> None:
    settings = Settings(home=tmp_path / "home")
    python = through_python(locate("python.db"), settings)
    mcp = through_mcp(locate("mcp.db"), tmp_path / "home")
    rest = through_rest(locate("rest.db"), settings)
    cli = through_cli(locate("cli.db"), tmp_path / "home")
    steps = len(SCRIPT)
    assert [kind for kind, _ in python] == ["ok"] * steps + ["error"] * len(BAD)
    assert python[2][1]["status"] == "duplicate"
    where = {i: result for i, (kind, result) in enumerate(python[:steps]) if i >= 10}
    assert [m["content"] for m in where[12]["memories"]] == ["saw the red mug on the kitchen counter"]
    assert [m["content"] for m in where[13]["memories"]] == ["saw the pallet by the odom dock"]
    assert [o["object_id"] for o in where[14]["objects"]] == ["mug-3"]
    assert [o["object_id"] for o in where[15]["objects"]] == ["mug-3"]
    assert where[16]["objects"] == [] and where[16]["note"].startswith("no object sighted in collection")
    assert [(o["object_id"], o["distance"]) for o in where[17]["objects"]] == [("mug-3", pytest.approx(0.4))]
    relevant, nothing = python[steps - 2][1], python[steps - 1][1]
    assert relevant["memories"] and all(m["relevance"] >= 0.5 for m in relevant["memories"])
    assert relevant["note"] is None
    assert nothing["memories"] == [] and "no memory in this scope is relevant" in nothing["note"]
    assert python[steps - 3][1]["status"] == "duplicate"
    assert python[steps - 3][1]["existing_id"] == python[steps - 4][1]["memory_id"]
    for other in (mcp, rest, cli):
        assert [normalized(r) for k, r in other[:steps]] == [normalized(r) for k, r in python[:steps]]
    for index, (_, _, code) in enumerate(BAD):
        kind, (python_code, message) = python[steps + index]
        assert python_code == code
        assert mcp[steps + index][0] == "error" and mcp[steps + index][1].endswith(message)
        assert rest[steps + index][1][:2] == (code, message)
        assert rest[steps + index][1][2] == {"invalid_input": 400, "not_found": 404}[code]
        assert cli[steps + index] == ("error", f"Error: {message}")
