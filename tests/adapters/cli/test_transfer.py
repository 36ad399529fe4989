"""``robotmem embed backfill|reindex|status``, ``robotmem export`` and ``robotmem import``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from robotmem.adapters.cli import main


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Any:
    """Run ``robotmem`` in this process; return ``(exit code, parsed stdout or text, stderr)``."""
    monkeypatch.setenv("ROBOTMEM_HOME", str(tmp_path / "home"))

    def run(*args: str, backend: str = "hash", dim: int | None = None) -> tuple[int, Any, str]:
        if dim is None:
            monkeypatch.delenv("ROBOTMEM_EMBED_DIM", raising=False)
        else:
            monkeypatch.setenv("ROBOTMEM_EMBED_DIM", str(dim))
        code = main([*args, "--embed-backend", backend])
        captured = capsys.readouterr()
        try:
            out: Any = json.loads(captured.out)
        except ValueError:
            out = captured.out
        return code, out, captured.err

    return run


def seed(cli: Any) -> list[int]:
    texts = [
        "the cup slipped when the gripper closed too fast",
        "lidar misses glass doors in the hallway",
        "never exceed 20 N on glass",
    ]
    return [cli("learn", text, backend="none")[1]["memory_id"] for text in texts]


def test_embed_backfill_fills_missing_vectors(cli: Any) -> None:
    seed(cli)
    code, status, _ = cli("embed", "status")
    assert code == 0 and status["without_vector"] == 3 and status["database_model"] is None
    code, result, err = cli("embed", "backfill", "--batch-size", "2")
    assert code == 0 and result["embedded"] == 3 and result["remaining"] == 0
    assert "backfill" in err  # the progress bar
    code, status, _ = cli("embed", "status")
    assert status["without_vector"] == 0 and status["database_model"] == {"model_id": "hash-256", "dim": 256}


def test_embed_backfill_without_an_embedder_exits_nonzero(cli: Any) -> None:
    seed(cli)
    code, result, err = cli("embed", "backfill", backend="none")
    assert code == 1 and result["status"] == "unavailable"
    assert "Error: backfill unavailable" in err


def test_embed_reindex_moves_to_another_model(cli: Any) -> None:
    seed(cli)
    cli("embed", "backfill", dim=64)
    code, recall, _ = cli("recall", "glass doors", dim=128)
    assert recall["mode"] == "bm25_only"
    code, doctor, _ = cli("doctor", dim=128)
    assert "robotmem embed reindex" in doctor["search_mode_reason"]
    code, result, err = cli("embed", "reindex", "--batch-size", "2", "--no-progress", dim=128)
    assert code == 0 and result["status"] == "complete" and result["vectors"] == 3
    assert err == ""
    code, recall, _ = cli("recall", "glass doors", dim=128)
    assert recall["mode"] == "hybrid"


def test_export_and_import_round_trip_and_import_is_idempotent(cli: Any, tmp_path: Path) -> None:
    ids = seed(cli)
    cli("embed", "backfill")
    out = tmp_path / "memories.jsonl"
    code, exported, err = cli("export", str(out), "--vectors")
    assert code == 0 and exported["memories"] == 3 and exported["vectors"] == 3
    assert "export" in err
    copy = str(tmp_path / "copy.db")
    code, imported, _ = cli("import", str(out), "--db", copy)
    assert code == 0 and imported["memories"]["created"] == 3 and imported["vectors"]["from_file"] == 3
    code, again, _ = cli("import", str(out), "--db", copy)
    assert again["memories"] == {"created": 0, "updated": 0, "skipped": 3}
    code, recall, _ = cli("recall", "glass", "-n", "5", "--db", copy)
    code, original, _ = cli("recall", "glass", "-n", "5")
    assert [m["id"] for m in recall["memories"]] == [m["id"] for m in original["memories"]]
    assert set(ids) >= {m["id"] for m in recall["memories"]}
    code, renewed, _ = cli("import", str(out), "--db", copy, "--conflict", "new-ids")
    assert renewed["memories"]["created"] == 3


def test_export_of_one_collection_and_import_into_another(cli: Any, tmp_path: Path) -> None:
    seed(cli)
    cli("learn", "push the block 3 cm left", "--collection", "lab")
    out = tmp_path / "lab.jsonl"
    code, exported, _ = cli("export", str(out), "--collection", "lab")
    assert exported["memories"] == 1
    code, imported, _ = cli("import", str(out), "--collection", "archive", "--db", str(tmp_path / "x.db"))
    assert imported["memories"]["created"] == 1
    code, found, _ = cli("recall", "push block", "--collection", "archive", "--db", str(tmp_path / "x.db"))
    assert found["total"] == 1 and found["memories"][0]["collection"] == "archive"


def test_import_errors_are_reported_on_stderr(cli: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n", encoding="utf-8")
    code, out, err = cli("import", str(bad))
    assert code == 2 and out == "" and "Error:" in err and "not a robotmem export" in err
    with pytest.raises(SystemExit):
        cli("import", str(bad), "--conflict", "merge")


def test_sync_and_recall_by_robot_from_the_command_line(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = str(tmp_path / "fleet.db")
    for robot, text in (
        ("arm-a", "the cup slipped when the gripper closed too fast"),
        ("arm-b", "the cup held at 12 N"),
    ):
        monkeypatch.setenv("ROBOTMEM_ROBOT_ID", robot)
        db = str(tmp_path / f"{robot}.db")
        assert cli("learn", text, "--db", db)[0] == 0
        code, result, _ = cli("sync", "--fleet", fleet, "--db", db)
        assert code == 0 and result["status"] == "synced" and result["robot_id"] == robot
        assert result["pushed"]["memories"]["created"] == 1
    code, result, _ = cli("sync", "--fleet", fleet, "--direction", "pull", "--db", str(tmp_path / "arm-b.db"))
    assert code == 0 and result["pushed"] is None and result["pulled"]["memories"]["created"] == 0
    monkeypatch.setenv("ROBOTMEM_ROBOT_ID", "arm-a")
    code, result, _ = cli("sync", "--fleet", fleet, "--direction", "pull", "--db", str(tmp_path / "arm-a.db"))
    assert result["pulled"]["memories"]["created"] == 1
    code, found, _ = cli("recall", "cup", "--robots", "arm-b", "--db", str(tmp_path / "arm-a.db"))
    assert code == 0 and [m["robot_id"] for m in found["memories"]] == ["arm-b"]
    code, found, _ = cli("recall", "cup", "--db", str(tmp_path / "arm-a.db"))
    assert {m["robot_id"] for m in found["memories"]} == {"arm-a", "arm-b"}
    code, _, err = cli("sync", "--fleet", str(tmp_path / "arm-a.db"), "--db", str(tmp_path / "arm-a.db"))
    assert code != 0 and err.startswith("Error: fleet:")
