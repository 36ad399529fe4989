"""integrity_report(), repair() and backup(), through Python and the CLI.

The checks and the repair run on both engines; the damage they find is made behind robotmem's back in
each engine's own tables (``raw_sql``). Backups are copies of a SQLite file.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import location_of, raw_sql

from robotmem import RobotMemory
from robotmem.adapters.cli import main
from robotmem.config import Settings
from robotmem.errors import ValidationError


def _open(path: Any, home: Path | None = None) -> RobotMemory:
    return RobotMemory(path, embed_backend="hash", settings=Settings(home=home or Path(path).parent))


@pytest.fixture
def filled(tmp_path: Path, locate: Callable[[str], Any]) -> Iterator[RobotMemory]:
    with _open(locate("memory.db"), tmp_path) as mem:
        session = mem.start_session(context={"robot": {"id": "arm-01"}})
        for i in range(30):
            mem.learn(f"trial {i}: grip_force={i}N on the oak shelf worked", session_id=session["session_id"])
        mem.save_perception("wrist camera frame 1", data={"pixels": [1, 2, 3]})
        mem.forget(3, reason="sensor was miscalibrated")
        mem.end_session(session["session_id"], outcome_score=0.8)
        yield mem


def _memories_table(mem: RobotMemory) -> list[tuple[Any, ...]]:
    """Every memory's id, content, status, context, session and confidence, as stored."""
    records = mem.engine.read(lambda tx: list(tx.transfer.iter_memories(None, with_vectors=False)))
    return [
        tuple(r["memory"][k] for k in ("id", "content", "status", "context", "session_id", "confidence"))
        for r in records
    ]


def _stored(mem: RobotMemory, ids: list[int], field: str) -> dict[int, Any]:
    """``field`` of the memories ``ids`` as stored, read without any check of its value."""
    fetched = mem.engine.read(lambda tx: tx.memories.fetch(ids))
    return {memory_id: getattr(memory, field) for memory_id, memory in fetched.items()}


def test_a_healthy_database_reports_ok(filled: RobotMemory) -> None:
    report = filled.integrity_report()
    assert report["ok"], report
    assert report["integrity_check"] == ["ok"]
    assert not any(report["problems"].values())
    assert report["rows"]["memories"] == 31


def test_repair_restores_every_derived_index(filled: RobotMemory) -> None:
    raw_sql(
        filled,
        sqlite=[
            "DELETE FROM memories_fts WHERE rowid IN (1, 2)",  # lost FTS rows
            "UPDATE memories_fts SET body = 'nonsense' WHERE rowid = 4",  # stale FTS row
            "INSERT INTO memories_fts (rowid, body) VALUES (3, 'forgotten text')",  # orphaned
            # a forgotten memory whose vector is live again
            "UPDATE memory_vectors SET embedding = (SELECT embedding FROM memory_vectors WHERE memory_id = 5) "
            "WHERE memory_id = 3",
            "UPDATE memory_vectors SET embedding = NULL WHERE memory_id = 6",  # marked but no vector
        ],
        postgres=[
            "UPDATE memories SET terms = NULL, term_count = 0 WHERE id IN (1, 2)",  # lost terms
            "UPDATE memories SET terms = 'nonsense'::tsvector, term_count = 1 WHERE id = 4",  # stale terms
            "UPDATE memories SET terms = 'forgotten text'::tsvector, term_count = 2 WHERE id = 3",  # orphaned
            # a forgotten memory whose vector is live again
            "UPDATE memories SET embedding = (SELECT embedding FROM memories WHERE id = 5) WHERE id = 3",
            "UPDATE memories SET embedding = NULL WHERE id = 6",  # marked but no vector
        ],
    )
    both = [
        "INSERT INTO memory_tags (memory_id, tag, source) VALUES (9999, 'ghost', 'auto')",
        "INSERT INTO perception_payloads (memory_id, data) VALUES (9998, '1')",
        "UPDATE memories SET session_id = 'lost-session' WHERE id = 7",
    ]
    raw_sql(filled, sqlite=both, postgres=both)
    table_before = _memories_table(filled)

    report = filled.integrity_report()
    assert not report["ok"]
    problems = report["problems"]
    assert problems["fts_missing"] == 2
    assert problems["fts_orphaned"] == 1
    assert problems["fts_stale"] == 1
    assert problems["vectors_stale"] == 1
    assert problems["vectors_missing_for_marked"] == 1
    assert problems["tags_dangling"] == 1
    assert problems["payloads_dangling"] == 1
    assert problems["sessions_missing"] == 1
    # A process opening the damaged file has lost memory 1 to BM25. (An open RobotMemory keeps the
    # postings it mirrored; damage made behind robotmem's back reaches it at the next repair.)
    with RobotMemory(location_of(filled), embed_backend="none", settings=filled.settings) as fresh:
        assert 1 not in [m["id"] for m in fresh.recall("trial 0 grip_force=0N", n=3)["memories"]]

    result = filled.repair()
    assert result["ok"], result["after"]
    assert result["repaired"]["sessions_recreated"] == 1
    assert result["repaired"]["vectors_tombstoned"] == 1
    assert result["repaired"]["vectors_unmarked"] == 1
    # Memories keep content, status, context, session and confidence.
    assert _memories_table(filled) == table_before
    assert filled.get_memory(6)["has_embedding"] is False  # left for backfill
    assert filled.integrity_report()["ok"]
    hits = filled.recall("trial 0 grip_force=0N", n=3, min_confidence=0.0)["memories"]
    assert hits[0]["id"] == 1
    assert 3 not in [m["id"] for m in filled.recall("trial 2 grip_force=2N", n=50)["memories"]]
    assert filled.get_session("lost-session")["status"] == "ended"


def test_repair_of_a_healthy_database_changes_nothing_visible(filled: RobotMemory) -> None:
    before = _memories_table(filled)
    recall_before = filled.recall("grip force oak shelf", n=10, min_confidence=0.0)["memories"]
    result = filled.repair()
    assert result["ok"]
    assert _memories_table(filled) == before
    recall_after = filled.recall("grip force oak shelf", n=10, min_confidence=0.0)["memories"]
    assert [m["id"] for m in recall_after] == [m["id"] for m in recall_before]


def test_repair_is_seen_by_another_open_instance(filled: RobotMemory, tmp_path: Path) -> None:
    with _open(location_of(filled), tmp_path) as other:
        other.recall("grip force", n=5)  # builds its vector index
        raw_sql(
            filled,
            sqlite=[
                "UPDATE memory_vectors SET embedding = (SELECT embedding FROM memory_vectors WHERE memory_id = 5) "
                "WHERE memory_id = 3"
            ],
            postgres=[
                "UPDATE memories SET embedding = (SELECT embedding FROM memories WHERE id = 5) WHERE id = 3"
            ],
        )
        filled.repair()
        assert other.integrity_report()["ok"]
        assert 3 not in [m["id"] for m in other.recall("trial 2 grip_force=2N", n=50)["memories"]]


@pytest.mark.sqlite_only
def test_backup_is_a_consistent_copy(filled: RobotMemory, tmp_path: Path) -> None:
    target = tmp_path / "copies" / "memory-backup.db"
    target.parent.mkdir()
    result = filled.backup(target)
    assert result["status"] == "backed_up"
    assert result["memories"] == 31
    assert result["integrity_check"] == "ok"
    assert not list(target.parent.glob(".*partial"))
    with _open(target) as copy:
        assert copy.integrity_report()["ok"]
        assert copy.recall("trial 7 grip_force=7N", n=1, min_confidence=0.0)["memories"][0]["id"] == 8
        assert copy.get_memory(31)["data"] == {"pixels": [1, 2, 3]}


@pytest.mark.sqlite_only
def test_backup_refuses_to_overwrite_or_guess(filled: RobotMemory, tmp_path: Path) -> None:
    existing = tmp_path / "exists.db"
    existing.write_text("keep me")
    with pytest.raises(ValidationError, match="already exists"):
        filled.backup(existing)
    assert existing.read_text() == "keep me"
    with pytest.raises(ValidationError, match="does not exist"):
        filled.backup(tmp_path / "no" / "such" / "dir.db")
    with pytest.raises(ValidationError, match="path"):
        filled.backup("")


@pytest.mark.sqlite_only
def test_backup_while_another_process_writes(filled: RobotMemory, tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from robotmem import RobotMemory\n"
        "from robotmem.config import Settings\n"
        "db = Path(sys.argv[1])\n"
        "with RobotMemory(db, embed_backend='hash', settings=Settings(home=db.parent)) as mem:\n"
        "    for i in range(200):\n"
        "        mem.learn(f'concurrent writer note {i}: force={i}N')\n"
    )
    writer = subprocess.Popen([sys.executable, "-c", script, str(filled.path)])
    copies = []
    stop = threading.Event()
    try:
        for n in range(5):
            copies.append(filled.backup(tmp_path / f"copy-{n}.db"))
    finally:
        stop.set()
        assert writer.wait(timeout=300) == 0
    counts = [c["memories"] for c in copies]
    assert counts == sorted(counts) and counts[0] >= 31
    for copy in copies:
        with _open(Path(copy["path"])) as opened:
            assert opened.integrity_report()["ok"]


def test_cli_doctor_repair_and_check(filled: RobotMemory, capsys: Any) -> None:
    raw_sql(
        filled,
        sqlite=["DELETE FROM memories_fts WHERE rowid = 1"],
        postgres=["UPDATE memories SET terms = NULL, term_count = 0 WHERE id = 1"],
    )
    common = ["--db", str(location_of(filled)), "--embed-backend", "hash"]
    assert main(["check", *common]) == 1
    assert json.loads(capsys.readouterr().out)["problems"]["fts_missing"] == 1
    assert main(["doctor", *common]) == 1
    capsys.readouterr()
    assert main(["doctor", "--repair", *common]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] and out["repair"]["ok"] and out["fts"]["in_sync"]
    assert main(["repair", *common]) == 0
    assert json.loads(capsys.readouterr().out)["repaired"]["fts_rows_indexed"] == 30


@pytest.mark.sqlite_only
def test_cli_backup(filled: RobotMemory, tmp_path: Path, capsys: Any) -> None:
    common = ["--db", str(filled.path), "--embed-backend", "hash"]
    target = tmp_path / "cli-backup.db"
    assert main(["backup", str(target), *common]) == 0
    assert json.loads(capsys.readouterr().out)["path"] == str(target)
    assert main(["backup", str(target), *common]) == 2
    assert capsys.readouterr().err.startswith("Error: path:")


def test_an_odd_stored_row_does_not_stop_decay_and_check_reports_it(
    filled: RobotMemory, tmp_path: Path, capsys: Any
) -> None:
    """Rows an older version stored with date-only, naive or unreadable times, or a confidence out of range."""
    times = [
        "UPDATE memories SET created_at = '2020-01-01', last_accessed = NULL WHERE id = 5",
        "UPDATE memories SET last_accessed = '2020-01-01T00:00:00' WHERE id = 6",
        "UPDATE memories SET created_at = 'garbage', updated_at = 'garbage', last_accessed = NULL WHERE id = 7",
        "UPDATE sessions SET created_at = '2020-01-01' WHERE id = (SELECT MIN(id) FROM sessions)",
    ]
    raw_sql(
        filled,
        sqlite=[*times, "UPDATE memories SET confidence = 1e400, base_confidence = 1e400 WHERE id = 8"],
        postgres=[
            *times,
            "UPDATE memories SET confidence = 'Infinity', base_confidence = 'Infinity' WHERE id = 8",
        ],
    )
    episode = filled.start_session()["session_id"]
    ended = filled.end_session(episode)  # failed for ever before, on the first naive time
    assert ended["status"] == "ended" and ended["decayed_count"] >= 1
    rows = _stored(filled, [5, 6, 7], "confidence")
    assert rows[5] < 0.8 and rows[6] < 0.8  # read as UTC: years ago, so decayed
    assert rows[7] == pytest.approx(0.8, abs=0.2)  # unreadable time: left as it was
    report = filled.integrity_report()
    assert not report["ok"]
    assert report["problems"]["times_invalid"] == 3 and report["examples"]["times_invalid"] == [5, 6, 7]
    assert report["problems"]["session_times_invalid"] == 1
    assert report["problems"]["confidence_invalid"] == 1 and report["examples"]["confidence_invalid"] == [8]
    db = str(location_of(filled))
    assert main(["check", "--db", db, "--embed-backend", "hash"]) == 1
    assert json.loads(capsys.readouterr().out)["problems"]["times_invalid"] == 3
    assert main(["doctor", "--repair", "--db", db, "--embed-backend", "hash"]) == 0
    repaired = json.loads(capsys.readouterr().out)["repair"]
    assert repaired["ok"] and repaired["repaired"]["times_normalised"] == 4
    assert repaired["repaired"]["times_replaced"] == 2 and repaired["repaired"]["confidences_clamped"] == 1
    times = _stored(filled, [5, 7], "created_at")
    assert times[5] == "2020-01-01T00:00:00.000000+00:00" and times[7].endswith("+00:00")
    assert filled.integrity_report()["ok"]
    assert filled.end_session(filled.start_session()["session_id"])["status"] == "ended"
