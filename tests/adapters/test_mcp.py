"""The MCP server, run as a real subprocess and driven by the ``mcp`` SDK's stdio client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest

import robotmem
from embedders.servers import FakeServer, serve
from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.formats import results

if TYPE_CHECKING:
    from mcp import ClientSession

# Spawns processes or servers; left out of `make test-fast`. The MCP client is imported where it is
# used, so that collecting this module for a fast run does not load it.
pytestmark = pytest.mark.slow

OUTPUT_TYPES: dict[str, Any] = {
    "learn": results.LearnResult,
    "recall": results.RecallResult,
    "last_seen": results.LastSeenResult,
    "around": results.AroundResult,
    "save_perception": results.PerceptionResult,
    "forget": results.ForgetResult,
    "update": results.UpdateResult,
    "start_session": results.StartSessionResult,
    "end_session": results.EndSessionResult,
}
TOOL_NAMES = set(OUTPUT_TYPES)
# Fields that differ between two databases fed the same calls at different moments (access counts are
# flushed in the background, so a recall may or may not see the one before it).
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


def run(test: Callable[[], Coroutine[Any, Any, None]]) -> None:
    anyio.run(test)


@asynccontextmanager
async def connect(
    tmp_path: Path,
    db: Path,
    *,
    backend: str = "hash",
    env: dict[str, str] | None = None,
    args: list[str] | None = None,
) -> AsyncIterator[ClientSession]:
    """Spawn ``python -m robotmem mcp --db <db>`` and yield an initialized client session."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "robotmem", "mcp", "--db", str(db)] if args is None else args,
        env={
            # The server imports the robotmem under test, not another copy installed in the environment.
            "PYTHONPATH": str(Path(robotmem.__file__).resolve().parents[1]),
            "ROBOTMEM_HOME": str(tmp_path / "home"),
            "ROBOTMEM_EMBED_BACKEND": backend,
            **(env or {}),
        },
    )
    with open(tmp_path / f"{db.stem}-stderr.log", "a", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


async def call(session: ClientSession, name: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; its text content must be the JSON of its structured content, and
    that content must satisfy the output schema the server lists for the tool."""
    import jsonschema

    result = await session.call_tool(name, arguments)
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    assert result.structured_content is not None
    listed = {tool.name: tool for tool in (await session.list_tools()).tools}
    jsonschema.validate(result.structured_content, listed[name].output_schema or {})
    return result.structured_content


async def fail(session: ClientSession, name: str, arguments: dict[str, Any]) -> str:
    """Call a tool that must fail; return the error text."""
    result = await session.call_tool(name, arguments)
    assert result.is_error, result.structured_content
    return result.content[0].text  # type: ignore[union-attr]


def normalized(value: Any) -> Any:
    """``value`` without the fields that legitimately differ between two runs."""
    if isinstance(value, dict):
        return {key: normalized(item) for key, item in value.items() if key not in VOLATILE}
    if isinstance(value, list):
        return [normalized(item) for item in value]
    return value


def annotations_of(tools: dict[str, Any], name: str) -> bool:
    """Whether tool ``name`` is marked read-only."""
    hints = tools[name].annotations
    return hints is not None and hints.read_only_hint is True


def test_list_tools_returns_the_nine_tools_with_schemas_and_hints(tmp_path: Path) -> None:
    async def main() -> None:
        async with connect(tmp_path, tmp_path / "memory.db") as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(tools) == TOOL_NAMES
        for tool in tools.values():
            assert tool.input_schema["type"] == "object"
            assert tool.input_schema["additionalProperties"] is False
            assert tool.output_schema is not None and tool.output_schema["type"] == "object"
            # Derived from the result TypedDict: every key, each with the description a client reads.
            result_type = OUTPUT_TYPES[tool.name]
            assert set(tool.output_schema["properties"]) == set(result_type.__annotations__), tool.name
            assert all(prop.get("description") for prop in tool.output_schema["properties"].values()), (
                tool.name
            )
            assert tool.description and len(tool.description) > 200
            assert all(prop.get("description") for prop in tool.input_schema["properties"].values()), (
                tool.name
            )
        assert tools["learn"].input_schema["required"] == ["insight"]
        assert set(tools["recall"].input_schema["properties"]) == {
            "query", "n", "min_confidence", "session_id", "context_filter", "spatial_sort", "collection",
            "include_data", "order", "robots", "since", "until", "min_relevance", "region",
        }  # fmt: skip
        assert tools["around"].input_schema["required"] == ["position", "radius"]
        assert "never guess" in (tools["last_seen"].description or "")
        assert annotations_of(tools, "last_seen") and annotations_of(tools, "around")
        assert tools["end_session"].input_schema["required"] == ["session_id"]
        assert "$between" in (tools["recall"].description or "")
        assert "spatial:" in (tools["learn"].description or "")
        annotations = {name: tool.annotations for name, tool in tools.items()}
        assert annotations["recall"] is not None and annotations["recall"].read_only_hint is True
        assert annotations["forget"] is not None and annotations["forget"].destructive_hint is True
        assert annotations["learn"] is not None and annotations["learn"].idempotent_hint is False
        assert annotations["learn"].read_only_hint is False and annotations["learn"].destructive_hint is False

    run(main)


def test_every_tool_round_trips(tmp_path: Path) -> None:
    async def main() -> None:
        async with connect(tmp_path, tmp_path / "memory.db") as session:
            started = await call(session, "start_session", context={"robot_id": "arm-01", "task": "push"})
            assert set(started) == {"session_id", "collection", "active_memories_count"}
            learned = await call(
                session,
                "learn",
                insight="grip_force=12.5N yields highest grasp success rate",
                context='{"params": {"grip_force": {"value": 12.5, "unit": "N"}}, "task": {"success": true}}',
            )
            assert (
                learned["status"] == "created"
                and learned["auto_inferred"]["params"]["grip_force"]["value"] == 12.5
            )
            again = await call(session, "learn", insight="grip_force=12.5N yields highest grasp success rate")
            assert again == {
                "status": "duplicate",
                "method": "exact",
                "existing_id": learned["memory_id"],
                "similarity": 1.0,
            }
            perceived = await call(
                session,
                "save_perception",
                description="Grasp trajectory: 30 steps, success",
                perception_type="procedural",
                data='{"sampled_actions": [[0.1, -0.3, 0.05, 0.8]]}',
            )
            assert perceived["perception_type"] == "procedural" and perceived["has_embedding"] is True
            found = await call(session, "recall", query="grasp trajectory", include_data=True, n=5)
            assert found["total"] == len(found["memories"]) >= 1 and found["mode"] == "hybrid"
            trajectory = next(m for m in found["memories"] if m["id"] == perceived["memory_id"])
            assert trajectory["data"] == {"sampled_actions": [[0.1, -0.3, 0.05, 0.8]]}
            updated = await call(
                session, "update", memory_id=learned["memory_id"], new_content="grip_force=11N works on mugs"
            )
            assert updated["old_content"].startswith("grip_force=12.5N") and updated["status"] == "updated"
            forgotten = await call(session, "forget", memory_id=learned["memory_id"], reason="sensor drift")
            assert forgotten == {
                "status": "forgotten",
                "memory_id": learned["memory_id"],
                "content": "grip_force=11N works on mugs",
                "reason": "sensor drift",
            }
            ended = await call(session, "end_session", session_id=started["session_id"], outcome_score=0.5)
            assert ended["status"] == "ended" and ended["summary"]["memory_count"] == 1  # the perception
            assert set(ended) == {
                "status", "session_id", "summary", "decayed_count", "consolidated", "related_memories",
            }  # fmt: skip

    run(main)


EARLIER = [
    (
        "learn",
        {"insight": "never exceed 20 N when pushing glass objects", "context": {"task": {"success": False}}},
    ),
    (
        "learn",
        {"insight": "push cube slowly to keep it on the table", "context": {"task": {"success": True}}},
    ),
]
EPISODE: list[tuple[str, dict[str, Any]]] = [
    ("learn", {"insight": "push cube slowly along table edge keeps it stable", "context": {
        "task": {"success": True}, "spatial": {"object_position": [1.3, 0.7, 0.42]}}}),
    ("learn", {"insight": "basically push the cube slowly along the table edge, really keeps it stable, as expected", "context": {
        "task": {"success": True}, "spatial": {"object_position": [1.2, 0.6, 0.42]}}}),
    ("learn", {"insight": "push cube slowly along table edge keeps wrist steady", "context": {
        "task": {"success": False}, "spatial": {"object_position": [0.2, 0.1, 0.42]}}}),
    ("learn", {"insight": "grip_force=12.5N yields highest grasp success rate", "context": json.dumps({
        "params": {"grip_force": {"value": 12.5, "unit": "N"}}, "task": {"success": True},
        "spatial": {"object_position": [1.31, 0.71, 0.42]}, "env": {"sim_or_real": "real"}})}),
    ("learn", {"insight": "grip_force=12.5N yields highest grasp success rate"}),
    ("learn", {"insight": "gripper camera loses the cube when the arm occludes it"}),
    ("save_perception", {"description": "Grasp trajectory: 30 steps, success", "perception_type": "procedural",
                         "data": {"sampled_actions": [[0.1, -0.3, 0.05, 0.8]]}, "metadata": '{"hz": 10}'}),
    ("recall", {"query": "push cube table", "n": 10}),
    ("recall", {"query": "grip force cube", "context_filter": '{"task.success": true}',
                "spatial_sort": {"field": "spatial.object_position", "target": [1.3, 0.7, 0.42]}}),
    ("recall", {"query": "", "context_filter": {"$or": [{"params.grip_force": {"$between": [10, 15]}},
                                                        {"type": "perception"}]}, "include_data": True}),
    ("recall", {"query": "cube", "spatial_sort": '{"field": "spatial.object_position", "target": [1.3, 0.7, 0.42],'
                                                 ' "max_distance": 0.5}'}),
]  # fmt: skip


def test_episode_gives_the_same_results_as_the_python_sdk(tmp_path: Path) -> None:
    """start → learn ×N → save_perception → recall (filter, spatial sort) → end_session with consolidation.

    learn's Jaccard check is off (``dedup_jaccard`` above 1), so the filler-laden repeat of the first lesson
    is stored and end_session merges it; exact repeats are still duplicates.
    """

    def play_sdk() -> list[dict[str, Any]]:
        settings = Settings(home=tmp_path / "home", dedup_jaccard=1.5)
        with RobotMemory(tmp_path / "sdk.db", embed_backend="hash", settings=settings) as mem:
            results = []
            for episode in (EARLIER, EPISODE):
                session = mem.start_session(context={"robot_id": "arm-01", "task": "push"})
                results.append(session)
                results += [getattr(mem, name)(**arguments) for name, arguments in episode]
                results.append(mem.end_session(session_id=session["session_id"], outcome_score=0.75))
            return results

    async def play_mcp() -> list[dict[str, Any]]:
        async with connect(tmp_path, tmp_path / "mcp.db", env={"ROBOTMEM_DEDUP_JACCARD": "1.5"}) as session:
            results = []
            for episode in (EARLIER, EPISODE):
                started = await call(session, "start_session", context={"robot_id": "arm-01", "task": "push"})
                results.append(started)
                results += [await call(session, name, **arguments) for name, arguments in episode]
                results.append(
                    await call(session, "end_session", session_id=started["session_id"], outcome_score=0.75)
                )
            return results

    expected = play_sdk()
    got: list[dict[str, Any]] = []

    async def main() -> None:
        got.extend(await play_mcp())

    run(main)
    assert normalized(got) == normalized(expected)
    final = got[-1]
    assert final["consolidated"]["merged_groups"] == 1 and final["consolidated"]["superseded_count"] == 1
    assert final["related_memories"], "the earlier episode is related"
    assert [r["status"] for r in got if r.get("status") in ("created", "duplicate")].count("duplicate") == 1
    spatial = got[len(EARLIER) + 3 + 8]  # start, earlier episode, end, start, then EPISODE[8]
    assert spatial["total"] >= 2 and all("spatial_distance" in m for m in spatial["memories"][:2])
    assert all(m["task"]["success"] is True for m in spatial["memories"])


def test_bad_arguments_give_tool_errors_and_the_server_keeps_serving(tmp_path: Path) -> None:
    async def main() -> None:
        async with connect(tmp_path, tmp_path / "memory.db") as session:
            assert "insight: Field required" in await fail(session, "learn", {})
            assert "insight: must not be empty" in await fail(session, "learn", {"insight": "   "})
            assert "insight: Input should be a valid string" in await fail(session, "learn", {"insight": 42})
            assert "n: Input should be a valid integer" in await fail(
                session, "recall", {"query": "x", "n": "many"}
            )
            assert "n: is 500; the limit is 100" in await fail(session, "recall", {"n": 500})
            assert "min_confidence" in await fail(session, "recall", {"min_confidence": [0.5]})
            malformed = await fail(
                session, "recall", {"query": "x", "context_filter": '{"task.success": tru'}
            )
            assert "context_filter: is not valid JSON" in malformed
            unknown_op = await fail(session, "recall", {"context_filter": {"params.force": {"$less": 3}}})
            assert "unknown operator '$less'" in unknown_op
            assert "context: must be a JSON object" in await fail(
                session, "learn", {"insight": "ok", "context": "[1]"}
            )
            assert "spatial_sort" in await fail(
                session, "recall", {"spatial_sort": {"field": "p", "target": "x"}}
            )
            assert "memory_id 98765: no memory with this id" in await fail(
                session, "forget", {"memory_id": 98765, "reason": "wrong"}
            )
            assert "memory_id 98765" in await fail(
                session, "update", {"memory_id": 98765, "new_content": "x y"}
            )
            assert "reason: Field required" in await fail(session, "forget", {"memory_id": 1})
            unknown_param = await fail(session, "learn", {"insight": "cup is slippery", "tags": ["x"]})
            assert "tags: unknown parameter; accepted parameters are insight, context" in unknown_param
            assert "perception_type" in await fail(
                session, "save_perception", {"description": "camera frame", "perception_type": "smell"}
            )
            assert "description: must be at least 5 characters" in await fail(
                session, "save_perception", {"description": "cam"}
            )
            assert "outcome_score" in await fail(
                session, "end_session", {"session_id": "s", "outcome_score": 2}
            )
            assert "session" in await fail(session, "end_session", {"session_id": "no-such-session"})
            assert "Unknown tool" in await fail(session, "remember", {"insight": "x"})
            # still serving, and nothing half-written
            created = await call(session, "learn", insight="the server still stores memories")
            assert created == {**created, "status": "created", "memory_id": 1}
        log = (tmp_path / "memory-stderr.log").read_text(encoding="utf-8")
        assert "Traceback" not in log

    run(main)


def test_python_m_robotmem_without_arguments_serves_mcp(tmp_path: Path) -> None:
    async def main() -> None:
        async with connect(tmp_path, tmp_path / "home" / "memory.db", args=["-m", "robotmem"]) as session:
            assert {tool.name for tool in (await session.list_tools()).tools} == TOOL_NAMES
            created = await call(session, "learn", insight="served by python -m robotmem")
            assert created["status"] == "created"
        assert (tmp_path / "home" / "memory.db").exists()

    run(main)


def test_collection_option_and_environment_are_used(tmp_path: Path) -> None:
    async def main() -> None:
        db = tmp_path / "memory.db"
        async with connect(
            tmp_path, db, args=["-m", "robotmem", "mcp", "--db", str(db), "--collection", "arm2"]
        ) as s:
            assert (await call(s, "start_session"))["collection"] == "arm2"
        async with connect(tmp_path, db, env={"ROBOTMEM_COLLECTION": "arm3"}) as s:
            assert (await call(s, "start_session"))["collection"] == "arm3"
            assert (await call(s, "recall", query="anything"))[
                "mode"
            ] == "hybrid"  # ROBOTMEM_EMBED_BACKEND=hash
        async with connect(tmp_path, db, backend="none") as s:
            await call(s, "learn", insight="stored without vectors")
            assert (await call(s, "recall", query="stored vectors"))["mode"] == "bm25_only"

    run(main)


def test_two_servers_on_one_database_store_every_memory(tmp_path: Path) -> None:
    """Two MCP servers on the same file, 500 concurrent writes each: all 1,000 stored and mutually visible."""
    db = tmp_path / "shared.db"
    per_writer = 500
    results: dict[int, list[dict[str, Any]]] = {1: [], 2: []}
    checks: list[Any] = []

    async def write(session: ClientSession, writer: int) -> None:
        limit = anyio.Semaphore(8)

        async def one(trial: int) -> None:
            async with limit:
                insight = f"writer {writer} stored trial {trial} of the concurrent push benchmark"
                context = {"writer": writer, "trial": trial, "task": {"success": trial % 2 == 0}}
                results[writer].append(await call(session, "learn", insight=insight, context=context))

        async with anyio.create_task_group() as group:
            for trial in range(per_writer):
                group.start_soon(one, trial)

    async def main() -> None:
        async with connect(tmp_path, db) as first, connect(tmp_path, db) as second:
            started = time.perf_counter()
            async with anyio.create_task_group() as group:
                group.start_soon(write, first, 1)
                group.start_soon(write, second, 2)
            checks.append(time.perf_counter() - started)
            for reader, other in ((first, 2), (second, 1)):
                everything = await call(reader, "recall", context_filter={"writer": other}, n=100)
                checks.append(everything["total"])
                for trial in range(0, per_writer, 50):
                    found = await call(
                        reader,
                        "recall",
                        query=f"writer {other} trial {trial}",
                        context_filter={"trial": trial},
                    )
                    assert {m["content"] for m in found["memories"]} == {
                        f"writer 1 stored trial {trial} of the concurrent push benchmark",
                        f"writer 2 stored trial {trial} of the concurrent push benchmark",
                    }

    run(main)
    assert all(r["status"] == "created" for rs in results.values() for r in rs)
    ids = {r["memory_id"] for rs in results.values() for r in rs}
    assert len(ids) == 2 * per_writer
    assert checks[1:] == [100, 100]
    with RobotMemory(db, embed_backend="hash", settings=Settings(home=tmp_path / "home")) as mem:
        assert mem.doctor()["memories"] == {"total": 1000, "active": 1000}
    for name in ("shared-stderr.log",):
        log = (tmp_path / name).read_text(encoding="utf-8")
        assert "locked" not in log and "Traceback" not in log
    print(f"1000 writes through two servers in {checks[0]:.2f} s")


@pytest.fixture
def stalled_ollama() -> Iterator[tuple[FakeServer, threading.Event]]:
    """A fake Ollama that holds every embedding answer until the returned event is set."""
    release = threading.Event()
    fake = FakeServer(api="ollama")

    def hold(payload: dict[str, Any]) -> dict[str, Any]:
        release.wait(120)
        return payload

    fake.mutate = hold
    for server in serve(fake, ""):
        yield server, release
        release.set()


def test_a_stalled_embedder_blocks_neither_the_handshake_nor_other_requests(
    tmp_path: Path, stalled_ollama: tuple[FakeServer, threading.Event]
) -> None:
    """While no embedding can finish, initialize, ping and tools/list still answer; the learn waits."""
    fake, release = stalled_ollama
    env = {"ROBOTMEM_OLLAMA_URL": fake.url, "ROBOTMEM_EMBED_TIMEOUT_S": "120"}
    outcome: dict[str, Any] = {}
    pending_while_answered: list[bool] = []

    async def main() -> None:
        with anyio.fail_after(100):  # a blocked protocol would hang here instead of answering
            async with connect(tmp_path, tmp_path / "memory.db", backend="ollama", env=env) as session:

                async def learn() -> None:
                    outcome.update(await call(session, "learn", insight="learned while the embedder stalled"))

                async with anyio.create_task_group() as group:
                    group.start_soon(learn)
                    await anyio.sleep(0.5)
                    for _ in range(3):
                        await session.send_ping()
                        assert len((await session.list_tools()).tools) == len(TOOL_NAMES)
                        pending_while_answered.append(not outcome)
                    release.set()

    run(main)
    assert pending_while_answered == [True, True, True]
    assert outcome["status"] == "created"
    assert len(fake.embed_requests()) >= 2, "the model was probed, then the memory embedded"


def test_stdout_carries_only_protocol_messages(tmp_path: Path) -> None:
    """Hand-written JSON-RPC in, every stdout line a JSON-RPC message out, logs on stderr."""
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "learn", "arguments": {"insight": ""}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "learn", "arguments": {"insight": "logs never reach stdout"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "recall", "arguments": {"query": "logs"}}},
    ]  # fmt: skip
    env = {
        **os.environ,
        "ROBOTMEM_HOME": str(tmp_path / "home"),
        "ROBOTMEM_EMBED_BACKEND": "hash",
        "ROBOTMEM_LOG_LEVEL": "INFO",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "robotmem", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdin is not None and process.stdout is not None
    answers: dict[int, dict[str, Any]] = {}
    for request in requests:
        process.stdin.write(json.dumps(request) + "\n")
        process.stdin.flush()
        while "id" in request and request["id"] not in answers:  # one request at a time, as a client may
            message = json.loads(process.stdout.readline())
            assert message["jsonrpc"] == "2.0"
            answers[message["id"]] = message
    rest, stderr = process.communicate(timeout=60)
    assert rest == ""
    assert process.returncode == 0, stderr
    assert answers[2]["result"]["isError"] is True
    assert "insight: must not be empty" in answers[2]["result"]["content"][0]["text"]
    assert answers[3]["result"]["structuredContent"]["status"] == "created"
    assert answers[4]["result"]["structuredContent"]["total"] == 1
    assert "robotmem.mcp INFO serving MCP over stdio" in stderr  # logs went to stderr


def test_recall_names_its_collections_warns_about_filters_and_keeps_the_session_robot(tmp_path: Path) -> None:
    async def main() -> None:
        async with connect(tmp_path, tmp_path / "memory.db") as session:
            await call(session, "start_session", context={"robot_id": "arm-07", "task": {"name": "pick"}})
            await call(
                session, "learn", insight="the mug slips above 3 m/s", context={"task": {"success": False}}
            )
            await call(session, "learn", insight="the shelf holds mugs", collection="lab")
            mine = await call(
                session, "recall", query="mug", robots=["arm-07"], context_filter={"task.name": "pick"}
            )
            assert [m["content"] for m in mine["memories"]] == ["the mug slips above 3 m/s"]
            assert mine["memories"][0]["robot_id"] == "arm-07"
            typo = await call(session, "recall", query="mug", context_filter={"task.sucess": False})
            assert typo["total"] == 0 and typo["warnings"] == [
                "context_filter: no memory in collection 'default' carries `task.sucess`; "
                "did you mean `task.success`?"
            ]
            every = await call(session, "recall", query="mug", collection="*")
            assert every["collections"] == ["default", "lab"] and every["total"] == 2
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert "warnings" in (tools["recall"].description or "")
            assert (
                '"*" searches every collection'
                in tools["recall"].input_schema["properties"]["collection"]["description"]
            )

    run(main)
