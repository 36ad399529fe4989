"""The context-value index on SQLite: triggers keep it equal to ``naming.context_values`` of every context."""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.strategies import json_objects

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.store.sqlite import regions
from robotmem.store.sqlite import schema as migrations
from robotmem.text.naming import context_values

KEYS = st.sampled_from(
    ["robot", "id", "env", "sim_or_real", "source", "params", "spatial", "a.b", 'q"k', "物体"]
)
TEXTS = st.one_of(
    st.sampled_from(["UR5e-01", " Gravel Slope ", "real", "x", "碎石坡", "Ärm", "  ", "a" * 64, "a" * 65]),
    st.text(max_size=70),
)
LEAVES = st.one_of(
    TEXTS,
    st.booleans(),
    st.integers(),
    st.floats(
        allow_nan=False, allow_infinity=False
    ),  # the store writes finite JSON only, st.none(), st.lists(TEXTS, max_size=2)
)
CONTEXTS = st.recursive(
    LEAVES,
    lambda inner: st.dictionaries(st.one_of(KEYS, st.text(max_size=5)), inner, max_size=4),
    max_leaves=12,
).filter(lambda c: isinstance(c, dict))


def _stored(conn: sqlite3.Connection, memory_id: int) -> set[str]:
    return {r[0] for r in conn.execute("SELECT value FROM context_values WHERE memory_id = ?", (memory_id,))}


def _raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(context=st.one_of(CONTEXTS, json_objects))
def test_the_triggers_index_what_context_values_names(tmp_path: Path, context: dict[str, Any]) -> None:
    path = tmp_path / f"{uuid.uuid4().hex}.db"  # one file per example (no WAL of an earlier one)
    with RobotMemory(path, embed_backend="none", settings=Settings(home=tmp_path)) as mem:
        first = int(
            mem.learn("first lesson about grasping", context={"robot": {"id": "go1-01"}})["memory_id"]
        )
    conn = _raw(path)
    try:
        encoded = json.dumps(context, ensure_ascii=False)
        conn.execute("UPDATE memories SET context = ? WHERE id = ?", (encoded, first))  # an update
        assert _stored(conn, first) == set(context_values(context)), encoded
        conn.execute(  # an insert by another writer
            "INSERT INTO memories (collection, type, content, category, confidence, base_confidence, context, "
            "created_at, updated_at) SELECT collection, type, 'copy', category, confidence, confidence, ?, "
            "created_at, updated_at FROM memories WHERE id = ?",
            (encoded, first),
        )
        copy = int(conn.execute("SELECT MAX(id) FROM memories").fetchone()[0])
        assert _stored(conn, copy) == set(context_values(context))
        conn.execute("DELETE FROM memories WHERE id = ?", (copy,))
        assert _stored(conn, copy) == set()
    finally:
        conn.close()


def test_a_context_that_is_not_an_object_or_not_json_has_no_values(tmp_path: Path) -> None:
    path = tmp_path / "odd.db"
    with RobotMemory(path, embed_backend="none", settings=Settings(home=tmp_path)) as mem:
        memory_id = int(mem.learn("a lesson about docking", context={"place": "dock 3"})["memory_id"])
    conn = _raw(path)
    try:
        assert _stored(conn, memory_id) == {"dock 3"}
        for odd in ('["dock 3"]', '"dock 3"', "not json {", ""):
            conn.execute("UPDATE memories SET context = ? WHERE id = ?", (odd, memory_id))
            assert _stored(conn, memory_id) == set(), odd
    finally:
        conn.close()


def test_learn_update_and_import_keep_the_index(tmp_path: Path) -> None:
    with RobotMemory(tmp_path / "a.db", embed_backend="none", settings=Settings(home=tmp_path)) as mem:
        learned = mem.learn(
            "the gripper slipped on the wet mug", context={"object": "Ceramic Mug", "place": "sink"}
        )
        memory_id = int(learned["memory_id"])
        mem.update(memory_id, "the gripper slipped on the wet glass", context={"object": "glass jar"})
        export = tmp_path / "export.jsonl"
        mem.export_memories(export)
    conn = _raw(tmp_path / "a.db")
    try:
        assert _stored(conn, memory_id) == {"glass jar"}
    finally:
        conn.close()
    with RobotMemory(tmp_path / "b.db", embed_backend="none", settings=Settings(home=tmp_path)) as other:
        other.import_memories(export)
        found = other.recall("glass jar", n=1, min_relevance=0)["memories"]  # the index, not relevance
    conn = _raw(tmp_path / "b.db")
    try:
        assert _stored(conn, int(found[0]["id"])) == {"glass jar"}
    finally:
        conn.close()


def test_a_version_4_file_gains_the_index_of_its_stored_contexts(tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    with RobotMemory(path, embed_backend="none", settings=Settings(home=tmp_path)) as mem:
        for i in range(3):
            mem.learn(
                f"run {i}: docking took {10 + i} s",
                context={"robot": {"id": f"tug-0{i}"}, "date": "2026-03-02"},
            )
    conn = _raw(path)
    for trigger in ("context_values_insert", "context_values_update", "context_values_delete"):
        conn.execute(f"DROP TRIGGER {trigger}")
    conn.execute("DROP TABLE context_values")
    conn.execute("DROP TABLE memory_episode_vectors")
    for statement in migrations.OBJECT_IDS_DROP:  # the later index of object ids
        conn.execute(statement)
    for statement in regions.DROP:  # the later spatial index, which a version-4 file lacks
        conn.execute(statement)
    conn.execute("DROP TRIGGER memories_logged_update")
    conn.execute("DROP INDEX idx_mem_observed")
    conn.execute("DROP INDEX idx_mem_observed_in")
    conn.execute("ALTER TABLE memories DROP COLUMN observed_at")
    conn.execute(
        f"CREATE TRIGGER memories_logged_update AFTER UPDATE OF {migrations._TRACKED_V4} ON memories "
        f"BEGIN {migrations._LOG_CHANGE.format('NEW.id')}; END"
    )
    conn.execute("PRAGMA user_version = 4")
    conn.close()
    with RobotMemory(path, embed_backend="none", settings=Settings(home=tmp_path)) as mem:
        assert mem.integrity_report()["ok"]
        hits = mem.recall("what happened with tug-01 on 2026-03-02", n=1)["memories"]
        assert hits[0]["content"].startswith("run 1")
    conn = _raw(path)
    try:
        assert int(conn.execute("PRAGMA user_version").fetchone()[0]) == migrations.SCHEMA_VERSION
        rows = conn.execute(
            "SELECT memory_id, value FROM context_values ORDER BY memory_id, value"
        ).fetchall()
        assert rows == [
            (1, "2026-03-02"),
            (1, "tug-00"),
            (2, "2026-03-02"),
            (2, "tug-01"),
            (3, "2026-03-02"),
            (3, "tug-02"),
        ]
    finally:
        conn.close()
