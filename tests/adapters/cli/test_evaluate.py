"""``robotmem eval FILE``: a small evaluation file in a temporary directory, scored in each mode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from robotmem import RobotMemory
from robotmem.adapters.cli import main
from robotmem.adapters.cli.evaluate import evaluate, load_documents, settings_for_mode, splits
from robotmem.config import Settings
from robotmem.errors import ValidationError
from robotmem.evaluation import load_eval_set, parse_eval_lines

LINES = [
    {
        "kind": "document",
        "id": "d1",
        "text": "grip_force=12.5N holds the ceramic mug without slipping",
        "context": {"params": {"grip_force": {"value": 12.5, "unit": "N"}}, "task": {"success": True}},
        "collection": "manipulation",
    },
    {
        "kind": "document",
        "id": "d2",
        "text": "The paper cup crushed at grip_force=9N; use 4 N for thin walls",
        "context": {"task": {"success": False}},
        "collection": "manipulation",
    },
    {
        "kind": "document",
        "id": "d3",
        "text": "Lidar misses the glass wall in corridor B; slow to 0.2 m/s there",
        "context": {"spatial": {"position": [4.0, 1.0, 0.0]}},
        "collection": "navigation",
    },
    {
        "kind": "document",
        "id": "d4",
        "text": "Tactile pad reading during the mug lift: slip detected at 3 N",
        "type": "perception",
        "perception_type": "tactile",
    },
    {"kind": "query", "id": "q1", "query": "grip force for the mug", "gold": ["d1"], "tags": ["exact"]},
    {
        "kind": "query",
        "id": "q2",
        "query": "failed cup grasp",
        "gold": ["d2"],
        "context_filter": {"task.success": False},
        "tags": ["outcome_filter"],
    },
    {
        "kind": "query",
        "id": "q3",
        "query": "glass wall lidar",
        "gold": ["d3"],
        "spatial_sort": {"field": "spatial.position", "target": [4.0, 1.0, 0.0], "max_distance": 1.0},
        "tags": ["spatial"],
    },
]


@pytest.fixture
def eval_file(tmp_path: Path) -> Path:
    path = tmp_path / "small_eval.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in LINES) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def hash_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ROBOTMEM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ROBOTMEM_EMBED_BACKEND", "hash")


@pytest.mark.parametrize(
    ("mode", "expected_mode"), [("hybrid", "hybrid"), ("bm25", "bm25_only"), ("vector", "vec_only")]
)
def test_eval_runs_every_mode_through_the_named_channels(
    eval_file: Path, tmp_path: Path, mode: str, expected_mode: str
) -> None:
    settings = Settings(home=tmp_path / "home", embed_backend="hash")
    report = evaluate(load_eval_set(eval_file), settings, mode=mode, ks=(1, 3))

    assert report["modes_seen"] == [expected_mode]
    assert report["documents"] == 4
    assert report["duplicates"] == []
    scores = report["metrics"]["all"]
    assert scores["queries"] == 3
    assert set(scores) >= {"mrr", "recall@1", "recall@3", "ndcg@3"}
    assert 0.0 <= scores["recall@3"] <= 1.0


def test_eval_finds_exact_answers_with_bm25(eval_file: Path, tmp_path: Path) -> None:
    report = evaluate(load_eval_set(eval_file), Settings(home=tmp_path / "h"), mode="bm25", ks=(1, 3))

    assert report["metrics"]["all"]["recall@3"] == 1.0
    assert report["metrics"]["tag:outcome_filter"]["recall@1"] == 1.0


def test_cli_eval_prints_metrics_as_json(
    eval_file: Path, hash_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", str(eval_file), "--k", "1", "3", "--mode", "bm25", "--json"]) == 0

    report = json.loads(capsys.readouterr().out)
    assert report["mode"] == "bm25"
    assert report["metrics"]["all"]["queries"] == 3
    assert "recall@3" in report["metrics"]["lang:en"]


def test_cli_eval_prints_a_table(eval_file: Path, hash_env: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(eval_file)]) == 0

    out = capsys.readouterr().out
    assert "mode hybrid" in out
    assert "recall@5" in out
    assert out.splitlines()[3].startswith("all")


def test_cli_eval_reports_an_invalid_file(
    tmp_path: Path, hash_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "query", "id": "q1", "query": "x", "gold": ["missing"]}\n', encoding="utf-8")

    assert main(["eval", str(bad)]) == 2
    assert "line 1: gold" in capsys.readouterr().err


def test_unknown_mode_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="mode"):
        settings_for_mode(Settings(), "sparse")


def test_documents_of_one_session_label_share_a_session(tmp_path: Path) -> None:
    rows = [
        {
            "kind": "document",
            "id": f"d{i}",
            "text": f"Episode {i // 2} step {i}: arm moved",
            "session": f"s{i // 2}",
        }
        for i in range(4)
    ] + [
        {
            "kind": "query",
            "id": "q1",
            "query": "arm moved",
            "gold": ["d1"],
            "split": "tune",
            "tags": ["entity"],
        },
    ]
    eval_set = parse_eval_lines(json.dumps(row) for row in rows)
    with RobotMemory(tmp_path / "eval.db", embed_backend="none") as mem:
        loaded = load_documents(mem, eval_set)
        sessions = [mem.get_memory(loaded.memory_of[f"d{i}"])["session_id"] for i in range(4)]
    assert sessions[0] == sessions[1] != sessions[2] == sessions[3]
    assert sessions[0] is not None
    assert splits(eval_set)["split:tune/entity"] == {"q1"}
