"""Vectors for memories without one: the offline first run, backfill, re-embedding and the background thread."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import vector_rows, without_vector

from robotmem import RobotMemory, ValidationError
from robotmem.adapters.cli import main
from robotmem.config import Settings, load_settings
from robotmem.embedders.fastembed import fastembed_installed
from robotmem.embedders.hashing import HashingEmbedder
from robotmem.embedders.none import NullEmbedder

SHELF_TEXTS = (
    "the oak shelf stores spare grippers",
    "birch crates hold calibration targets",
    "maple table is where the arm docks",
    "cedar rack keeps the battery packs",
    "elm drawer contains torque sensors",
    "ash cabinet has emergency stop keys",
    "the pine shelf holds red boxes near the dock",
    "teak bench supports the camera tripod",
    "larch pallet carries heavy motors",
    "yew box stores cable ties and screws",
)


# ---- offline first run -----------------------------------------------------------------------------


def test_first_learn_without_a_cached_model_is_fast_and_doctor_says_why(
    locate: Callable[[str], Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if not fastembed_installed():
        pytest.skip("fastembed is not installed (pip install 'robotmem[onnx]')")
    empty = tmp_path / "models"
    empty.mkdir()
    monkeypatch.setenv("ROBOTMEM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ROBOTMEM_ONNX_MODEL_DIR", str(empty))
    # No network: any attempt to reach a model hub goes to a closed port.
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    db = locate("first.db")
    started = time.perf_counter()
    with RobotMemory(db, embed_backend="onnx", settings=load_settings({})) as mem:
        created = mem.learn("grip_force=12.5N yields highest grasp success rate")
        elapsed = time.perf_counter() - started
        assert created["status"] == "created"
        assert mem.recall("grip force")["memories"][0]["id"] == created["memory_id"]
    assert elapsed < 2.0
    assert without_vector(db) == 1

    assert main(["doctor", "--db", str(db), "--embed-backend", "onnx"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["search_mode"] == "bm25_only"
    assert report["embedder"]["available"] is False
    assert "not available offline" in report["search_mode_reason"]
    assert "ROBOTMEM_ONNX_MODEL_DIR" in report["search_mode_reason"]
    assert report["vectors"]["active_without_vector"] == 1


# ---- backfill ----------------------------------------------------------------------------------------


def test_backfill_embeds_every_active_memory_without_a_vector(
    locate: Callable[[str], Any], tmp_path: Path, settings: Settings
) -> None:
    db = locate("memory.db")
    with RobotMemory(db, settings=settings, embedder=NullEmbedder()) as mem:
        ids = [
            mem.learn(f"waypoint {i} reached after {i * 3} s on the left corridor")["memory_id"]
            for i in range(7)
        ]
        mem.save_perception("tactile reading of the soft gripper pad", perception_type="tactile")
        mem.forget(ids[0], reason="sensor glitch")
    assert without_vector(db) == 7

    steps: list[tuple[str, int, int]] = []
    with RobotMemory(db, settings=settings, embedder=HashingEmbedder(dim=64)) as mem:
        assert mem.recall("waypoint corridor")["mode"] == "hybrid"  # vectors of 0 memories: still consistent
        result = mem.backfill(batch_size=3, progress=lambda *step: steps.append(step))
        assert result == {
            "status": "complete",
            "embedded": 7,
            "remaining": 0,
            "model_id": "hash-64",
            "reason": "ok",
        }
        assert without_vector(db) == 0
        assert steps[0] == ("backfill", 0, 7) and sum(s[1] for s in steps) == 7
        hits = mem.recall("waypoint 4 reached", n=3)
        assert hits["mode"] == "hybrid" and hits["memories"][0]["id"] == ids[4]
        assert mem.doctor()["ok"]
        assert mem.backfill()["embedded"] == 0
    # The forgotten memory got no vector.
    assert ids[0] not in {row[0] for row in vector_rows(db)}


def test_backfill_reports_why_it_cannot_run(
    locate: Callable[[str], Any], tmp_path: Path, settings: Settings
) -> None:
    db = locate("memory.db")
    with RobotMemory(db, settings=settings, embedder=NullEmbedder()) as mem:
        mem.learn("the arm stalls at joint 3 above 40 degrees")
        result = mem.backfill()
    assert result["status"] == "unavailable" and result["remaining"] == 1
    assert "embed_backend=none" in result["reason"]
    with pytest.raises(ValidationError, match="batch_size"):
        RobotMemory(db, settings=settings, embedder=NullEmbedder()).backfill(batch_size=0)


# ---- re-embedding ----------------------------------------------------------------------------------


def test_reindex_is_resumable_and_never_mixes_models(
    locate: Callable[[str], Any], tmp_path: Path, settings: Settings
) -> None:
    db = locate("memory.db")
    old = RobotMemory(db, settings=settings, embedder=HashingEmbedder(dim=64))
    ids = [old.learn(text)["memory_id"] for text in SHELF_TEXTS]
    target = old.recall("pine shelf red boxes", n=3)
    assert target["mode"] == "hybrid" and target["memories"][0]["id"] == ids[6]

    new = RobotMemory(db, settings=settings, embedder=HashingEmbedder(dim=128))
    assert new.recall("pine shelf red boxes")["mode"] == "bm25_only"
    assert "run `robotmem embed reindex`" in new.doctor()["search_mode_reason"]

    def interrupt(stage: str, advance: int, total: int) -> None:
        if advance and stage == "reindex":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        new.reindex(batch_size=4, progress=interrupt)
    half = new.embedding_status()
    assert half["reindex"] == {"model_id": "hash-128", "dim": 128, "staged": 4, "total": 10}
    assert half["database_model"] == {"model_id": "hash-64", "dim": 64}
    # Half-done: the new model's process searches BM25 only and says why; the old one keeps its vectors.
    during = new.recall("pine shelf red boxes", n=3)
    assert during["mode"] == "bm25_only" and during["memories"][0]["id"] == ids[6]
    assert "robotmem embed reindex" in new.doctor()["search_mode_reason"]
    still = old.recall("pine shelf red boxes", n=3)
    assert still["mode"] == "hybrid"
    assert [m["id"] for m in still["memories"]] == [m["id"] for m in target["memories"]]
    assert {(model, size) for _, model, size in vector_rows(db)} == {("hash-64", 256)}
    # A write through the old model during the run is picked up when the run continues.
    late = old.learn("the walnut cabinet stores blue crates by the gate")["memory_id"]

    done = new.reindex(batch_size=4)
    assert done["status"] == "complete" and done["resumed"] is True
    assert done["embedded"] == 7 and done["vectors"] == 11 and done["without_vector"] == 0
    assert done["previous_model"] == ["hash-64", 64]
    assert {(model, size) for _, model, size in vector_rows(db)} == {("hash-128", 512)}
    assert len(vector_rows(db)) == 11
    after = new.recall("pine shelf red boxes", n=3)
    assert after["mode"] == "hybrid" and after["memories"][0]["id"] == ids[6]
    assert new.recall("walnut cabinet blue crates", n=1)["memories"][0]["id"] == late
    assert new.embedding_status()["reindex"] is None
    # The old model's process notices the change and falls back to BM25 with the reason.
    stale = old.recall("pine shelf red boxes", n=3)
    assert stale["mode"] == "bm25_only" and stale["memories"][0]["id"] == ids[6]
    assert "hash-128" in old.doctor()["search_mode_reason"]
    assert new.doctor()["ok"]
    old.close()
    new.close()


def test_reindex_to_the_same_model_only_backfills(hash64: RobotMemory) -> None:
    hash64.learn("door 7 opens inward")
    result = hash64.reindex()
    assert result["status"] == "up_to_date" and result["embedded"] == 0 and result["without_vector"] == 0


def test_reindex_needs_an_available_embedder(
    locate: Callable[[str], Any], tmp_path: Path, settings: Settings
) -> None:
    with RobotMemory(locate("m.db"), settings=settings, embedder=NullEmbedder()) as mem:
        from robotmem import EmbeddingError

        with pytest.raises(EmbeddingError, match="cannot re-embed"):
            mem.reindex()


# ---- background backfill ------------------------------------------------------------------------------


def test_background_backfill_stops_on_close(hash64: RobotMemory) -> None:
    assert hash64.start_background_backfill(interval_s=0.05) is True
    assert hash64.start_background_backfill(interval_s=0.05) is False
    assert hash64.background_backfill_running
    thread = hash64._background._thread
    hash64.close()
    assert thread is not None and not thread.is_alive()
    with pytest.raises(ValidationError):
        hash64.start_background_backfill()
