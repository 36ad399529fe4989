"""``store/sqlite/migrations.py``: a file of every older schema version opens at the current one, its
memories, sessions, tags and payloads intact, searchable and checked clean.

Each older file is written the way that version of robotmem wrote it: its migrations only, then rows
inserted as its code inserted them (this is a test about a file written by something else).
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.store.sqlite.schema import MIGRATIONS, SCHEMA_VERSION
from robotmem.text.tokens import index_text

# The columns every version has, compared before and after the upgrade.
_KEPT = (
    "id, collection, type, content, category, confidence, base_confidence, context, session_id, "
    "perception_type, status, superseded_by, merged_ids, created_at, updated_at"
)
_T0 = "2025-06-01T08:00:00.000000+00:00"
_T1 = "2025-06-01T08:30:00.000000+00:00"


def _old_file(path: Path, version: int) -> None:
    """Write a database of schema ``version``: an ended episode of three memories, a perception with its
    payload, and a lesson superseded by another, as robotmem of that version stored them."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        for migration in MIGRATIONS[:version]:
            migration(conn)
        conn.execute(f"PRAGMA user_version = {version}")
        columns = {str(row[1]) for row in conn.execute("PRAGMA table_info(memories)")}
        conn.execute(
            "INSERT INTO sessions (id, collection, context, status, summary, created_at, ended_at) "
            "VALUES ('episode-1', 'kitchen', '{\"robot\": {\"id\": \"arm-01\"}}', 'ended', :summary, :t0, :t1)",
            {"summary": json.dumps({"memory_count": 3}), "t0": _T0, "t1": _T1},
        )
        conn.execute(
            "INSERT INTO session_outcomes (session_id, outcome_score, memory_count, summary, created_at) "
            "VALUES ('episode-1', 0.75, 3, '{}', :t1)",
            {"t1": _T1},
        )
        rows: list[dict[str, Any]] = [
            {"content": "grip_force=12.5N held the wet mug", "category": "observation", "session_id": "episode-1",
             "context": {"params": {"grip_force": {"value": 12.5, "unit": "N"}}, "task": {"success": True}}},
            {"content": "the mug slipped at grip_force=4N", "category": "root_cause", "session_id": "episode-1",
             "context": {"task": {"success": False}}},
            {"content": "camera frame: mug at the table edge", "category": "perception", "type": "perception",
             "perception_type": "visual", "session_id": "episode-1", "context": {"source": "save_perception"}},
            {"content": "lidar misses glass doors", "category": "gotcha", "status": "superseded",
             "superseded_by": 5, "context": {}},
            {"content": "lidar misses glass doors in the hallway", "category": "gotcha", "merged_ids": [4],
             "context": {"spatial": {"door": [2.0, 1.0, 0.0]}}},
        ]  # fmt: skip
        for number, row in enumerate(rows, start=1):
            values: dict[str, Any] = {
                "id": number,
                "collection": "kitchen",
                "type": row.get("type", "fact"),
                "content": row["content"],
                "category": row["category"],
                "confidence": 0.8,
                "base_confidence": 0.8,
                "context": json.dumps(row["context"]),
                "session_id": row.get("session_id"),
                "perception_type": row.get("perception_type"),
                "status": row.get("status", "active"),
                "superseded_by": row.get("superseded_by"),
                "merged_ids": json.dumps(row.get("merged_ids", [])),
                "created_at": _T0,
                "updated_at": _T0,
            }
            if "uid" in columns:
                values["uid"] = f"{number:032x}"
            if "observed_at" in columns:  # schema 6 on: when it happened
                values["observed_at"] = _T0
            if "robot_id" in columns:  # schema 4 on: every write names the file's robot
                values["robot_id"] = conn.execute("SELECT value FROM meta WHERE key = 'robot_id'").fetchone()[
                    0
                ]
            names = ", ".join(values)
            conn.execute(
                f"INSERT INTO memories ({names}) VALUES ({', '.join(':' + n for n in values)})", values
            )
            if values["status"] == "active":
                conn.execute(
                    "INSERT INTO memories_fts (rowid, body) VALUES (:id, :body)",
                    {"id": number, "body": index_text(row["content"])},
                )
            conn.execute(
                "INSERT INTO memory_tags (memory_id, tag) VALUES (:id, :tag)", {"id": number, "tag": "mug"}
            )
        conn.execute(
            "INSERT INTO perception_payloads (memory_id, data, metadata) VALUES (3, '{\"pixels\": [1, 2]}', NULL)"
        )
        conn.execute("COMMIT")
    finally:
        conn.close()


def _table(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return [tuple(row) for row in conn.execute(sql)]
    finally:
        conn.close()


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION))
def test_a_file_of_an_older_version_opens_at_the_current_one_with_everything_intact(
    tmp_path: Path, settings: Settings, version: int
) -> None:
    path = tmp_path / f"v{version}.db"
    _old_file(path, version)
    memories = _table(path, f"SELECT {_KEPT} FROM memories ORDER BY id")
    others = [
        _table(path, sql)
        for sql in (
            "SELECT * FROM sessions ORDER BY id",
            "SELECT * FROM session_outcomes",
            "SELECT * FROM memory_tags ORDER BY memory_id",
            "SELECT * FROM perception_payloads",
        )
    ]
    uids_before = _table(path, "SELECT uid FROM memories ORDER BY id") if version >= 2 else None

    with RobotMemory(path, settings=settings, embed_backend="none") as mem:
        assert mem.integrity_report()["ok"], mem.integrity_report()
        found = mem.recall("grip force mug", collection="kitchen", n=10)["memories"]
        assert {m["id"] for m in found} == {1, 2, 3}
        assert (
            mem.recall("glass doors", collection="kitchen")["memories"][0]["id"] == 5
        )  # not the superseded 4
        assert mem.get_memory(3)["data"] == {"pixels": [1, 2]}
        assert mem.get_session("episode-1")["outcome_score"] == 0.75
        assert mem.session_memories("episode-1")["total"] == 3
        robot = mem.engine.robot_id
        assert {m["robot_id"] for m in found} == {robot}
        # Event time (version 6): what was stored before happened, as far as the file knows, when stored.
        assert {m["observed_at"] for m in found} == {_T0}
        window = mem.recall("", collection="kitchen", n=10, since=_T0, until=_T0)["memories"]
        assert {m["id"] for m in window} == {1, 2, 3, 5}
        assert mem.recall("", collection="kitchen", since=_T1)["memories"] == []
        new = mem.learn("the dishwasher door opens to the left", collection="kitchen")["memory_id"]
        assert new == 6

    assert _table(path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert _table(path, f"SELECT {_KEPT} FROM memories WHERE id <= 5 ORDER BY id") == memories
    assert [
        _table(path, sql)
        for sql in (
            "SELECT * FROM sessions ORDER BY id",
            "SELECT * FROM session_outcomes",
            "SELECT * FROM memory_tags WHERE memory_id <= 5 ORDER BY memory_id",
            "SELECT * FROM perception_payloads",
        )
    ] == others
    assert _table(path, "SELECT COUNT(*) FROM memories WHERE id <= 5 AND observed_at = created_at") == [(5,)]
    uids = [str(row[0]) for row in _table(path, "SELECT uid FROM memories ORDER BY id")]
    assert len(set(uids)) == 6 and all(re.fullmatch("[0-9a-f]{32}", uid) for uid in uids)
    if uids_before is not None:
        assert [(uid,) for uid in uids[:5]] == uids_before  # a uid once given is kept
