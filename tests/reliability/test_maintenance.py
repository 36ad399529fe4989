"""integrity_report(), repair() and backup(), through Python and the CLI.

The checks and the repair run on both engines; the damage they find is made behind robotmem's back in
each engine's own tables (``raw_sql``). Backups are copies of a SQLite file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import location_of, query_rows, raw_sql

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


def _raw(mem: RobotMemory) -> sqlite3.Connection:
    """A connection to the SQLite file behind robotmem's back, foreign keys off."""
    conn = sqlite3.connect(mem.path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = OFF")
    return conn


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
    both = [
        "INSERT INTO memory_tags (memory_id, tag, source) VALUES (9999, 'ghost', 'auto')",
        "INSERT INTO perception_payloads (memory_id, data) VALUES (9998, '1')",
        "UPDATE memories SET session_id = 'lost-session' WHERE id = 7",
    ]
    values = [  # a lost context value of memory 8, and a stale one
        "DELETE FROM context_values WHERE memory_id = 8",
        "INSERT INTO context_values VALUES ('default', 'ghost shelf', 10)",
    ]
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
            "DELETE FROM memory_terms WHERE memory_id IN (1, 2)",  # lost terms
            "UPDATE memory_terms SET terms = 'nonsense'::tsvector, term_list = ARRAY['nonsense'], term_count = 1 "
            "WHERE memory_id = 4",  # stale terms
            "INSERT INTO memory_terms (memory_id, collection, term_count, term_list, terms) "
            "VALUES (3, 'default', 2, ARRAY['forgotten', 'text'], 'forgotten text'::tsvector)",  # orphaned
            # a forgotten memory whose vector is live again
            "UPDATE memories SET embedding = (SELECT embedding FROM memories WHERE id = 5) WHERE id = 3",
            "UPDATE memories SET embedding = NULL WHERE id = 6",  # marked but no vector
        ],
    )
    raw_sql(
        filled,
        sqlite=[
            *both,
            "INSERT INTO memory_episode_vectors (memory_id, seq, model_id, embedding) "
            "SELECT 3, 1, model_id, embedding FROM memory_vectors WHERE memory_id = 5",
            "UPDATE memories SET context = json_set(context, '$.place', 'oak shelf') WHERE id = 8",
            *values,
        ],
        postgres=[
            *both,
            "INSERT INTO memory_episode_vectors (memory_id, model_id, embedding) "
            "SELECT 3, embedding_model, embedding FROM memories WHERE id = 5",
            "UPDATE memories SET context = jsonb_set(context, '{place}', '\"oak shelf\"'), "
            "context_text = jsonb_set(context, '{place}', '\"oak shelf\"')::text WHERE id = 8",
            *values,
        ],
    )
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
    assert problems["context_values_stale"] == 2
    assert problems["episode_vectors_stale"] == 1
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
    # Memory 8's "oak shelf", and the session's robot id that each of the 31 memories written in the
    # session carries in its context (the session's context is stored under the memory's own).
    assert result["repaired"]["context_values_indexed"] == 32
    stored_values = query_rows(
        filled,
        sqlite="SELECT value, memory_id FROM context_values",
        postgres="SELECT value, memory_id FROM context_values",
    )
    assert [row for row in stored_values if row[0] != "arm-01"] == [("oak shelf", 8)]
    assert sorted(m for value, m in stored_values if value == "arm-01") == list(range(1, 32))


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


@pytest.mark.slow
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
        postgres=["DELETE FROM memory_terms WHERE memory_id = 1"],
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


@pytest.mark.sqlite_only  # a PostgreSQL column holds only values of its type
def test_values_of_a_wrong_kind_are_reported_refused_by_export_and_repaired(
    filled: RobotMemory, tmp_path: Path
) -> None:
    """Another program wrote BLOBs, text that is not JSON, a context that is not an object, ..."""
    db = ["--db", str(filled.path), "--embed-backend", "hash"]
    out = tmp_path / "out.jsonl"
    cli = [sys.executable, "-m", "robotmem"]
    conn = _raw(filled)
    conn.execute("UPDATE memories SET created_at = x'00ff' WHERE id = 10")
    exported = subprocess.run([*cli, "export", str(out), *db], capture_output=True, text=True, timeout=120)
    assert exported.returncode != 0 and "Traceback" not in exported.stderr, exported.stderr
    assert "\nError: memory 10: column created_at holds a BLOB of 2 bytes where text" in exported.stderr
    assert not out.exists()
    for sql in (
        "UPDATE memories SET context = x'7b7d' WHERE id = 11",
        "UPDATE memories SET context = '[1]' WHERE id = 12",
        "UPDATE memories SET context = 'grip was fine' WHERE id = 13",
        "UPDATE memories SET scope_files = '[1, \"a.py\"]' WHERE id = 14",
        "UPDATE memories SET merged_ids = '[\"x\"]' WHERE id = 15",
        "UPDATE memories SET access_count = 'many' WHERE id = 16",
        "UPDATE memories SET content = CAST(content AS BLOB) WHERE id = 17",
        "UPDATE memory_tags SET source = x'6175746f' WHERE rowid = (SELECT MIN(rowid) FROM memory_tags WHERE memory_id = 18)",
        "UPDATE perception_payloads SET data = '{bad'",
        "UPDATE sessions SET context = 'oops'",
        "UPDATE session_outcomes SET summary = x'7b7d'",
        # Superseded with no successor, by itself, by a memory that is gone: hidden, nothing in their place.
        "UPDATE memories SET status = 'superseded', superseded_by = NULL WHERE id = 20",
        "UPDATE memories SET status = 'superseded', superseded_by = 21 WHERE id = 21",
        "UPDATE memories SET status = 'superseded', superseded_by = 99999 WHERE id = 22",
    ):
        conn.execute(sql)
    conn.close()
    exported = subprocess.run([*cli, "export", str(out), *db], capture_output=True, text=True, timeout=120)
    assert exported.returncode != 0 and "Traceback" not in exported.stderr, exported.stderr
    assert "column context holds text that is not JSON where a JSON object belongs" in exported.stderr
    with pytest.raises(ValidationError, match=r"^session .*: column context holds text that is not JSON"):
        filled.export_memories(out, collection="default")
    report = filled.integrity_report()
    assert report["examples"]["times_invalid"] == [10]  # its own check, as before
    assert report["examples"]["columns_invalid"] == [11, 12, 13, 14, 15, 16, 17, 18, 31]
    assert report["problems"]["session_columns_invalid"] == 1
    assert report["examples"]["superseded_without_successor"] == [20, 21, 22]
    checked = subprocess.run([*cli, "check", *db], capture_output=True, text=True, timeout=120)
    assert checked.returncode == 1 and json.loads(checked.stdout)["problems"]["columns_invalid"] == 9

    repaired = filled.repair()
    assert repaired["ok"], repaired["after"]
    assert (
        repaired["repaired"]["columns_rewritten"] == 11 and repaired["repaired"]["superseded_restored"] == 3
    )
    contexts = {m: filled.get_memory(m)["context"] for m in (11, 12, 13)}
    assert contexts == {11: {}, 12: {"value": [1]}, 13: {"unreadable": "grip was fine"}}
    assert filled.get_memory(14)["scope_files"] == ["a.py"]
    assert filled.get_memory(17)["content"] == "trial 16: grip_force=16N on the oak shelf worked"
    found = {m["id"] for m in filled.recall("grip_force oak shelf", n=40)["memories"]}
    assert {17, 20, 21, 22} <= found  # restored lessons are recalled again
    filled.export_memories(out)
    with _open(tmp_path / "copy.db") as copy:
        assert copy.import_memories(out)["memories"]["created"] == 31
        assert copy.integrity_report()["ok"]


def test_a_superseded_memory_without_its_successor_is_not_exported_until_repaired(
    filled: RobotMemory, tmp_path: Path
) -> None:
    superseded = ["UPDATE memories SET status = 'superseded', superseded_by = 99999 WHERE id = 20"]
    raw_sql(filled, sqlite=superseded, postgres=superseded)
    assert filled.integrity_report()["examples"]["superseded_without_successor"] == [20]
    with pytest.raises(
        ValidationError, match=r"^memory 20: superseded, but its successor \(99999\) is missing"
    ):
        filled.export_memories(tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()
    assert filled.repair()["repaired"]["superseded_restored"] == 1
    assert filled.get_memory(20)["status"] == "active"
    filled.export_memories(tmp_path / "out.jsonl")
    with _open(tmp_path / "copy.db") as copy:
        assert copy.import_memories(tmp_path / "out.jsonl")["memories"]["created"] == 31


@pytest.mark.sqlite_only  # a PostgreSQL column holds only values of its type
def test_reads_tolerate_a_value_of_the_wrong_kind_and_name_text_that_is_not_json(
    filled: RobotMemory, tmp_path: Path
) -> None:
    """A recall or a detail view never fails with a traceback on a row another program wrote."""
    conn = _raw(filled)
    for sql in (
        "UPDATE memories SET created_at = x'00ff' WHERE id = 10",
        "UPDATE memories SET content = CAST(content AS BLOB) WHERE id = 11",
        "UPDATE memories SET confidence = 'high', access_count = 'many' WHERE id = 12",
        "UPDATE memories SET context = '[1]', merged_ids = '[\"x\"]' WHERE id = 13",
        "UPDATE memory_tags SET tag = x'6f616b' WHERE rowid = (SELECT MIN(rowid) FROM memory_tags WHERE memory_id = 14)",
    ):
        conn.execute(sql)
    conn.close()
    cli = [sys.executable, "-m", "robotmem"]
    db = ["--db", str(filled.path), "--embed-backend", "hash"]
    for mirror in ("true", "false"):
        env = {**os.environ, "ROBOTMEM_RECALL_MIRROR": mirror, "ROBOTMEM_HOME": str(tmp_path)}
        found = subprocess.run(
            [*cli, "recall", "grip_force oak shelf", "-n", "40", *db], capture_output=True, text=True, env=env
        )
        assert found.returncode == 0, found.stderr
        by_id = {m["id"]: m for m in json.loads(found.stdout)["memories"]}
        assert {10, 11, 12, 13} <= set(by_id), mirror
        assert by_id[11]["content"] == "trial 10: grip_force=10N on the oak shelf worked"
        assert by_id[13]["context"] == {"value": [1]}
    assert filled.get_memory(14)["tags"][0] == "oak"
    conn = _raw(filled)
    conn.execute("UPDATE memories SET context = 'grip was fine' WHERE id = 15")
    conn.close()
    failed = subprocess.run([*cli, "recall", "grip", *db], capture_output=True, text=True)
    assert failed.returncode == 2 and "Traceback" not in failed.stderr
    assert failed.stderr.startswith("Error: ") and "`robotmem check` lists such rows" in failed.stderr
    assert filled.repair()["ok"]
    assert filled.get_memory(15)["context"] == {"unreadable": "grip was fine"}
    assert 15 in {m["id"] for m in filled.recall("grip_force oak shelf", n=40)["memories"]}
