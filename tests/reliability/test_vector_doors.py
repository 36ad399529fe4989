"""A vector is checked wherever it enters: the embedder's answers, import, sync, backfill and re-embedding
apply one rule (``robotmem.query.vectors.unit_vector``: finite, the model's dimension, not all zero, stored at
unit length), and ``check`` reports and ``repair`` fixes a stored vector that breaks it, on both engines.
"""

from __future__ import annotations

import base64
import json
import os
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import numpy as np
import pytest
from benchmarks.web_render import served
from tests.conftest import is_server, location_of, raw_sql, stored_vector, table_counts, without_vector
from tests.embedders.servers import FakeServer, serve

import robotmem
from robotmem import RobotMemory, ValidationError
from robotmem.config import Settings

LESSONS = [
    "grip_force=12 N held the ceramic mug on the first try",
    "the lidar misses the glass door of corridor B",
    "slow down to 0.3 m/s on the loading ramp",
]


def _zeros(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "embeddings": [[0.0] * len(row) for row in payload["embeddings"]]}


@pytest.fixture
def zero_ollama() -> Iterator[FakeServer]:
    """An Ollama API whose every vector is all zeros."""
    yield from serve(FakeServer(api="ollama", mutate=_zeros), "")


def _norm(vector: Any) -> float:
    return float(np.linalg.norm(np.asarray(vector, dtype=np.float64)))


# ---- the embedder ---------------------------------------------------------------------------------------


def test_an_embedder_answering_zero_vectors_gets_none_stored(
    locate: Callable[[str], Any], settings: Settings, zero_ollama: FakeServer
) -> None:
    chosen = settings.replace(ollama_url=zero_ollama.url, embed_timeout_s=5.0)
    with RobotMemory(locate("zero.db"), embed_backend="ollama", settings=chosen) as mem:
        created = mem.learn(LESSONS[0])
        assert created["status"] == "created"
        mem.save_perceptions([{"description": "wrist camera frame of the mug", "data": {"w": 64}}])
        assert mem.backfill()["embedded"] == 0
        found = mem.recall("ceramic mug")
        assert found["total"] >= 1 and found["memories"][0]["id"] == created["memory_id"]
        report = mem.integrity_report()
        assert report["ok"], report
        assert without_vector(location_of(mem)) == 2
        assert len(zero_ollama.embed_requests()) >= 3  # the model was asked, its answers refused


# ---- import ---------------------------------------------------------------------------------------------


@pytest.fixture
def export_file(memory: RobotMemory, tmp_path: Path) -> Path:
    for lesson in LESSONS:
        memory.learn(lesson)
    path = tmp_path / "export.jsonl"
    memory.export_memories(path, vectors=True)
    return path


def _with_vector(path: Path, out: Path, index: int, change: Callable[[np.ndarray], np.ndarray]) -> Path:
    lines = path.read_text(encoding="utf-8").splitlines()
    memory_lines = [i for i, line in enumerate(lines) if '"record":"memory"' in line]
    record = json.loads(lines[memory_lines[index]])
    vector = np.frombuffer(base64.b64decode(record["vector"]), dtype="<f4")
    record["vector"] = base64.b64encode(change(vector).astype("<f4").tobytes()).decode("ascii")
    lines[memory_lines[index]] = json.dumps(record)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def test_import_scales_a_file_vector_to_unit_length(
    export_file: Path, locate: Callable[[str], Any], settings: Settings, tmp_path: Path
) -> None:
    scaled = _with_vector(export_file, tmp_path / "scaled.jsonl", 1, lambda v: v * 1e6)
    with RobotMemory(locate("target.db"), embed_backend="hash", settings=settings) as target:
        result = target.import_memories(scaled)
        assert result["vectors"]["from_file"] == 3
        lidar = target.recall("lidar glass door")["memories"][0]
        vector = stored_vector(target, lidar["id"])
        assert _norm(vector) == pytest.approx(1.0, abs=1e-5)
        # A vector a million times longer would have ranked first for any query compared by dot product.
        assert target.recall("ceramic mug grip force")["memories"][0]["content"] == LESSONS[0]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda v: v * 0.0, "vector: is all zeros"),
        (
            lambda v: np.where(np.arange(len(v)) == 3, np.float32("nan"), v),
            "vector: contains NaN or infinite values",
        ),
        (lambda v: np.full_like(v, np.inf), "vector: contains NaN or infinite values"),
    ],
)
def test_import_refuses_a_file_vector_without_a_direction(
    export_file: Path,
    locate: Callable[[str], Any],
    settings: Settings,
    tmp_path: Path,
    change: Callable[[np.ndarray], np.ndarray],
    message: str,
) -> None:
    broken = _with_vector(export_file, tmp_path / "broken.jsonl", 2, change)
    with RobotMemory(locate("target.db"), embed_backend="hash", settings=settings) as target:
        before = table_counts(target)
        with pytest.raises(ValidationError, match=rf"broken.jsonl:\d+: {message}"):
            target.import_memories(broken)
        assert table_counts(target) == before


# ---- sync -----------------------------------------------------------------------------------------------


def _damage_fleet(fleet: RobotMemory, dim: int) -> None:
    """Give the fleet a zero vector, a vector a million times too long and an outcome of 7.5."""
    zero_sql = "X'" + "00" * (4 * dim) + "'"
    raw_sql(
        fleet,
        sqlite=[
            f"UPDATE memory_vectors SET embedding = {zero_sql} WHERE memory_id = 1",
            "UPDATE memory_vectors SET embedding = (SELECT embedding FROM memory_vectors WHERE memory_id = 2) "
            "WHERE memory_id = 2",
            "UPDATE session_outcomes SET outcome_score = 7.5",
        ],
        postgres=[
            f"UPDATE memories SET embedding = array_fill(0, ARRAY[{dim}])::vector WHERE id = 1",
            "UPDATE memories SET embedding = ARRAY(SELECT x * 1e6 FROM unnest(embedding::real[]) x)::vector "
            "WHERE id = 2",
            "UPDATE session_outcomes SET outcome_score = 7.5",
        ],
    )
    if not is_server(location_of(fleet)):  # scale the second vector through numpy on SQLite
        import sqlite3

        conn = sqlite3.connect(location_of(fleet), isolation_level=None)
        try:
            (blob,) = conn.execute("SELECT embedding FROM memory_vectors WHERE memory_id = 2").fetchone()
            scaled = (np.frombuffer(blob, dtype="<f4") * np.float32(1e6)).astype("<f4").tobytes()
            conn.execute("UPDATE memory_vectors SET embedding = ? WHERE memory_id = 2", (scaled,))
        finally:
            conn.close()


def test_sync_applies_the_rules_import_applies(
    locate: Callable[[str], Any], settings: Settings, tmp_path: Path
) -> None:
    fleet_location = locate("fleet.db")
    with RobotMemory(fleet_location, embed_backend="hash", settings=settings) as fleet:
        for lesson in LESSONS[:2]:
            fleet.learn(lesson)
        session = fleet.start_session()["session_id"]
        fleet.end_session(session, outcome_score=0.5)
        dim = len(stored_vector(fleet, 1))
        _damage_fleet(fleet, dim)
        assert fleet.integrity_report()["problems"]["vectors_invalid"] == 2
    robot = tmp_path / "robot.db"
    with RobotMemory(robot, embed_backend="hash", settings=settings.replace(robot_id="arm-01")) as mem:
        result = mem.sync(fleet_location, direction="pull")
        pulled = result["pulled"]
        assert pulled is not None
        assert pulled["memories"]["created"] == 2 and pulled["sessions"]["refused"] == 1
        assert result["without_vector"] == 1  # the zero vector was not taken; backfill embeds it
        first, second = (mem.recall(text)["memories"][0] for text in LESSONS[:2])
        assert stored_vector(mem, first["id"]) is None
        assert _norm(stored_vector(mem, second["id"])) == pytest.approx(1.0, abs=1e-5)
        assert mem.integrity_report()["ok"]
        assert mem.backfill()["embedded"] == 1


# ---- check and repair -----------------------------------------------------------------------------------


def test_check_reports_and_repair_fixes_stored_vectors_that_break_the_rule(memory: RobotMemory) -> None:
    ids = [memory.learn(lesson)["memory_id"] for lesson in LESSONS]
    original = stored_vector(memory, ids[0])
    dim = len(original)
    zero_blob = "X'" + "00" * (4 * dim) + "'"
    nan_blob = "X'" + struct.pack("<f", float("nan")).hex() * dim + "'"
    raw_sql(
        memory,
        sqlite=[
            f"UPDATE memory_vectors SET embedding = {zero_blob} WHERE memory_id = {ids[1]}",
            f"UPDATE memory_vectors SET embedding = {nan_blob} WHERE memory_id = {ids[2]}",
        ],
        postgres=[
            f"UPDATE memories SET embedding = array_fill(0, ARRAY[{dim}])::vector WHERE id = {ids[1]}",
            f"UPDATE memories SET embedding = array_fill(0.5, ARRAY[{dim - 1}])::vector WHERE id = {ids[2]}",
        ],
    )
    _scale(memory, ids[0], 1e6)
    report = memory.integrity_report()
    assert not report["ok"]
    assert report["problems"]["vectors_invalid"] == 3 and sorted(report["examples"]["vectors_invalid"]) == ids
    repaired = memory.repair()
    assert repaired["repaired"]["vectors_renormalised"] == 1 and repaired["repaired"]["vectors_dropped"] == 2
    assert memory.integrity_report()["ok"]
    assert stored_vector(memory, ids[0]) == pytest.approx(original, abs=1e-6)  # its direction is kept
    assert without_vector(location_of(memory)) == 2
    assert memory.backfill()["embedded"] == 2
    assert memory.integrity_report()["ok"]


def _scale(mem: RobotMemory, memory_id: int, factor: float) -> None:
    location = location_of(mem)
    if is_server(location):
        raw_sql(
            mem,
            sqlite=[],
            postgres=[
                f"UPDATE memories SET embedding = ARRAY(SELECT x * {factor} FROM unnest(embedding::real[]) x)::vector "
                f"WHERE id = {memory_id}"
            ],
        )
        return
    scaled = (stored_vector(mem, memory_id) * np.float32(factor)).astype("<f4").tobytes().hex()
    raw_sql(
        mem,
        sqlite=[f"UPDATE memory_vectors SET embedding = X'{scaled}' WHERE memory_id = {memory_id}"],
        postgres=[],
    )


# ---- the other doors: CLI, MCP, REST --------------------------------------------------------------------


def _cli(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {
        **os.environ,
        "PYTHONPATH": str(Path(robotmem.__file__).resolve().parents[1]),
        "ROBOTMEM_HOME": str(home),
        "ROBOTMEM_EMBED_BACKEND": "hash",
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "robotmem", *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )


@pytest.mark.slow
@pytest.mark.sqlite_only
def test_cli_check_repair_and_import_apply_the_rule(export_file: Path, tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    assert _cli(tmp_path, "import", str(export_file), "--db", str(db), "--no-progress").returncode == 0
    with RobotMemory(db, embed_backend="hash", settings=Settings(home=tmp_path)) as mem:
        _scale(mem, 1, 1e6)
    checked = _cli(tmp_path, "check", "--db", str(db))
    assert checked.returncode == 1 and "vectors_invalid" in checked.stdout
    repaired = _cli(tmp_path, "repair", "--db", str(db))
    assert repaired.returncode == 0, repaired.stderr
    assert _cli(tmp_path, "check", "--db", str(db)).returncode == 0
    broken = _with_vector(export_file, tmp_path / "zero.jsonl", 0, lambda v: v * 0.0)
    refused = _cli(tmp_path, "import", str(broken), "--db", str(tmp_path / "other.db"), "--no-progress")
    assert refused.returncode == 2
    assert refused.stderr.startswith("Error: ") and "vector: is all zeros" in refused.stderr
    assert refused.stderr.count("\n") == 1


@pytest.mark.slow
@pytest.mark.sqlite_only
def test_mcp_and_rest_learn_store_no_zero_vector(tmp_path: Path, zero_ollama: FakeServer) -> None:
    """The embedder door is in the core: MCP and REST learns through a zero-answering model store no vector."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = {"ROBOTMEM_EMBED_BACKEND": "ollama", "ROBOTMEM_OLLAMA_URL": zero_ollama.url}
    db = tmp_path / "doors.db"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "robotmem", "mcp", "--db", str(db)],
        env={
            "PYTHONPATH": str(Path(robotmem.__file__).resolve().parents[1]),
            "ROBOTMEM_HOME": str(tmp_path),
            **env,
        },
    )

    async def through_mcp() -> None:
        with open(tmp_path / "mcp.log", "w", encoding="utf-8") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                result = await session.call_tool("learn", {"insight": LESSONS[0]})
                assert not result.is_error, result.content

    anyio.run(through_mcp)
    settings = Settings(home=tmp_path, ollama_url=zero_ollama.url)
    with RobotMemory(db, embed_backend="ollama", settings=settings) as mem, served(mem) as base:
        response = httpx.post(f"{base}/api/learn", json={"insight": LESSONS[1]}, timeout=60)
        assert response.status_code == 200, response.text
        assert without_vector(db) == 2
        assert mem.integrity_report()["ok"]
