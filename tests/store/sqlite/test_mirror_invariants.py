"""The mirror's invariants (``store/sqlite/mirror.py``): every field a recall filters on is logged or volatile."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import robotmem.store
from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.query.filters import RECORD_FIELDS, VOLATILE_FIELDS
from robotmem.store.sqlite import mirror
from robotmem.store.sqlite import schema as migrations
from robotmem.store.sqlite.connection import open_database


def _tracked() -> set[str]:
    return {column.strip() for column in migrations._TRACKED.split(",")}


def _columns(tmp_path: Path, settings: Settings) -> set[str]:
    with RobotMemory(tmp_path / "m.db", settings=settings, embed_backend="none"):
        pass
    conn = sqlite3.connect(tmp_path / "m.db")
    try:
        return {str(row[1]) for row in conn.execute("PRAGMA table_info(memories)")}
    finally:
        conn.close()


def test_every_filterable_record_field_is_tracked_volatile_or_fixed() -> None:
    tracked = _tracked()
    for field, column in RECORD_FIELDS.items():
        name = column.removeprefix("m.")
        covered = name in tracked or field in VOLATILE_FIELDS or field in ("id", "tags")
        assert covered, f"filter field {field!r} ({column}) changes without a logged write"


def test_every_column_the_mirror_reads_is_tracked() -> None:
    read = set(re.findall(r"\b([a-z_]+)\b", mirror._ROWS.split("FROM")[0].removeprefix("SELECT")))
    read -= {"id", "status", "active", "json_extract", "julianday", "env", "sim_or_real", "real"}
    assert read, mirror._ROWS
    assert read | {"status", "context"} <= _tracked()


def test_only_bookkeeping_columns_are_left_out_of_the_change_log(tmp_path: Path, settings: Settings) -> None:
    untracked = _columns(tmp_path, settings) - _tracked()
    # id never changes; the access columns change on every recall (and are volatile or unfilterable);
    # base_confidence moves with confidence; embedding_model follows the vector rows, which carry a seq.
    assert untracked == {"id", "access_count", "last_accessed", "base_confidence", "embedding_model"}


def _arrays(recall_mirror: mirror.RecallMirror) -> dict[str, np.ndarray[Any, Any]]:
    """The mirror's arrays by memory id (every numpy array it holds directly)."""
    return {name: value for name, value in vars(recall_mirror).items() if isinstance(value, np.ndarray)}


def test_every_mirrored_column_grows_with_the_ids_and_is_reset_when_its_row_goes(
    tmp_path: Path, settings: Settings
) -> None:
    path = tmp_path / "m.db"
    with RobotMemory(path, settings=settings, embed_backend="none") as mem:
        mem.learn("grip_force=4N held the mug", collection="kitchen")
        session = mem.start_session()["session_id"]
        gone = mem.learn(
            "the tray slid off the wet table", context={"env": {"sim_or_real": "real"}}, session_id=session
        )["memory_id"]
    conn = open_database(path)
    recall_mirror = mirror.RecallMirror()
    try:
        recall_mirror.sync(conn)
        selected = len(conn.execute(f"{mirror._ROWS} LIMIT 0").description)
        assert len(_arrays(recall_mirror)) == selected - 1, "one array per value _ROWS selects after id"
        blank = {name: values[-1] for name, values in _arrays(recall_mirror).items()}  # an id with no memory
        assert all(values[gone] != blank[name] for name, values in _arrays(recall_mirror).items())

        # Growing: a memory whose id lies beyond the arrays.
        beyond = recall_mirror.capacity + 10
        with sqlite3.connect(path) as raw:
            raw.execute("UPDATE sqlite_sequence SET seq = :seq WHERE name = 'memories'", {"seq": beyond - 1})
        with RobotMemory(path, settings=settings, embed_backend="none") as mem:
            later = mem.start_session()["session_id"]
            real = {"env": {"sim_or_real": "real"}}
            assert (
                mem.learn("lidar misses glass doors", context=real, session_id=later)["memory_id"] == beyond
            )
        recall_mirror.sync(conn)
        assert recall_mirror.capacity > beyond
        assert {len(values) for values in _arrays(recall_mirror).values()} == {recall_mirror.capacity}
        assert all(values[beyond] != blank[name] for name, values in _arrays(recall_mirror).items())

        # Session members follow a memory another program moves to another session.
        every = np.ones(recall_mirror.capacity, dtype=np.bool_)
        assert recall_mirror.session_members([gone], every) == [[gone]]
        with sqlite3.connect(path) as raw:
            raw.execute("UPDATE memories SET session_id = :s WHERE id = :id", {"s": later, "id": gone})
        recall_mirror.sync(conn)
        assert recall_mirror.session_members([gone], every) == [[gone, beyond]]
        assert recall_mirror.session_members([beyond], every) == [[gone, beyond]]

        # Resetting: a memory whose row another program deleted keeps none of its values.
        with sqlite3.connect(path) as raw:
            raw.execute("DELETE FROM memories WHERE id = :id", {"id": gone})
        recall_mirror.sync(conn)
        assert {name: values[gone] for name, values in _arrays(recall_mirror).items()} == blank
        assert recall_mirror.session_members([beyond], every) == [[beyond]]
        assert recall_mirror.session_members([gone], every) == []
    finally:
        recall_mirror.close()
        conn.close()


# A statement that writes rows of memories_fts, in any case and with any quoting of the name.
_FTS_WRITE = re.compile(
    r"\b(?:insert(?:\s+or\s+\w+)?\s+into|replace\s+into|delete\s+from|update(?:\s+or\s+\w+)?"
    r"|drop\s+table(?:\s+if\s+exists)?)\s+[\"'`\[]?memories_fts\b",
    re.IGNORECASE,
)


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO memories_fts (rowid, body) VALUES (1, 'x')",
        "insert or replace into memories_fts(rowid, body) values (?, ?)",
        "REPLACE INTO memories_fts VALUES (1, 'x')",
        'delete from "memories_fts" where rowid = 1',
        "Update memories_fts SET body = ''",
        "DROP TABLE IF EXISTS memories_fts",
    ],
)
def test_the_fts_write_check_recognises_a_write(statement: str) -> None:
    assert _FTS_WRITE.search(statement)
    assert not _FTS_WRITE.search("SELECT rowid, body FROM memories_fts WHERE memories_fts MATCH :q")


def test_fts_rows_are_written_only_through_the_fts_module() -> None:
    store_dir = Path(robotmem.store.__file__).parent
    allowed = store_dir / "sqlite" / "text_index.py"
    offenders = [
        str(path.relative_to(store_dir))
        for path in sorted(store_dir.rglob("*.py"))
        if path != allowed and _FTS_WRITE.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
    assert _FTS_WRITE.search(allowed.read_text(encoding="utf-8"))  # the check reads the real writes


def test_the_object_names_grow_with_the_ids_and_follow_another_program_s_writes(
    tmp_path: Path, settings: Settings
) -> None:
    """The mirror's object ids and labels (``objects_of``, ``objects_named``), read on first use, are kept in
    step like its columns: a new id beyond the arrays, a row another program deleted or rewrote."""
    path = tmp_path / "m.db"
    with RobotMemory(path, settings=settings, embed_backend="none") as mem:
        mug = {"object": {"id": "mug-3", "label": "red mug"}}
        kept = mem.learn("red mug on the shelf", context=mug)["memory_id"]
        gone = mem.learn("cone by the gate", context={"object": {"label": "cone"}})["memory_id"]
    conn = open_database(path)
    recall_mirror = mirror.RecallMirror()
    try:
        recall_mirror.sync(conn)
        assert recall_mirror.objects_of(conn, [kept, gone]) == {
            kept: ("mug-3", "red mug"),
            gone: (None, "cone"),
        }
        beyond = recall_mirror.capacity + 10
        with sqlite3.connect(path) as raw:
            raw.execute("UPDATE sqlite_sequence SET seq = :seq WHERE name = 'memories'", {"seq": beyond - 1})
        with RobotMemory(path, settings=settings, embed_backend="none") as mem:
            pallet = {"object": {"label": "pallet"}}
            assert mem.learn("a pallet in bay four", context=pallet)["memory_id"] == beyond
        with sqlite3.connect(path) as raw:
            raw.execute("DELETE FROM memories WHERE id = :id", {"id": gone})
            raw.execute(
                "UPDATE memories SET context = :context WHERE id = :id",
                {"context": '{"object": {"id": "mug-4", "label": ""}}', "id": kept},
            )
        recall_mirror.sync(conn)
        asked = [kept, gone, beyond, beyond + 1]
        assert recall_mirror.objects_of(conn, asked) == {kept: ("mug-4", None), beyond: (None, "pallet")}
        assert recall_mirror.objects_named(conn, asked) == {("mug-4", None), (None, "pallet")}
    finally:
        recall_mirror.close()
        conn.close()
